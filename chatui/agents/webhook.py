"""An external agent runtime reached by webhook (`CHATUI_AGENT=webhook`,
docs/events.md#webhook-agents).

chatui POSTs `{conversation_id, run_id, message, events_url}` as JSON to
`CHATUI_WEBHOOK_URL` with `Authorization: Bearer <CHATUI_WEBHOOK_TOKEN>` (one token
per deployment, which the runtime checks) and `Idempotency-Key: <run_id>` (a
retried delivery carries the same body and key, so the runtime can drop repeats).
The runtime answers 2xx at once, does its work, and posts the run's events to
`events_url` with an API token of its own (a service account with the
`chatui.ingest_any` permission), ending with `agent.status` `completed` or `failed`
for `run_id`.

Delivery is retried with exponential backoff on connection errors, timeouts,
HTTP 5xx and 429 (`CHATUI_WEBHOOK_ATTEMPTS`, default 5, waits of
`CHATUI_WEBHOOK_BACKOFF` × 2ⁿ seconds, default 0.5, capped at 8); any other 4xx,
or running out of attempts, fails the run with a message saying so. That message
lands in the event log and exports: it names the runtime by its origin only
(never the URL's credentials, path or query) and quotes at most a short,
one-line excerpt of its answer, with the token masked.

The run stays `running` — and `is_running` stays true, so the composer stays
disabled — until the runtime posts its end: the agent's task waits for the run's
status to become `completed`/`failed`, woken by `events_ingested` (and polling
the database every few seconds, for events ingested by another process). If the
runtime never ends the run, it fails after `CHATUI_WEBHOOK_RUN_TIMEOUT` seconds
(default 900). Stop works as for every run.

Tool approval (docs/events.md#approvals): a runtime that posts `agent.tool.approval_requested` for
its run gets each decision back as a callback POST to the same URL (see
`forward_decisions`), or long polls `GET …/approvals/{tool_call_id}?wait=30`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any
from urllib.parse import urljoin

import httpx
from django.db import OperationalError
from django.urls import reverse

from chatui.ingest.service import events_ingested
from chatui.models import ConversationStatus, Event

from .base import (
    AgentError,
    RunContext,
    endpoint_origin,
    read_prefix,
    remote_excerpt,
    setting,
    url_secrets,
)
from .runs import db, run_status

logger = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 8.0
#: How often a webhook run looks for approval decisions to forward (docs/events.md#approvals).
DECISION_POLL_SECONDS = 0.5
ENDED = ConversationStatus.ended()


def events_url(conversation_id: Any, public_url: str | None = None) -> str:
    """The absolute URL of a conversation's events endpoint (`CHATUI_PUBLIC_URL`)."""
    base = public_url or setting("CHATUI_PUBLIC_URL", "http://127.0.0.1:8000")
    path = reverse("api:conversation-events", args=[conversation_id])
    return urljoin(base.rstrip("/") + "/", path.lstrip("/"))


