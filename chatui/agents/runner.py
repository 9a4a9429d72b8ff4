"""Runs: one asyncio task per agent run, on the ASGI process's event loop.

`start_run` is called from sync code: the composer's view (after it has ingested
the user's message), `/showcase` and `setup_demo`. A sync view under daphne runs in
a thread of the server's loop, and the run's task goes on that loop; without such a
loop (a management command, the WSGI test client) it goes on the runner's own
long-lived loop thread. Called from async code, it creates the task on the running
loop. `stop_run` and `wait_for_run` work from any loop. The task

1. ingests `agent.status running` with the run id,
2. awaits `agent.run(ctx)` — the agent reports everything through `ctx`, whose
   only way out is `chatui.ingest.service.ingest`, run in a worker thread,
3. ingests `completed` when the agent returns (unless the run already ended),
   or `failed` with a readable `error_message` when it raised or crashed, or
   `cancelled` when a person stopped it (`stop_run`, W5: not a failure).

The task runs in a fresh `contextvars.Context`, so it does not inherit the
request's thread-sensitive context (which ends with the request); all of a run's
database work goes through one worker thread, in order. Events a cancelled run
had already handed to that thread are committed before its end status, and
nothing follows it.

State is per process: `is_running` knows the runs of this process only. A run
left `running` in the database by a dead process can still be stopped: `stop_run`
then ingests the run's end itself (`cancelled` for a person's Stop).

Where runs execute: in this process by default (`make run`). With
`CHATUI_RUN_WORKERS=1` a web process only enqueues them (`chatui.agents.dispatch`)
and run workers (`chatui.agents.worker`, `manage.py run_worker`) drive them with
this same code; the public functions below pick the side themselves.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from chatui.db.internals import caller_loop
from chatui.models import Conversation, ConversationStatus, Run

from . import dispatch
from .base import Agent, AgentError, RunContext, RunInProgress
from .registry import AGENTS, get_agent, register_agent
from .runs import (
    STOPPED_BY_USER,
    RunSpec,
    db,
    ending_events,
    fail_run,
    ingest_async,
    new_run_id,
    run_status,
)

logger = logging.getLogger(__name__)

STOP_TIMEOUT_SECONDS = 30

#: Set by a run worker (`chatui.agents.worker`): this process drives runs even
#: when `CHATUI_RUN_WORKERS` is on.
HOLDS_RUNS = False


def runs_elsewhere() -> bool:
    """Do run workers drive this process's runs (it only enqueues them)?"""
    return bool(getattr(settings, "CHATUI_RUN_WORKERS", False)) and not HOLDS_RUNS


@dataclass
class _Handle:
    conversation_id: str
    agent: Agent
    run_id: str
    task: asyncio.Task | None = None
    ctx: RunContext | None = None
    stop_reason: str | None = None
    #: The run's task has received the cancellation (see stop_run).
    cancel_seen: bool = False
    early_interjections: list[str] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return self.task is None or self.task.done()

    def interject(self, text: str) -> None:
        if self.ctx is not None:
            self.ctx.interject(text)
        else:
            self.early_interjections.append(text)


_RUNS: dict[str, _Handle] = {}
# Strong references: the loop keeps only weak ones to tasks.
_TASKS: set[asyncio.Task] = set()


def _key(conversation_id: Any) -> str:
    return str(conversation_id)


def start_run(
    conversation: Conversation,
    user_text: str,
    *,
    run_id: str | None = None,
    agent: Agent | None = None,
) -> str:
    """Start a run of `agent` (default: `get_agent()`) answering `user_text`.

    The task goes on the running loop (async callers), on the server's loop
    that called a sync view, else on the runner's own loop thread. Returns the run
    id. If a run is going in this conversation and its agent accepts
    interjections, the text is handed to that run and its id returned;
    otherwise it raises `RunInProgress`.
    """
    spec = RunSpec(agent or get_agent(), user_text, run_id or new_run_id())
    return launch(conversation, [spec])


def launch(conversation: Conversation, specs: list[RunSpec]) -> str:
    """Drive `specs` one after the other: here, or through the run queue."""
    if runs_elsewhere():
        return dispatch.enqueue(conversation, specs)
    return _launch(conversation, specs)


_background: asyncio.AbstractEventLoop | None = None
_background_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    """A long-lived loop in a daemon thread, for runs started from sync code."""
    global _background
    with _background_lock:
        if _background is None or _background.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="chatui-agents", daemon=True).start()
            _background = loop
        return _background


def _caller_main_loop() -> asyncio.AbstractEventLoop | None:
    """The running loop whose `sync_to_async` called this thread, as asgiref's
    `async_to_sync` finds it; None outside such a thread."""
    return caller_loop()


