"""Pages: login required, one's own conversations only, search, the windowed transcript."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from chatui import agents
from chatui.ingest.service import ingest, reproject
from chatui.models import Conversation, Event
from chatui.read import selectors
from config.asgi import application
from tests.support.fixtures import load_fixture
from tests.support.render import render_everything
from tests.support.sockets import HOST, ORIGIN


def test_conversation_page_renders_the_recorded_run(client, user, conversation):
    ingest(conversation, load_fixture("recorded_run.json"))
    client.force_login(user)
    response = client.get(conversation.get_absolute_url())
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="transcript"' in html
    assert 'data-last-seq="21"' in html
    assert html.count("data-tool-batch") == 1
    assert 'ws-connect="/ws/conversations/' in html


def test_pages_need_login(client, conversation):
    for path in ("/", conversation.get_absolute_url(), "/showcase"):
        response = client.get(path)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")


def test_sec5_a_user_sees_only_their_own_conversations(client, user, other_user, conversation):
    theirs = Conversation.objects.create(owner=other_user, title="their secret plans")
    client.force_login(user)
    listing = client.get("/").content.decode()
    assert "Test" in listing and "their secret plans" not in listing
    assert client.get(theirs.get_absolute_url()).status_code == 404
    assert client.get(f"/c/{theirs.pk}/transcript").status_code == 404
    response = client.post(f"/c/{theirs.pk}/messages", {"content": "hi"})
    assert response.status_code == 404
    assert not theirs.messages.exists()


def test_view_permission_lets_an_auditor_read_but_not_post(client, user, other_user):
    theirs = Conversation.objects.create(owner=other_user, title="audited")
    ingest(theirs, {"type": "user.message", "content": "visible to auditors"})
    user.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    client.force_login(user)
    page = client.get(theirs.get_absolute_url()).content.decode()
    assert "visible to auditors" in page
    assert 'id="composer"' not in page


def test_list_is_newest_first_with_running_and_failed_badges(client, user):
    for title, status in [("old", "completed"), ("busy", "running"), ("broken", "failed")]:
        conversation = Conversation.objects.create(owner=user, title=title)
        event = {"type": "agent.status", "status": status, "run_id": "r1"}
        ingest(
            conversation,
            [{"type": "agent.status", "status": "running", "run_id": "r1"}, event]
            if status != "running"
            else [event],
        )
    client.force_login(user)
    html = client.get("/").content.decode()
    titles = re.findall(r'<span class="title">([^<]+)</span>', html)
    assert titles == ["broken", "busy", "old"]
    assert 'badge--running" data-status-badge>Running' in html
    assert 'badge--failed" data-status-badge>Failed' in html
    assert "badge--completed" not in html


def test_search_across_own_transcripts(client, user, other_user):
    mine = Conversation.objects.create(owner=user, title="alpha")
    ingest(
        mine,
        [
            {"type": "user.message", "content": "where is the kraken?"},
            {
                "type": "agent.tool.completed",
                "tool_call_id": "c",
                "tool_name": "sonar",
                "result": "deep",
            },
        ],
    )
    Conversation.objects.create(owner=user, title="beta")
    theirs = Conversation.objects.create(owner=other_user, title="gamma")
    ingest(theirs, {"type": "user.message", "content": "kraken sighting"})
    client.force_login(user)
    for query in ("kraken", "SONAR", "alpha"):
        html = client.get("/", {"q": query}).content.decode()
        found = re.findall(r'class="search-group" data-conversation-id="([^"]+)"', html)
        assert found == [str(mine.pk)]
    assert "Nothing in your transcripts matches" in client.get("/", {"q": "zzz"}).content.decode()


def test_new_conversation_button(client, user):
    client.force_login(user)
    response = client.post("/new/")
    created = Conversation.objects.get(owner=user)
    assert response["Location"] == created.get_absolute_url()


def test_long_transcript_opens_with_the_latest_200_and_loads_earlier(client, user):
    conversation = Conversation.objects.create(owner=user, title="long")
    ingest(conversation, [{"type": "user.message", "content": f"message {n}"} for n in range(5000)])
    client.force_login(user)
    html = client.get(conversation.get_absolute_url()).content.decode()
    assert html.count('data-role="user"') == 200
    assert "message 4999" in html and "message 4799" not in html
    before = re.search(r"earlier\?before=(\d+)", html).group(1)
    earlier = client.get(f"/c/{conversation.pk}/earlier", {"before": before}).content.decode()
    assert earlier.count('data-role="user"') == 200
    assert "message 4799" in earlier and "message 4800" not in earlier
    assert 'id="load-earlier"' in earlier and 'hx-swap-oob="true"' in earlier


def test_window_never_cuts_a_tool_batch_in_two(user):
    conversation = Conversation.objects.create(owner=user)
    ingest(
        conversation,
        [{"type": "user.message", "content": "go"}]
        + [
            {
                "type": "agent.tool.completed",
                "tool_call_id": f"c{n}",
                "tool_name": "t",
                "result": "x",
            }
            for n in range(30)
        ],
    )
    window, has_earlier = selectors.transcript_window(conversation, limit=10)
    assert window[0].role == "user"
    assert len(window) == 31 and not has_earlier


def finish_run(conversation) -> None:
    assert async_to_sync(agents.wait_for_run)(conversation.pk, timeout=20)
    conversation.refresh_from_db()


@pytest.mark.django_db(transaction=True)
def test_composer_without_javascript_posts_redirects_and_runs_the_agent(client, settings):
    settings.CHATUI_DEMO_DELAY = 0
    user = get_user_model().objects.create_user("composer")
    conversation = Conversation.objects.create(owner=user)
    client.force_login(user)
    response = client.post(
        f"/c/{conversation.pk}/messages", {"content": "calculate 6*7", "client_token": "abc"}
    )
    assert response.status_code == 302
    finish_run(conversation)
    assert conversation.messages.filter(role="user", content="calculate 6*7").count() == 1
    assert conversation.status == "completed"
    assert conversation.messages.filter(role="tool", tool_name="calculate").exists()
    assert "42" in conversation.messages.filter(role="assistant").last().content


@pytest.mark.django_db(transaction=True)
def test_l4_double_submit_of_one_composer_form_is_one_message(client, settings):
    settings.CHATUI_DEMO_DELAY = 0
    user = get_user_model().objects.create_user("double")
    conversation = Conversation.objects.create(owner=user)
    client.force_login(user)
    answers = [
        client.post(
            f"/c/{conversation.pk}/messages",
            {"content": "once", "client_token": "t1"},
            headers={"HX-Request": "true"},
        )
        for _ in range(2)
    ]
    assert answers[0].content.decode().startswith("<!--seq 1 1-->")
    assert answers[1].status_code == 204
    finish_run(conversation)
    assert conversation.messages.filter(role="user").count() == 1


@pytest.mark.django_db(transaction=True)
def test_message_refused_while_a_run_without_interjections_is_going(client, settings):
    settings.CHATUI_DEMO_DELAY = 0.5
    user = get_user_model().objects.create_user("busy")
    conversation = Conversation.objects.create(owner=user)
    client.force_login(user)
    agents.start_showcase(conversation)  # the showcase takes no interjections
    response = client.post(
        f"/c/{conversation.pk}/messages", {"content": "hey"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 409
    assert "still working" in response.content.decode()
    assert not conversation.messages.filter(content="hey").exists()
    stop = client.post(f"/c/{conversation.pk}/stop", headers={"HX-Request": "true"})
    assert stop.status_code == 204
    finish_run(conversation)
    assert conversation.status == "cancelled"  # W5: not failed, no red banner
    assert not conversation.messages.filter(status_type="error").exists()
    stopped = conversation.messages.filter(status_type="continuation", content="Stopped by you")
    assert stopped.exists()
    assert conversation.runs.count() == 1  # a Stop ends the whole showcase, closing run too


def test_empty_composer_message_is_refused_clearly(client, user, conversation):
    client.force_login(user)
    response = client.post(
        f"/c/{conversation.pk}/messages", {"content": "   "}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 400
    assert response.content.decode() == "Write a message first."
    assert not conversation.messages.exists()


# -- SEC6: hostile query parameters -------------------------------------------------


@pytest.mark.parametrize("before", ["²", "١٢", "１", "-1", "9223372036854775808", "9" * 30, ""])
def test_sec6_before_must_be_ascii_digits_within_range(client, user, conversation, before):
    client.force_login(user)
    response = client.get(f"/c/{conversation.pk}/earlier", {"before": before})
    assert response.status_code == 400
    assert "'before' must be a message position" in response.content.decode()


# -- one malformed stored value breaks nothing ------------------------------------------


def append_unchecked(conversation: Conversation, *events: dict) -> None:
    """Event rows written straight to the table, as before ingest checked numbers (old
    data), then re-projected: replaying such an event must not crash either."""
    now = timezone.now()
    for event in events:
        conversation.last_seq += 1
        Event.objects.create(
            conversation=conversation,
            seq=conversation.last_seq,
            type=event["type"],
            run_id=event.get("run_id", ""),
            tool_call_id=event.get("tool_call_id", ""),
            payload={key: value for key, value in event.items() if key not in ("type", "run_id")},
            body_hash="0" * 64,
            timestamp=now,
            received_at=now,
        )
    conversation.save(update_fields=["last_seq"])
    reproject(conversation)


HUGE = int("9" * 400)
STEP = {"type": "agent.step.completed", "content": "Done.", "run_id": "r1"}
TOOL = {"tool_call_id": "c1", "tool_name": "ls", "run_id": "r1"}

OLD_DATA = {
    "duration_ms of 400 digits": ([{**STEP, "duration_ms": HUGE}], "Assistant · —"),
    # One count fits Python's 4300-digit limit; the run's sum does not.
    "tokens of 4300 nines, twice": (
        [
            {**STEP, "message_id": "a1", "tokens": int("9" * 4300)},
            {**STEP, "message_id": "a2", "tokens": int("9" * 4300)},
        ],
        "Assistant · — tokens",
    ),
    # PostgreSQL's json column holds "\u0000" (ingest refuses it now: SEC6); a key
    # lookup in SQL reads the row as jsonb, which refuses it: the audit page broke.
    "tokens of text with a NUL": ([{**STEP, "tokens": "1\x00"}], "Assistant · — tokens"),
    "tool duration_ms of 400 digits": (
        [{"type": "agent.tool.completed", **TOOL, "result": "ok", "duration_ms": HUGE}],
        "data-tool-duration>—<",
    ),
    "progress and attempts of 400 digits": (
        [
            {"type": "agent.tool.started", **TOOL, "attempt": HUGE, "max_attempts": HUGE},
            {"type": "agent.tool.progress", "tool_call_id": "c1", "progress": HUGE},
        ],
        'data-status="running"',
    ),
}


@pytest.mark.parametrize("case", OLD_DATA)
def test_one_malformed_stored_number_renders_as_a_dash_everywhere(case, conversation):
    """Issue 9: one event with a huge number broke the page, the fragments, the admin,
    the OTLP export and the socket replay for good, and re-projection replayed it."""
    events, expected = OLD_DATA[case]
    ingest(conversation, {"type": "user.message", "content": "go", "run_id": "r1"})
    append_unchecked(conversation, *events)
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="root-pass-1"))
    shown = render_everything(client, conversation)
    for name in ("page", "transcript", "earlier", "admin", "replay 0"):
        assert expected in shown[name], name


# -- SEC4: a socket path that names no conversation ---------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path",
    [
        "/ws/conversations/not-a-uuid/",
        "/ws/conversations/",
        "/ws/elsewhere",
        "/ws/conversations/7d1f1f9e-0000-4000-8000-000000000000/extra/",
    ],
)
async def test_sec4_socket_path_that_is_not_a_conversation_is_closed_4404(path):
    communicator = WebsocketCommunicator(application, path, headers=[HOST, ORIGIN])
    connected, _ = await communicator.connect()
    assert connected
    assert await communicator.receive_output() == {"type": "websocket.close", "code": 4404}


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("after", ["²", "%C2%B2", "9" * 30])
async def test_sec6_socket_after_that_is_not_ascii_digits_replays_from_the_start(after):
    """`"²".isdigit()` is true and int() refuses it: the consumer crashed on connect."""
    owner, conversation = await sync_to_async(owned_conversation_with_a_message)()
    cookie = await sync_to_async(session_cookie)(owner)
    communicator = WebsocketCommunicator(
        application,
        f"/ws/conversations/{conversation.pk}/?after={after}",
        headers=[HOST, ORIGIN, (b"cookie", cookie)],
    )
    connected, _ = await communicator.connect()
    assert connected
    frame = await communicator.receive_from(timeout=5)
    assert frame.startswith("<!--seq 1 1-->") and "hello" in frame
    await communicator.disconnect()


def owned_conversation_with_a_message():
    owner = get_user_model().objects.create_user("socket-owner")
    conversation = Conversation.objects.create(owner=owner)
    ingest(conversation, {"type": "user.message", "content": "hello"})
    return owner, conversation


def session_cookie(user) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()