class WebhookAgent:
    name = "webhook"
    #: The contract has one message per run: no way to hand a runtime a second one.
    accepts_interjections = False
    delay = 0.0

    def __init__(
        self,
        *,
        url: str | None = None,
        token: str | None = None,
        public_url: str | None = None,
        attempts: int | None = None,
        backoff: float | None = None,
        timeout: float | None = None,
        run_timeout: float | None = None,
        poll_interval: float = 2.0,
    ):
        self.url = url or setting("CHATUI_WEBHOOK_URL", "")
        self.token = setting("CHATUI_WEBHOOK_TOKEN", "") if token is None else token
        self.public_url = public_url or setting("CHATUI_PUBLIC_URL", "http://127.0.0.1:8000")
        self.attempts = max(1, attempts or setting("CHATUI_WEBHOOK_ATTEMPTS", 5, int))
        self.backoff = setting("CHATUI_WEBHOOK_BACKOFF", 0.5, float) if backoff is None else backoff
        self.timeout = timeout or setting("CHATUI_WEBHOOK_TIMEOUT", 10.0, float)
        self.run_timeout = run_timeout or setting("CHATUI_WEBHOOK_RUN_TIMEOUT", 900.0, float)
        self.poll_interval = poll_interval

    def payload(self, ctx: RunContext) -> dict[str, Any]:
        return {
            "conversation_id": str(ctx.conversation_id),
            "run_id": ctx.run_id,
            "message": ctx.user_text,
            "events_url": events_url(ctx.conversation_id, self.public_url),
        }

    async def run(self, ctx: RunContext) -> None:
        if not self.url:
            raise AgentError("No agent runtime is configured: set CHATUI_WEBHOOK_URL.")
        await self.deliver(self.payload(ctx), ctx.run_id)
        forwarding = asyncio.ensure_future(self.forward_decisions(ctx))
        try:
            status = await wait_for_run_end(
                ctx.conversation_id, ctx.run_id, timeout=self.run_timeout, poll=self.poll_interval
            )
        finally:
            forwarding.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await forwarding
        if status is None:
            raise AgentError(
                f"The agent runtime accepted the run but did not finish it within "
                f"{self.run_timeout:g} s."
            )
        ctx.mark_ended(status)

    async def forward_decisions(self, ctx: RunContext) -> None:
        """docs/events.md#approvals: each decision on a tool this run asked about is POSTed to the
        runtime as a callback `{"type": "tool.approval", conversation_id, run_id,
        tool_call_id, decision, decided_by, decided_at, note}` (same URL and token,
        `Idempotency-Key: <run_id>:<decision event id>`). A runtime may long poll
        instead; the callback is best effort, retried like a run's delivery."""
        after = 0
        while True:
            for seq, body in await decisions_after(ctx.conversation_id, ctx.run_id, after):
                after = seq
                key = f"{ctx.run_id}:{seq}"
                try:
                    await self.deliver(body, key)
                except AgentError as problem:
                    logger.warning("approval callback %s not delivered: %s", key, problem)
            await asyncio.sleep(DECISION_POLL_SECONDS)

    @property
    def origin(self) -> str:
        """How failure messages name the runtime: scheme://host[:port]."""
        return endpoint_origin(self.url)

    def excerpt(self, text: str) -> str:
        return remote_excerpt(text, secrets=[self.token, *url_secrets(self.url)])

    async def deliver(self, body: dict[str, Any], run_id: str) -> None:
        headers = {"Idempotency-Key": run_id, "User-Agent": "chatui-webhook/1"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        else:
            logger.warning("CHATUI_WEBHOOK_TOKEN is not set; posting to the runtime without one")
        problem = ""
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            for attempt in range(1, self.attempts + 1):
                try:
                    problem = await self._attempt(client, body, headers)
                except httpx.TransportError as error:
                    problem = self.excerpt(_describe(error))
                except httpx.InvalidURL:
                    raise AgentError(
                        "CHATUI_WEBHOOK_URL is not a valid http(s) URL; check the setting."
                    ) from None
                if not problem:
                    return
                logger.warning(
                    "webhook delivery %s/%s for run %s failed: %s",
                    attempt,
                    self.attempts,
                    run_id,
                    problem,
                )
                if attempt < self.attempts:
                    await asyncio.sleep(backoff_delay(attempt, self.backoff))
        raise AgentError(
            f"Could not reach the agent runtime at {self.origin} after {self.attempts} "
            f"attempt{'s' if self.attempts != 1 else ''}: {problem}"
        )

    async def _attempt(
        self, client: httpx.AsyncClient, body: dict[str, Any], headers: dict[str, str]
    ) -> str:
        """One delivery: "" when accepted, else what went wrong (worth retrying);
        raises AgentError when the runtime refuses the run. Only the start of a
        refusal's body is downloaded."""
        async with client.stream("POST", self.url, json=body, headers=headers) as response:
            if response.is_success:
                return ""
            problem = f"HTTP {response.status_code}"
            if response.status_code >= 500 or response.status_code == 429:
                return problem
            detail = self.excerpt(await read_prefix(response))
        raise AgentError(
            f"The agent runtime at {self.origin} refused the run: {problem}"
            + (f" — {detail}" if detail else "")
        )


@db
def decisions_after(conversation_id: Any, run_id: str, after: int) -> list[tuple[int, dict]]:
    """The run's `tool.approval` events after seq `after`, as callback bodies."""
    events = Event.objects.filter(
        conversation_id=conversation_id, run_id=run_id, type="tool.approval", seq__gt=after
    ).order_by("seq")
    return [
        (
            event.seq,
            {
                "type": "tool.approval",
                "conversation_id": str(conversation_id),
                "run_id": run_id,
                **{
                    key: event.payload.get(key, "")
                    for key in ("tool_call_id", "decision", "decided_by", "decided_at", "note")
                },
            },
        )
        for event in events
    ]


def backoff_delay(attempt: int, base: float) -> float:
    """Seconds to wait after failed attempt `attempt` (1-based): base × 2ⁿ⁻¹, capped."""
    return min(base * 2 ** (attempt - 1), MAX_BACKOFF_SECONDS)


def _describe(error: httpx.TransportError) -> str:
    if isinstance(error, httpx.ConnectError):
        return f"connection failed ({error or 'refused'})"
    if isinstance(error, httpx.TimeoutException):
        return "timed out"
    return f"{type(error).__name__}: {error}"


async def wait_for_run_end(
    conversation_id: Any, run_id: str, *, timeout: float, poll: float = 2.0
) -> str | None:
    """Wait until the run is `completed` or `failed` in the database; its status,
    or None after `timeout` seconds. Woken at once by ingests in this process."""
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()
    key = str(conversation_id)

    def on_ingested(sender: Any, conversation_id: Any = None, **kwargs: Any) -> None:
        if str(conversation_id) == key:
            loop.call_soon_threadsafe(wake.set)

    uid = f"chatui.agents.webhook.wait.{key}.{run_id}"
    events_ingested.connect(on_ingested, weak=False, dispatch_uid=uid)
    try:
        deadline = loop.time() + timeout
        while True:
            wake.clear()  # before looking, so an end committed meanwhile still wakes us
            try:
                status = await run_status(conversation_id, run_id)
            except OperationalError as error:  # e.g. SQLite busy: look again shortly
                logger.warning("could not read the status of run %s: %s", run_id, error)
                status = None
            if status in ENDED:
                return status
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a Stop
            # (a cancellation arriving just as the wake-up does).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(poll, remaining)):
                    await wake.wait()
    finally:
        events_ingested.disconnect(dispatch_uid=uid)
