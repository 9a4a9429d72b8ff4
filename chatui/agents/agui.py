"""chatui as the front end of an AG-UI agent (`CHATUI_AGENT=agui`,
docs/runtimes.md#be-the-front-end-of-an-ag-ui-agent).

A message from the composer starts a run: chatui POSTs the run's `RunAgentInput`
(`agui_input`) to `CHATUI_AGUI_URL` with `Accept: text/event-stream` and the headers of
`CHATUI_AGUI_HEADERS` (a JSON object: an API key, say), and ingests each event of the
reply as it arrives — raw, as the agent sent it: the AG-UI dialect
(chatui.ingest.dialects.agui) translates it, and the log keeps it as received. Any
AG-UI server works: Pydantic AI's `AGUIAdapter`, LangGraph's `ag-ui-langgraph`, CrewAI,
Google ADK, …

How a run ends:
- the agent's `RUN_FINISHED` / `RUN_ERROR` end it, through the dialect;
- Stop cancels the run's task, which closes the stream (the agent sees its client go)
  and ends the run as every Stop does (W5);
- an answer that is not 2xx, not an event stream, a stream that breaks, an event the
  dialect refuses, or a stream that ends before its run did: the run fails, with the
  reason (the agent named by its origin only, its words as a short masked excerpt,
  as for every remote endpoint — chatui.agents.base).

Tool approval (docs/events.md#approvals): a run that finishes with an `interrupt`
outcome whose interrupts have reason `tool_call` leaves those calls awaiting approval
(the dialect's part). Once every interrupt of that run is decided — approved, denied or
expired — chatui starts a new run whose `resume` entries carry the decisions
(`resume_after_decisions`, on ingest's approval signal, in whichever process recorded
the last decision; in cluster mode the run is queued for a run worker like any other).
Only runs chatui itself started are resumed: a runtime that pushes its own AG-UI stream
asks the approvals API instead.

The protobuf media type (`application/vnd.ag-ui.event+proto`) is not asked for: the
Python `ag-ui-protocol` package has no decoder for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from typing import Any

import httpx
from django.conf import settings
from django.dispatch import receiver
from httpx_sse import EventSource, SSEError

from chatui.ingest.service import approval_events_committed, ingest
from chatui.ingest.values import EventError
from chatui.ingest.writer_threads import on_writer
from chatui.models import Conversation, ConversationStatus, Event, Run

from .agui_input import build_input, interrupts_of, resume_entries
from .base import (
    AgentError,
    RunContext,
    RunInProgress,
    endpoint_origin,
    read_prefix,
    remote_excerpt,
    setting,
    url_secrets,
)
from .runner import launch
from .runs import RunSpec, db, run_status

logger = logging.getLogger(__name__)

EVENT_STREAM = "text/event-stream"
#: AG-UI's binary encoding, which the Python package cannot decode (so never asked for).
PROTOBUF = "application/vnd.ag-ui.event+proto"
#: Seconds to connect; a stream may then be silent for this long (a tool working) before
#: the run fails as timed out. Stop ends a wait at once.
CONNECT_SECONDS = 10.0
SILENT_SECONDS = 600.0
ENDS = ("RUN_FINISHED", "RUN_ERROR")
#: Events ingested in one transaction at most (when the agent is ahead of chatui).
BATCH_EVENTS = 200
_STREAM_END = object()


def configured_headers(raw: Any = None) -> dict[str, str]:
    """`CHATUI_AGUI_HEADERS`: a dict (in Django settings) or its JSON text (in the
    environment), of string names to string values."""
    raw = setting("CHATUI_AGUI_HEADERS", {}) if raw is None else raw
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except ValueError:
            raise AgentError(
                "CHATUI_AGUI_HEADERS is not JSON; give an object of headers."
            ) from None
    if not isinstance(raw, dict) or not all(
        isinstance(name, str) and isinstance(value, str) for name, value in raw.items()
    ):
        raise AgentError("CHATUI_AGUI_HEADERS must be a JSON object of header names to strings.")
    return dict(raw)


class AGUIAgent:
    name = "agui"
    #: One RunAgentInput per run: a second message waits for the next run.
    accepts_interjections = False
    delay = 0.0

    def __init__(
        self,
        *,
        url: str | None = None,
        headers: dict[str, str] | str | None = None,
        resume_of: str | None = None,
    ):
        self.url = url or setting("CHATUI_AGUI_URL", "")
        self.raw_headers = headers
        #: The interrupted run this one continues (docs/events.md#approvals), if any.
        self.resume_of = resume_of

    @property
    def origin(self) -> str:
        return endpoint_origin(self.url)

    async def run(self, ctx: RunContext) -> None:
        if not self.url:
            raise AgentError("No AG-UI agent is configured: set CHATUI_AGUI_URL.")
        headers = configured_headers(self.raw_headers)
        secrets = [*headers.values(), *url_secrets(self.url)]
        body = await db(_input)(ctx.conversation_id, ctx.run_id, ctx.user_text, self.resume_of)
        ended = await self.stream(ctx, body, headers, secrets)
        status = await run_status(ctx.conversation_id, ctx.run_id)
        if status in ConversationStatus.ended():
            ctx.mark_ended(status)  # the agent's own end, through the dialect
            return
        if ended is None:
            raise AgentError(
                f"The AG-UI agent at {self.origin} closed its stream before the run finished."
            )
        if ended.get("type") == "RUN_ERROR":  # ended under a runId of its own choosing
            raise AgentError(remote_excerpt(str(ended.get("message") or "the agent failed")))

    async def stream(
        self, ctx: RunContext, body: dict[str, Any], headers: dict[str, str], secrets: list[str]
    ) -> dict[str, Any] | None:
        """POST the input and ingest the reply's events as they come; the event that
        ended the run (`RUN_FINISHED` / `RUN_ERROR`), or None if none did."""
        request_headers = {**headers, "Accept": EVENT_STREAM, "Cache-Control": "no-store"}
        timeout = httpx.Timeout(SILENT_SECONDS, connect=CONNECT_SECONDS)
        try:
            async with (
                httpx.AsyncClient(timeout=timeout) as client,
                client.stream("POST", self.url, json=body, headers=request_headers) as response,
            ):
                await self._check(response, secrets)
                return await self._relay(ctx, response, secrets)
        except httpx.InvalidURL:
            raise AgentError(
                "CHATUI_AGUI_URL is not a valid http(s) URL; check the setting."
            ) from None
        except httpx.TimeoutException:
            raise AgentError(
                f"The AG-UI agent at {self.origin} did not answer in time (timed out)."
            ) from None
        except (httpx.TransportError, SSEError) as error:
            what = "could not be reached" if _before_reply(error) else "broke its stream"
            detail = remote_excerpt(f"{type(error).__name__}: {error}", secrets=secrets)
            raise AgentError(f"The AG-UI agent at {self.origin} {what}: {detail}") from None

    async def _relay(
        self, ctx: RunContext, response: httpx.Response, secrets: list[str]
    ) -> dict[str, Any] | None:
        """Read the stream in one task, ingest in this one: each ingest takes every event
        that arrived meanwhile (at most BATCH_EVENTS), so chatui never falls behind an
        agent that streams faster than one transaction an event — a chatty one (LangGraph's
        RAW events), or a busy machine — and an event that arrives alone is ingested at
        once. What the reader met (the stream's end, a broken stream, an event that is
        not JSON) is acted on after the events before it are in."""
        queue: asyncio.Queue[Any] = asyncio.Queue()

        async def read() -> None:
            try:
                async for sse in EventSource(response).aiter_sse():
                    if sse.data:  # else a keep-alive comment or an empty event
                        queue.put_nowait(self._decode(sse.data, secrets))
            except Exception as problem:  # handed over, raised after what came before it
                queue.put_nowait(problem)
            else:
                queue.put_nowait(_STREAM_END)

        reader = asyncio.ensure_future(read())
        ended: dict[str, Any] | None = None
        try:
            while True:
                batch = [await queue.get()]
                while not queue.empty() and len(batch) < BATCH_EVENTS:
                    batch.append(queue.get_nowait())
                events = [item for item in batch if isinstance(item, dict)]
                if events:
                    await self._ingest(ctx, events)
                    ended = next((e for e in reversed(events) if e.get("type") in ENDS), ended)
                last = batch[-1]
                if last is _STREAM_END:
                    return ended
                if isinstance(last, BaseException):
                    raise last
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    async def _check(self, response: httpx.Response, secrets: list[str]) -> None:
        if not response.is_success:
            detail = remote_excerpt(await read_prefix(response), secrets=secrets)
            raise AgentError(
                f"The AG-UI agent at {self.origin} refused the run: HTTP {response.status_code}"
                + (f" — {detail}" if detail else "")
            )
        media_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if media_type == PROTOBUF:
            raise AgentError(
                f"The AG-UI agent at {self.origin} answered in AG-UI's protobuf encoding, "
                "which chatui cannot read; it asked for text/event-stream."
            )
        if media_type != EVENT_STREAM:
            raise AgentError(
                f"The AG-UI agent at {self.origin} answered {media_type or 'no content type'}, "
                "not an event stream (text/event-stream)."
            )

    def _decode(self, data: str, secrets: list[str]) -> dict[str, Any]:
        try:
            event = json.loads(data)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            excerpt = remote_excerpt(data, secrets=secrets, limit=80)
            raise AgentError(
                f"The AG-UI agent at {self.origin} sent an event that is not a JSON object: "
                f"{excerpt}"
            )
        return event

    async def _ingest(self, ctx: RunContext, events: list[dict[str, Any]]) -> None:
        """Events as received, through the one writer (the dialect translates them). A
        batch is applied whole or not at all: when one is refused, its events go in one
        by one, so those before the bad one stay and the failure names that one."""
        try:
            await _write(ctx.conversation, events)
            return
        except EventError as refused:
            if len(events) == 1:
                kind = str(events[0].get("type", "?"))[:40]
                raise AgentError(
                    f"The AG-UI agent at {self.origin} sent a {kind} event chatui refused: "
                    f"{refused}"
                ) from None
        for event in events:
            await self._ingest(ctx, [event])


async def _write(conversation: Conversation, events: list[dict[str, Any]]) -> None:
    """`ingest` on a writer thread (chatui.ingest.writer_threads), the hot write path the
    events POST takes: its frames go to the viewers from this loop without the writer
    waiting on them. A batch handed over is committed even when the run is stopped
    meanwhile, before the runner writes the run's end: nothing of the run follows it."""
    call = asyncio.ensure_future(on_writer(ingest, conversation, events))
    try:
        await asyncio.shield(call)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await call
        raise


