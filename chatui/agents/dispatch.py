"""The web side of run workers (`CHATUI_RUN_WORKERS=1`): enqueue, stop, observe.

A web process drives no run. To start one it

1. ingests the run's opening events — exactly those the run's own context will
   emit first (`agent.status running`, after the user message for scripted
   runs), with the same event ids, so the worker's copies are duplicates. The
   run is thereby in the database, durable, before anything is queued;
2. sets the run's heartbeat to now: from here on the reaper watches it;
3. sends the run's spec to the `chatui.runs` channel, where one worker takes it.

The channel layer is at-most-once: a message may be lost, or wait in Redis with
no worker listening. Then the run's heartbeat never moves, and the reaper ends it
failed ("no run worker took the run") once it is older than
`CHATUI_RUN_LOST_SECONDS`. A worker that takes it later finds it ended and drops it.

Stop and interjections go to the channel of the worker holding the run
(`Run.worker`). If Stop gets no answer in `CHATUI_RUN_STOP_WAIT_SECONDS` (the
worker died, or the message was lost), this process fails the run itself; a
live worker then sees its run ended at its next heartbeat and cancels it.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.utils import timezone

from chatui.ingest.service import ingest
from chatui.models import Conversation, ConversationStatus, Run

from .base import RunContext, RunInProgress
from .runs import RunSpec, db, fail_run

logger = logging.getLogger(__name__)

#: The channel every run worker reads run specs from.
RUN_QUEUE = "chatui.runs"
WORKER_LOST = "worker lost"
NOT_TAKEN = "no run worker took the run"
QUEUE_UNAVAILABLE = "the run queue is unavailable"
POLL_SECONDS = 0.1


# -- the run of a conversation, as the database knows it -------------------------------


def lost_before() -> Any:
    """Runs whose heartbeat is older than this are lost."""
    return timezone.now() - timedelta(seconds=settings.CHATUI_RUN_LOST_SECONDS)


def is_lost(run: Run) -> bool:
    return run.heartbeat_at is not None and run.heartbeat_at < lost_before()


def reap(run: Run) -> str | None:
    """Fail a watched run nobody drives any more; its id, or None if it had ended."""
    reason = WORKER_LOST if run.worker else NOT_TAKEN
    logger.warning("run %s: %s (last heartbeat %s)", run.run_id, reason, run.heartbeat_at)
    return fail_run(run, reason, tag="lost")


def reap_lost_runs() -> int:
    """The sweep every worker makes: fail every watched run past the bound."""
    lost = Run.objects.filter(
        status=ConversationStatus.RUNNING, heartbeat_at__lt=lost_before()
    ).select_related("conversation")
    return sum(1 for run in lost if reap(run))


def live_run(conversation_id: Any) -> Run | None:
    """The conversation's running run, after reaping it if it is lost."""
    run = Run.objects.filter(conversation_id=conversation_id).last()
    if run is None or run.status != ConversationStatus.RUNNING:
        return None
    if is_lost(run):
        reap(run)
        return None
    return run


def current_run_id(conversation_id: Any) -> str | None:
    run = live_run(conversation_id)
    return run.run_id if run else None


def accepts_input(conversation_id: Any) -> bool:
    """Idle, or held by a worker whose agent takes interjections. (A run still
    queued takes none: no worker could be told.)"""
    run = live_run(conversation_id)
    return run is None or bool(run.worker and run.accepts_interjections)


# -- start -----------------------------------------------------------------------------


def opening_events(conversation: Conversation, spec: RunSpec) -> list[dict[str, Any]]:
    """The events the run's context emits first, as it will emit them."""
    events: list[dict[str, Any]] = []

    async def collect(batch: list[dict[str, Any]]) -> None:
        events.extend(batch)

    async def open_run(ctx: RunContext) -> None:
        if spec.post_user_message:
            await ctx.user_message(spec.user_text)
        await ctx.running()

    opening = open_run(RunContext(conversation, spec.run_id, spec.user_text, sink=collect))
    try:
        opening.send(None)  # `collect` never waits, so this runs it to its end
    except StopIteration:
        return events
    opening.close()
    raise RuntimeError("opening a run must not wait")


def enqueue(conversation: Conversation, specs: list[RunSpec]) -> str:
    """Announce the first run and queue all of them for a worker; its run id.
    A message for a running agent that takes interjections goes to its worker."""
    current = live_run(conversation.pk)
    if current is not None:
        simple = len(specs) == 1 and not specs[0].post_user_message
        if simple and current.worker and current.accepts_interjections:
            _send(current.worker, _interjection(conversation, current, specs[0].user_text))
            return current.run_id
        raise RunInProgress(current.run_id)
    first = specs[0]
    message = {
        "type": "run.start",
        "conversation_id": str(conversation.pk),
        "runs": [spec.to_message() for spec in specs],
    }
    ingest(conversation, opening_events(conversation, first))
    run = Run.objects.get(conversation=conversation, run_id=first.run_id)
    Run.objects.filter(pk=run.pk).update(
        heartbeat_at=timezone.now(), accepts_interjections=first.agent.accepts_interjections
    )
    try:
        _send(RUN_QUEUE, message)
    except Exception:
        logger.exception("could not queue run %s", first.run_id)
        fail_run(run, QUEUE_UNAVAILABLE, tag="lost")
    return first.run_id


def _interjection(conversation: Conversation, run: Run, text: str) -> dict[str, Any]:
    return {
        "type": "run.interject",
        "conversation_id": str(conversation.pk),
        "run_id": run.run_id,
        "text": text,
    }


def _send(channel: str, message: dict[str, Any]) -> None:
    async_to_sync(get_channel_layer().send)(channel, message)


# -- stop and wait -----------------------------------------------------------------------


async def stop(conversation_id: Any, reason: str) -> str | None:
    """Ask the worker holding the run to stop it; fail it here if it does not."""
    run = await db(live_run)(conversation_id)
    if run is None:
        return None
    if run.worker:
        message = {
            "type": "run.stop",
            "conversation_id": str(conversation_id),
            "run_id": run.run_id,
            "reason": reason,
        }
        try:
            await get_channel_layer().send(run.worker, message)
        except Exception:
            logger.exception("could not send Stop to worker %s", run.worker)
        else:
            if await _ended(run, settings.CHATUI_RUN_STOP_WAIT_SECONDS):
                return run.run_id
    await db(fail_run)(run, reason)
    return run.run_id


async def _ended(run: Run, timeout: float | None) -> bool:
    status = db(_status)
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    while await status(run.pk) == ConversationStatus.RUNNING:
        if deadline is not None and loop.time() >= deadline:
            return False
        await asyncio.sleep(POLL_SECONDS)
    return True


def _status(pk: int) -> str | None:
    """The run's status, reaping it first if its worker is lost (waiting must end)."""
    run = Run.objects.filter(pk=pk).select_related("conversation").first()
    if run is None:
        return None
    if run.status == ConversationStatus.RUNNING and is_lost(run):
        reap(run)
        return ConversationStatus.FAILED
    return run.status


async def wait_for_run(conversation_id: Any, timeout: float | None = None) -> bool:
    """Wait until the conversation's run has ended in the database. True if it did."""
    run = await db(live_run)(conversation_id)
    return run is None or await _ended(run, timeout)
