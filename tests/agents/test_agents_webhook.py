"""The webhook agent (docs/events.md#webhook-agents) against a fake runtime: a real HTTP server on
loopback that records what chatui POSTs, answers as told, and then posts the
run's events back through chatui's events API (as a real runtime would)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from chatui.agents import accepts_input, is_running, stop_run
from chatui.agents.webhook import WebhookAgent, backoff_delay, events_url
from chatui.models import Event, Message, Run
from tests.support.leaks import assert_failure_leaks_nothing
from tests.support.live import free_port as closed_port
from tests.support.webhook_runtime import agent_for, run_and_wait, runtime

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def user(db):
    """conftest's user without the (deliberately slow) password hashing."""
    return get_user_model().objects.create(username="alice")


def answer_events(run_id: str) -> list[dict[str, Any]]:
    return [
        {"type": "agent.status", "status": "thinking", "run_id": run_id},
        {"type": "agent.tool.started", "tool_call_id": "rt-1", "tool_name": "lookup",
         "args": {"q": "x"}, "run_id": run_id},
        {"type": "agent.tool.completed", "tool_call_id": "rt-1", "result": "found x",
         "duration_ms": 12, "run_id": run_id},
        {"type": "agent.step.completed", "content": "Done: found x.", "run_id": run_id,
         "event_id": f"{run_id}-answer"},
        {"type": "agent.status", "status": "completed", "run_id": run_id,
         "event_id": f"{run_id}-end"},
    ]  # fmt: skip


run_state = sync_to_async(
    lambda run_id: Run.objects.filter(run_id=run_id).values_list("status", flat=True).first()
)


def test_delivery_then_the_runtime_posts_the_run_back(conversation, user):
    with runtime(user, events=answer_events) as server:

        async def hold(run_id):
            for _ in range(200):  # the delivery happens, then the run waits for the runtime
                if server.deliveries:
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)
            assert is_running(conversation.pk) and not accepts_input(conversation.pk)
            assert await run_state(run_id) == "running"
            server.go.set()

        run_id = run_and_wait(conversation, agent_for(server.url), hold=hold)
        server.posted.wait(5)

    (delivery,) = server.deliveries
    assert delivery["body"] == {
        "conversation_id": str(conversation.pk),
        "run_id": run_id,
        "message": "find x",
        "events_url": f"https://chatui.example.com/api/v1/conversations/{conversation.pk}/events",
    }
    headers = {key.lower(): value for key, value in delivery["headers"].items()}
    assert headers["authorization"] == "Bearer hook-secret"
    assert headers["idempotency-key"] == run_id
    assert headers["content-type"] == "application/json"
    assert server.answers[0]["status"] == 200 and server.answers[0]["body"]["accepted"] == 5

    assert Run.objects.get(run_id=run_id).status == "completed"
    assert not is_running(conversation.pk)
    ends = Event.objects.filter(conversation=conversation, type="agent.status").exclude(
        payload__status__in=["running", "thinking"]
    )
    assert [e.event_id for e in ends] == [f"{run_id}-end"]  # the runtime's, none of ours
    tool = Message.objects.get(conversation=conversation, role="tool")
    assert (tool.tool_call_id, tool.tool_status, tool.content) == ("rt-1", "success", "found x")
    assert Message.objects.get(conversation=conversation, role="assistant").content == (
        "Done: found x."
    )


def test_deliveries_are_retried_with_backoff_on_5xx(conversation, user):
    with runtime(user, statuses=[503, 500], events=answer_events) as server:
        server.go.set()
        run_id = run_and_wait(conversation, agent_for(server.url))
    assert len(server.deliveries) == 3
    assert len({json.dumps(d["body"], sort_keys=True) for d in server.deliveries}) == 1
    assert {d["headers"]["Idempotency-Key"] for d in server.deliveries} == {run_id}
    assert Run.objects.get(run_id=run_id).status == "completed"


def test_backoff_doubles_and_is_bounded():
    assert [backoff_delay(n, 0.5) for n in range(1, 7)] == [0.5, 1, 2, 4, 8, 8]


def test_an_unreachable_runtime_fails_the_run(conversation):
    url = f"http://127.0.0.1:{closed_port()}/hook"
    started = time.monotonic()
    run_id = run_and_wait(conversation, agent_for(url))
    assert time.monotonic() - started < 5
    run = Run.objects.get(run_id=run_id)
    assert run.status == "failed"
    origin = url.removesuffix("/hook")  # the runtime's origin only: no path, no query
    assert run.error_message.startswith(
        f"Could not reach the agent runtime at {origin} after 3 attempts: connection failed"
    )
    banner = Message.objects.get(conversation=conversation, status_type="error")
    assert banner.content == run.error_message  # S2