async def _launch_here(conversation: Conversation, specs: list[RunSpec]) -> str:
    return _launch(conversation, specs)


async def _on_loop_of(task: asyncio.Task, coroutine_function, *args: Any) -> Any:
    """Run `coroutine_function(*args)` on the loop that owns `task`."""
    loop = task.get_loop()
    if loop is asyncio.get_running_loop():
        return await coroutine_function(*args)
    future = asyncio.run_coroutine_threadsafe(coroutine_function(*args), loop)
    return await asyncio.wrap_future(future)


def _launch(conversation: Conversation, specs: list[RunSpec]) -> str:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        # Called from sync code. A sync view under daphne runs in a thread of the
        # server's loop: the run goes there, where the in-memory channel layer's
        # consumers live (`frames` broadcasts on the loop that runs the ingest).
        # Otherwise (a command, the WSGI test client) the runner's own loop.
        target = _caller_main_loop() or _background_loop()
        future = asyncio.run_coroutine_threadsafe(_launch_here(conversation, specs), target)
        return future.result(timeout=30)
    key = _key(conversation.pk)
    current = _RUNS.get(key)
    if current is not None and not current.done:
        simple = len(specs) == 1 and not specs[0].post_user_message
        if simple and current.agent.accepts_interjections and current.stop_reason is None:
            current.interject(specs[0].user_text)
            return current.run_id
        raise RunInProgress(current.run_id)
    handle = _Handle(key, specs[0].agent, specs[0].run_id)
    # A fresh context: the task must not inherit the request's contextvars.
    task = loop.create_task(
        _drive_all(conversation, handle, specs),
        name=f"chatui-run-{specs[0].run_id}",
        context=contextvars.Context(),
    )
    handle.task = task
    _RUNS[key] = handle
    _TASKS.add(task)
    task.add_done_callback(functools.partial(_forget, handle))
    return specs[0].run_id


def _forget(handle: _Handle, task: asyncio.Task) -> None:
    _TASKS.discard(task)
    if _RUNS.get(handle.conversation_id) is handle:
        del _RUNS[handle.conversation_id]
    if not task.cancelled() and task.exception() is not None:
        logger.error("run task %s ended with an error", handle.run_id, exc_info=task.exception())


async def _drive_all(conversation: Conversation, handle: _Handle, specs: list[RunSpec]) -> None:
    """Drive the runs in order; stop at the first that does not complete (unless it
    fails on purpose and nobody stopped it). Messages sent during a run that the
    agent never took (they came too late) are answered by a follow-up run,
    `{run_id}-f{n}`, once the run has completed."""
    queue = list(specs)
    follow_ups = 0
    while queue:
        spec = queue.pop(0)
        handle.agent, handle.run_id = spec.agent, spec.run_id
        completed = await _drive(conversation, handle, spec)
        leftover = handle.ctx.take_interjections() if handle.ctx else []
        if not completed and spec.fails_on_purpose and handle.stop_reason is None:
            continue
        if not completed:
            if leftover:
                logger.info("run %s ended; dropping %s late messages", spec.run_id, len(leftover))
            return
        if leftover and not queue:
            follow_ups += 1
            base = specs[0].run_id
            queue.append(RunSpec(spec.agent, "\n\n".join(leftover), f"{base}-f{follow_ups}"))


async def _drive(conversation: Conversation, handle: _Handle, spec: RunSpec) -> bool:
    """One run, start to end. True when it completed."""
    ctx = RunContext(
        conversation,
        spec.run_id,
        spec.user_text,
        sink=functools.partial(ingest_async, conversation),
        delay=float(getattr(spec.agent, "delay", 0.0) or 0.0),
    )
    handle.ctx = ctx
    for text in handle.early_interjections:
        ctx.interject(text)
    handle.early_interjections.clear()
    name = getattr(spec.agent, "name", type(spec.agent).__name__)
    try:
        if spec.post_user_message:
            await ctx.user_message(spec.user_text)
        await ctx.running()
        await spec.agent.run(ctx)
        if not ctx.ended:
            await ctx.complete()
        return ctx.end_status == "completed"
    except asyncio.CancelledError:
        handle.cancel_seen = True
        await _end(ctx, handle.stop_reason or "the run was cancelled (server stopping?)")
        if handle.stop_reason is None:
            raise  # not ours: let the loop's shutdown proceed
        return False
    except AgentError as problem:
        logger.info("run %s of agent %s failed: %s", spec.run_id, name, problem)
        await _end(ctx, str(problem) or "the agent failed")
        return False
    except Exception as problem:
        logger.exception("agent %s crashed in run %s", name, spec.run_id)
        await _end(ctx, f"The agent crashed: {type(problem).__name__}: {problem}")
        return False


