"""docs/rendering.md#list-and-rail / issue 15: the conversation list's rows (chatui.read.listing,
selectors.with_row_data).

Each row: title, a one-line preview of the last message (escaped, secrets masked,
clipped), "12 tools · 3 failed", the latest run's own status, a relative time that
fits one line. A page of rows costs one query whatever the number of rows.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from channels.testing import WebsocketCommunicator
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chatui.agents import start_showcase, wait_for_run
from chatui.ingest.service import ingest
from chatui.models import Conversation, Run
from chatui.read import listing, previews, selectors
from chatui.read.outcomes import OutcomeCounts
from config.asgi import application
from tests.support.sockets import HOST, ORIGIN, fresh_channel_layer  # noqa: F401

SECRET = "sk-" + "A1b2C3d4E5f6G7h8J9k0"


def tool(call_id: str, name: str = "ls", *, run_id: str = "r1", error: str | None = None):
    ended = {"type": "agent.tool.completed", "tool_call_id": call_id, "run_id": run_id}
    ended.update({"error": error} if error else {"result": "ok"})
    started = {"type": "agent.tool.started", "tool_call_id": call_id, "tool_name": name}
    return [{**started, "run_id": run_id}, ended]


def status(value: str, run_id: str, **extra) -> dict:
    return {"type": "agent.status", "status": value, "run_id": run_id, **extra}


def row_of(conversation: Conversation) -> listing.ConversationRow:
    return listing.present_row(selectors.conversation_row(conversation.pk))


def test_row_counts_tools_and_failed_ones(conversation):
    events = [{"type": "user.message", "content": "go", "run_id": "r1"}]
    for number in range(12):
        events += tool(f"c{number}", error="boom" if number % 4 == 0 else None)
    ingest(conversation, events)
    assert row_of(conversation).counts == "12 tools · 3 failed"


def test_row_counts_wording():
    assert OutcomeCounts().text() == ""
    assert OutcomeCounts(tools=1).text() == "1 tool"
    assert OutcomeCounts(tools=2, failed=1).text() == "2 tools · 1 failed"


def test_rows_cost_one_query_whatever_their_number(user):
    for number in range(5):
        conversation = Conversation.objects.create(owner=user, title=f"c{number}")
        ingest(conversation, [{"type": "user.message", "content": "hi"}, *tool("c1")])
    with CaptureQueriesContext(connection) as one:
        rows = listing.present_rows(selectors.conversation_rows(user, 1))
    with CaptureQueriesContext(connection) as five:
        rows = listing.present_rows(selectors.conversation_rows(user, 100))
    assert len(rows) == 5 and all(row.counts == "1 tool" for row in rows)
    assert len(one) == len(five) == 1


def test_preview_is_the_last_message_masked_and_clipped_to_one_line(conversation):
    long = f"line one\nkey {SECRET} then " + "word " * 100
    ingest(
        conversation,
        [
            {"type": "user.message", "content": "first"},
            {"type": "agent.step.completed", "message_id": "a1", "content": long},
        ],
    )
    preview = row_of(conversation).preview
    assert SECRET not in preview and "••••" + SECRET[-4:] in preview  # T3
    assert "\n" not in preview and preview.startswith("line one key")
    assert len(preview) == listing.PREVIEW_CHARS and preview.endswith("…")


def test_preview_masks_a_secret_that_straddles_the_clip():
    text = "x" * (listing.PREVIEW_CHARS - 10) + f" {SECRET}"
    preview = previews.preview_of(text, None)
    assert SECRET[:12] not in preview


def test_preview_text_is_escaped_in_the_list(client, user, conversation):
    ingest(conversation, {"type": "user.message", "content": "<img src=x onerror=alert(1)>"})
    client.force_login(user)
    html = client.get("/").content.decode()
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_status_follows_the_latest_runs_own_end(conversation):
    ingest(conversation, [status("running", "r1"), status("failed", "r1", error_message="x")])
    assert row_of(conversation).status == "failed"
    ingest(conversation, [status("running", "r2")])
    assert row_of(conversation).status == "running"
    ingest(conversation, [status("completed", "r2")])
    row = row_of(conversation)
    assert (row.status, row.status_label) == ("completed", "Completed")


def test_an_older_run_ending_late_does_not_change_the_newer_runs_status(conversation):
    ingest(conversation, [status("running", "r1"), status("running", "r2")])
    ingest(conversation, [status("failed", "r1", error_message="late")])
    assert row_of(conversation).status == "running"


@pytest.mark.django_db(transaction=True)
def test_list_row_of_a_finished_showcase_is_not_failed(client, user, conversation):
    """Issue 15: the showcase's second run fails on purpose (S2); its closing run
    completes, so the finished showcase's row says completed, banner kept above."""

    async def play() -> None:
        start_showcase(conversation, delay=0)
        assert await wait_for_run(conversation.pk, timeout=60)

    asyncio.run(play())
    row = row_of(conversation)
    assert (row.status, row.status_label) == ("completed", "Completed")
    failed = Run.objects.get(conversation=conversation, status="failed")
    banner = conversation.messages.get(status_type="error")
    assert banner.run_id == failed.run_id and banner.content == failed.error_message
    client.force_login(user)
    html = client.get("/").content.decode()
    assert 'data-run-status="completed"' in html and 'data-run-status="failed"' not in html