def test_a_runtime_refusing_the_run_is_not_retried(conversation, user):
    with runtime(user, statuses=[403]) as server:
        run_id = run_and_wait(conversation, agent_for(server.url))
    assert len(server.deliveries) == 1
    run = Run.objects.get(run_id=run_id)
    assert run.status == "failed"
    assert run.error_message.startswith(
        f"The agent runtime at {server.url.removesuffix('/hook')} refused the run: HTTP 403"
    )


SECRET_ANSWER = (
    "denied: bearer hook-secret is not valid for http://hookuser:hook-pass-123@runtime/\n"
    "\x1b[2J\u202e" + "stack frame " * 40 + "DB_PASSWORD=body-secret-at-the-end"
)


@pytest.mark.parametrize("status", [500, 400])
def test_sec_failure_message_shows_the_runtime_origin_and_a_short_masked_excerpt(
    conversation, user, status
):
    """The failure lands in the banner, the event log and exports: it never holds the
    URL's password or query, the token, or the remote body beyond a short one-line
    excerpt."""
    with runtime(user, statuses=[status] * 3, refusal=SECRET_ANSWER) as server:
        host = server.url.removeprefix("http://").removesuffix("/hook")
        url = f"http://hookuser:hook-pass-123@{host}/hook?key=query-secret"
        run_id = run_and_wait(conversation, agent_for(url))
    run = Run.objects.get(run_id=run_id)
    assert run.status == "failed"
    if status == 500:
        assert run.error_message == (
            f"Could not reach the agent runtime at http://{host} after 3 attempts: HTTP 500"
        )
    else:
        assert run.error_message.startswith(
            f"The agent runtime at http://{host} refused the run: HTTP 400 — denied: bearer *** "
            "is not valid for http://***@runtime/ [2J stack frame"
        )
    assert_failure_leaks_nothing(
        conversation,
        run,
        ("hook-pass-123", "query-secret", "hook-secret", "body-secret", "\x1b"),
        "\u202e",
    )


def test_the_runtime_may_fail_the_run_itself(conversation, user):
    def failing(run_id):
        return [
            {"type": "agent.status", "status": "failed", "error_message": "runtime: out of memory",
             "run_id": run_id},
        ]  # fmt: skip

    with runtime(user, events=failing) as server:
        server.go.set()
        run_id = run_and_wait(conversation, agent_for(server.url))
    run = Run.objects.get(run_id=run_id)
    assert run.status == "failed" and run.error_message == "runtime: out of memory"
    assert Message.objects.filter(conversation=conversation, status_type="error").count() == 1


def test_a_runtime_that_never_finishes_times_out(conversation, user):
    with runtime(user) as server:  # accepts, then never posts anything
        run_id = run_and_wait(conversation, agent_for(server.url, run_timeout=0.3))
    run = Run.objects.get(run_id=run_id)
    assert run.status == "failed"
    assert run.error_message == (
        "The agent runtime accepted the run but did not finish it within 0.3 s."
    )


def test_stop_while_the_runtime_works(conversation, user):
    def half(run_id):
        return [
            {"type": "agent.tool.started", "tool_call_id": "rt-9", "tool_name": "crawl",
             "run_id": run_id},
        ]  # fmt: skip

    with runtime(user, events=half) as server:
        server.go.set()

        async def hold(run_id):
            for _ in range(300):
                if server.posted.is_set():
                    break
                await asyncio.sleep(0.01)
            assert await stop_run(conversation.pk) == run_id

        run_id = run_and_wait(conversation, agent_for(server.url), hold=hold)
    run = Run.objects.get(run_id=run_id)
    assert (run.status, run.error_message) == ("cancelled", "")  # W5
    tool = Message.objects.get(conversation=conversation, tool_call_id="rt-9")
    assert (tool.tool_status, tool.content) == ("cancelled", "")


def test_a_missing_url_fails_the_run_with_a_hint(conversation, settings):
    settings.CHATUI_WEBHOOK_URL = ""
    run_id = run_and_wait(conversation, WebhookAgent())
    assert Run.objects.get(run_id=run_id).error_message == (
        "No agent runtime is configured: set CHATUI_WEBHOOK_URL."
    )


def test_events_url_is_absolute(settings):
    some = uuid.uuid4()
    assert events_url(some, "http://host:8000/") == (
        f"http://host:8000/api/v1/conversations/{some}/events"
    )
    settings.CHATUI_PUBLIC_URL = "https://chat.example.org"
    assert events_url(some) == f"https://chat.example.org/api/v1/conversations/{some}/events"