def _before_reply(error: Exception) -> bool:
    return isinstance(error, httpx.ConnectError)


def _input(conversation_id: Any, run_id: str, user_text: str, resume_of: str | None) -> dict:
    conversation = Conversation.objects.get(pk=conversation_id)
    return build_input(conversation, run_id, user_text, resume_of=resume_of)


# -- resuming after a person decides (docs/events.md#approvals) ------------------------


def resume_run_id(run_id: str) -> str:
    """The run that resumes `run_id`: one id whoever notices the last decision, so two
    processes noticing it at once start it once."""
    return "run_" + hashlib.sha256(f"{run_id}:resume".encode()).hexdigest()[:16]


@receiver(approval_events_committed, dispatch_uid="chatui.agents.agui.resume")
def resume_after_decisions(
    sender: Any, conversation_id: Any = None, rows: Any = (), **kwargs: Any
) -> None:
    """When the last interrupt of a run chatui started is decided, start the run that
    resumes it. Called on commit of every approval request or decision, in the
    process that recorded it; quick to say no (another agent, or no decision)."""
    if (getattr(settings, "CHATUI_AGENT", "") or "") != AGUIAgent.name:
        return
    runs = {row.run_id for row in rows if row.type == "tool.approval" and row.run_id}
    for run_id in sorted(runs):
        try:
            resume(conversation_id, run_id)
        except RunInProgress as busy:
            logger.warning("run %s not resumed: run %s is going", run_id, busy.run_id)
        except Exception:
            logger.exception("could not resume run %s", run_id)


def resume(conversation_id: Any, run_id: str) -> str | None:
    """Start the run resuming `run_id` if all its interrupts are decided and it has not
    been started yet; its id, or None."""
    conversation = Conversation.objects.filter(pk=conversation_id).first()
    if conversation is None or not started_by_chatui(conversation, run_id):
        return None
    if interrupts_of(conversation, run_id) is None or resume_entries(conversation, run_id) is None:
        return None  # not an AG-UI interrupt, or someone has still to decide
    new_id = resume_run_id(run_id)
    if Run.objects.filter(conversation=conversation, run_id=new_id).exists():
        return None
    # A run worker builds the same agent from its registry name and these options.
    agent = AGUIAgent(resume_of=run_id)
    spec = RunSpec(agent, "", new_id, agent_options={"resume_of": run_id})
    return launch(conversation, [spec])


def started_by_chatui(conversation: Conversation, run_id: str) -> bool:
    """Did chatui's own runner start this run (its opening `agent.status running`,
    `{run_id}.e1`), rather than a runtime pushing its stream?"""
    return Event.objects.filter(conversation=conversation, event_id=f"{run_id}.e1").exists()