def test_a_conversation_without_runs_has_no_status(conversation):
    ingest(conversation, {"type": "user.message", "content": "hi"})
    row = row_of(conversation)
    assert row.status is None and row.status_label == ""


@pytest.mark.parametrize(
    ("age", "text"),
    [
        (timedelta(seconds=5), "just now"),
        (timedelta(minutes=7), "7 min ago"),
        (timedelta(hours=3), "3 h ago"),
    ],
)
def test_relative_time_is_short(age, text):
    now = timezone.now()
    assert listing.short_time(now - age, now) == text


def test_relative_time_of_an_older_day_is_a_short_date():
    now = timezone.now()
    text = listing.short_time(now - timedelta(days=400), now)
    assert len(text) <= 12 and "," in text


def test_list_rows_show_preview_counts_status_and_exact_time(client, user, conversation):
    ingest(
        conversation,
        [
            {"type": "user.message", "content": "please list", "run_id": "r1"},
            *tool("c1"),
            *tool("c2", error="denied"),
            {
                "type": "agent.step.completed",
                "message_id": "a1",
                "content": "Done listing.",
                "run_id": "r1",
            },
            status("completed", "r1"),
        ],
    )
    client.force_login(user)
    html = client.get("/").content.decode()
    assert f'id="row-{conversation.pk}"' in html
    assert "Done listing." in html and "2 tools · 1 failed" in html
    assert 'data-run-status="completed"' in html
    assert 'ws-connect="/ws/rows/"' in html


def test_conversation_page_has_the_rail_with_the_readers_conversations(
    client, user, other_user, conversation
):
    mine = Conversation.objects.create(owner=user, title="my other one")
    theirs = Conversation.objects.create(owner=other_user, title="not mine")
    client.force_login(user)
    html = client.get(conversation.get_absolute_url()).content.decode()
    assert 'id="rail"' in html and f'id="row-{mine.pk}"' in html
    assert f'id="row-{theirs.pk}"' not in html
    assert 'aria-current="page"' in html
    # Compact: no preview, so the page holds no text of the conversation beyond its window.
    rail = html[html.index('id="rail"') : html.index("</nav>", html.index('id="rail"'))]
    assert "data-row-preview" not in rail


@pytest.mark.django_db(transaction=True)
def test_a_row_frame_reaches_the_owners_list_socket(user):
    conversation = Conversation.objects.create(owner=user, title="watched")

    async def scenario() -> str:
        from asgiref.sync import sync_to_async
        from django.test import Client

        client = Client()
        await sync_to_async(client.force_login)(user)
        cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
        communicator = WebsocketCommunicator(
            application,
            "/ws/rows/",
            headers=[HOST, ORIGIN, (b"cookie", cookie)],
        )
        connected, _ = await communicator.connect()
        assert connected
        await sync_to_async(ingest)(conversation, [status("running", "r1")])
        html = await communicator.receive_from(timeout=5)
        await communicator.disconnect()
        return html

    from asgiref.sync import async_to_sync

    html = async_to_sync(scenario)()
    assert f'id="row-{conversation.pk}"' in html and 'hx-swap-oob="true"' in html
    assert 'data-run-status="running"' in html


@pytest.mark.django_db(transaction=True)
def test_list_socket_refuses_anonymous_readers():
    async def scenario() -> int | None:
        communicator = WebsocketCommunicator(application, "/ws/rows/", headers=[HOST, ORIGIN])
        await communicator.connect()
        closed = await communicator.receive_output(timeout=5)
        while closed["type"] != "websocket.close":
            closed = await communicator.receive_output(timeout=5)
        return closed.get("code")

    from asgiref.sync import async_to_sync

    assert async_to_sync(scenario)() == 4403