async def _end(ctx: RunContext, message: str) -> None:
    """Ingest `failed` with `message` — or `cancelled`, when it is a person's Stop
    (W5) — unless the run has already ended (its end event may have been in flight
    when the run was cancelled, or a remote runtime ended it). What the run left open
    is closed first (`runs.ending_events`)."""
    if ctx.ended:
        return
    try:
        status = await run_status(ctx.conversation_id, ctx.run_id)
        if status in ConversationStatus.ended():
            ctx.mark_ended(status)
            return
        ending = await ending_events(ctx.conversation_id, ctx.run_id, message)
        await ctx.emit(*ending)
        ctx.mark_ended(ending[-1]["status"])
    except Exception:
        logger.exception("could not record the end of run %s", ctx.run_id)


async def stop_run(conversation_id: Any, reason: str = STOPPED_BY_USER) -> str | None:
    """Stop the conversation's run: cancel its task and ingest its end — `agent.status
    cancelled` for a person's Stop (the default `reason`, W5), else `failed` with
    `reason` as error_message. Returns the stopped run's id, or None when nothing was
    running. A run that is `running` in the database with no task in this process (a
    webhook runtime's, or one orphaned by a restart) is ended the same way."""
    if runs_elsewhere():
        return await dispatch.stop(conversation_id, reason)
    handle = _RUNS.get(_key(conversation_id))
    if handle is not None and not handle.done:
        return await _on_loop_of(handle.task, _stop_task, handle, reason)
    return await db(_fail_orphaned_run)(conversation_id, reason)


async def _stop_task(handle: _Handle, reason: str) -> str:
    """Cancel the run's task (on its own loop) and wait until it has ended."""
    if handle.stop_reason is None:
        handle.stop_reason = reason
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STOP_TIMEOUT_SECONDS
    while not handle.done and loop.time() < deadline:
        # Cancel again until the run has seen it: a library may swallow one.
        if not handle.cancel_seen:
            handle.task.cancel()
        # asyncio.wait never cancels the task, even if this caller is cancelled.
        await asyncio.wait({handle.task}, timeout=0.5)
    return handle.run_id


def _fail_orphaned_run(conversation_id: Any, reason: str) -> str | None:
    run = Run.objects.filter(conversation_id=conversation_id).last()
    if run is None or run.status != ConversationStatus.RUNNING:
        return None
    return fail_run(run, reason)


def is_running(conversation_id: Any) -> bool:
    """Is a run going in the conversation (driven by this process, or by a run
    worker when this process only enqueues)?"""
    return current_run_id(conversation_id) is not None


def current_run_id(conversation_id: Any) -> str | None:
    if runs_elsewhere():
        return dispatch.current_run_id(conversation_id)
    handle = _RUNS.get(_key(conversation_id))
    return handle.run_id if handle is not None and not handle.done else None


def held_runs() -> list[tuple[str, str, bool]]:
    """(conversation id, run id, accepts interjections) of the runs this process drives."""
    return [
        (handle.conversation_id, handle.run_id, bool(handle.agent.accepts_interjections))
        for handle in list(_RUNS.values())
        if not handle.done
    ]


def interject(conversation_id: Any, text: str) -> str | None:
    """Hand `text` to the conversation's run here, if it takes it; its run id."""
    handle = _RUNS.get(_key(conversation_id))
    if handle is None or handle.done or handle.stop_reason is not None:
        return None
    if not handle.agent.accepts_interjections:
        return None
    handle.interject(text)
    return handle.run_id


def accepts_input(conversation_id: Any) -> bool:
    """May the composer send now? Yes when idle, or when the running agent
    accepts interjections. The view checks this before ingesting the message."""
    if runs_elsewhere():
        return dispatch.accepts_input(conversation_id)
    handle = _RUNS.get(_key(conversation_id))
    if handle is None or handle.done:
        return True
    return bool(handle.agent.accepts_interjections) and handle.stop_reason is None


async def wait_for_run(conversation_id: Any, timeout: float | None = None) -> bool:
    """Wait until the conversation's current run task ends. True if it did."""
    if runs_elsewhere():
        return await dispatch.wait_for_run(conversation_id, timeout)
    handle = _RUNS.get(_key(conversation_id))
    if handle is None or handle.task is None:
        return True
    return await _on_loop_of(handle.task, _wait_task, handle.task, timeout)


async def _wait_task(task: asyncio.Task, timeout: float | None) -> bool:
    done, _ = await asyncio.wait({task}, timeout=timeout)
    return bool(done)


__all__ = [
    "AGENTS",
    "STOPPED_BY_USER",
    "AgentError",
    "RunInProgress",
    "RunSpec",
    "accepts_input",
    "current_run_id",
    "get_agent",
    "is_running",
    "launch",
    "register_agent",
    "start_run",
    "stop_run",
    "wait_for_run",
]
