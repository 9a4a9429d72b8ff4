"""A run worker (`manage.py run_worker`): drives the runs web processes enqueue.

It reads run specs from the `chatui.runs` channel (each message reaches one
worker) and commands — Stop, interjections — from a channel of its own, whose
name it writes into the runs it holds (`Run.worker`). The runs themselves go
through `chatui.agents.runner`, exactly as in the embedded default.

Every `CHATUI_RUN_HEARTBEAT_SECONDS` it

- touches the heartbeat of the runs it holds (and claims the ones it started
  since: a showcase's second run, follow-up runs);
- cancels those the database says have ended (stopped by a web process that
  got no answer in time, or reaped): nothing of theirs is written afterwards;
- sweeps: fails every run whose heartbeat is older than `CHATUI_RUN_LOST_SECONDS`
  ("worker lost", or "no run worker took the run"), through `ingest`; and records
  `expired` for tool approvals past their deadline (chatui.ingest.approvals).

So a worker killed mid-run leaves its runs failed within LOST + HEARTBEAT seconds
of its death, as long as any worker (or the web process a viewer asks) remains.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Q
from django.utils import timezone

from chatui.db.layer_health import HEALTH, layer_errors
from chatui.ingest import approvals
from chatui.models import Conversation, ConversationStatus, Run

from . import runner
from .dispatch import RUN_QUEUE, reap_lost_runs
from .runner import RunInProgress
from .runs import RunSpec, db

logger = logging.getLogger(__name__)

RECEIVE_RETRY_SECONDS = 0.5


class RunWorker:
    def __init__(self, queue: str = RUN_QUEUE):
        self.queue = queue
        self.layer = get_channel_layer()
        if self.layer is None or type(self.layer).__name__.startswith("InMemory"):
            raise ImproperlyConfigured(
                "a run worker needs a channel layer shared with the web processes: set REDIS_URL"
            )
        self.channel = ""

    async def serve(self) -> None:
        runner.HOLDS_RUNS = True
        self.channel = await self.layer.new_channel("chatui.worker.")
        logger.warning("run worker listening on %s (commands: %s)", self.queue, self.channel)
        await db(reap_lost_runs)()
        await asyncio.gather(
            self._listen(self.queue), self._listen(self.channel), self._keep_alive()
        )

    async def _listen(self, channel: str) -> None:
        while True:
            try:
                message = await self.layer.receive(channel)
            except layer_errors() as problem:
                # Redis away (one log line per outage: chatui.db.layer_health) or a read
                # timing out on a busy machine: the runs the worker drives go on; listen again.
                HEALTH.lost(problem)
                await asyncio.sleep(RECEIVE_RETRY_SECONDS)
                continue
            except Exception as problem:
                logger.warning(
                    "run worker: receiving on %s failed (%r); retrying", channel, problem
                )
                await asyncio.sleep(RECEIVE_RETRY_SECONDS)
                continue
            try:
                await self.handle(message)
            except Exception:
                logger.exception("run worker could not handle %r", message.get("type"))

    async def handle(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "run.start":
            await self.start(message)
        elif kind == "run.stop":
            await runner.stop_run(message["conversation_id"], message["reason"])
        elif kind == "run.interject":
            if runner.interject(message["conversation_id"], message["text"]) is None:
                logger.info("run %s has ended; an interjection came late", message["run_id"])
        else:
            logger.warning("run worker got an unknown message type %r", kind)

    async def start(self, message: dict[str, Any]) -> None:
        specs = [RunSpec.from_message(run) for run in message["runs"]]
        first = specs[0]
        conversation = await db(_claim)(
            message["conversation_id"], first.run_id, self.channel, first.agent
        )
        if conversation is None:
            logger.warning("run %s ended before a worker took it; dropped", first.run_id)
            return
        try:
            runner.launch(conversation, specs)
        except RunInProgress as busy:  # a run of ours already goes on in it
            logger.warning("run %s not started: %s", first.run_id, busy)

    async def _keep_alive(self) -> None:
        while True:
            await asyncio.sleep(settings.CHATUI_RUN_HEARTBEAT_SECONDS)
            try:
                ended = await db(_beat)(runner.held_runs(), self.channel)
                for conversation_id, run_id in ended:
                    logger.warning("run %s ended elsewhere; cancelling it here", run_id)
                    await runner.stop_run(conversation_id, "the run was ended elsewhere")
                await db(reap_lost_runs)()
                # docs/events.md#approvals: approvals past their deadline in conversations nobody
                # reads.
                await db(approvals.expire_all_overdue)()
            except Exception:
                logger.exception("run worker heartbeat failed")


def _claim(conversation_id: str, run_id: str, channel: str, agent: Any) -> Conversation | None:
    """Take the queued run, unless it has ended (reaped) or another worker has it."""
    taken = Run.objects.filter(
        conversation_id=conversation_id,
        run_id=run_id,
        status=ConversationStatus.RUNNING,
        worker="",
    ).update(
        worker=channel,
        heartbeat_at=timezone.now(),
        accepts_interjections=bool(agent.accepts_interjections),
    )
    return Conversation.objects.get(pk=conversation_id) if taken else None


def _beat(held: list[tuple[str, str, bool]], channel: str) -> list[tuple[str, str]]:
    """Touch (and claim) the runs held here; those that ended in the database."""
    if not held:
        return []
    for accepts in (True, False):
        runs = Q()
        for conversation_id, run_id, takes in held:
            if takes is accepts:
                runs |= Q(conversation_id=conversation_id, run_id=run_id)
        if runs:
            Run.objects.filter(runs, status=ConversationStatus.RUNNING).update(
                worker=channel, heartbeat_at=timezone.now(), accepts_interjections=accepts
            )
    statuses = {
        (str(conversation_id), run_id): status
        for conversation_id, run_id, status in Run.objects.filter(
            Q(*[Q(conversation_id=c, run_id=r) for c, r, _ in held], _connector=Q.OR)
        ).values_list("conversation_id", "run_id", "status")
    }
    return [
        (conversation_id, run_id)
        for conversation_id, run_id, _ in held
        if statuses.get((conversation_id, run_id), ConversationStatus.RUNNING)
        != ConversationStatus.RUNNING
    ]
