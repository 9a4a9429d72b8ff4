"""docs/rendering.md#time-travel: time travel (`/c/{id}/?at=N`) and the replay page's server side.

The live reference for "as it stood after event N" is a second conversation fed the
same events one at a time through ingest, its page rendered after each one: a live
page shows what a fresh load shows (S3, tests/browser/test_live.py).
"""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client

from chatui.ingest.service import ingest
from chatui.models import Conversation, Event, Message, Run
from chatui.read import replay
from chatui.read.serializers import message_to_dict
from tests.support.fixtures import load_fixture
from tests.support.hostile import hostile_events
from tests.support.showcase import showcase_events

TRANSCRIPT = re.compile(r'<section id="transcript".*?</section>', re.S)


def transcript_of(html: str) -> str:
    found = TRANSCRIPT.search(html)
    assert found, "no #transcript in the page"
    return found.group(0)


#: A DOM id built from a primary key ("m-12", "b-12", "b-12-summary", "#m-12"), in an
#: attribute value.
DOM_ID = re.compile(r'(?<=["#])([mb])-(\d+)(?=["-])')


def comparable(html: str, conversation: Conversation) -> str:
    """Only what must differ between two conversations is normalised: the conversation's
    id, and DOM ids (they are primary keys, numbered in order of first appearance).
    Pending timers are blanked: a live page's ticks from now, a moment's from then."""
    html = html.replace(str(conversation.pk), "<conversation>")
    numbers: dict[str, int] = {}
    for number in DOM_ID.findall(html):
        numbers.setdefault(number[1], len(numbers))
    html = DOM_ID.sub(lambda m: f"{m[1]}-#{numbers[m[2]]}", html)
    return re.sub(r"(<time data-elapsed[^>]*>)[^<]*(</time>)", r"\1\2", html)


def page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def recorded() -> list[dict]:
    return load_fixture("recorded_run.json")


def timed(events: list[dict]) -> list[dict]:
    """Events with no timestamp would get the server's clock: 1 s apart instead."""
    return [{**event, "timestamp": f"2026-11-02T11:00:{n:02d}Z"} for n, event in enumerate(events)]


LOGS = {
    "recorded_run": recorded,
    "showcase": showcase_events,
    "agentspine_as3": lambda: timed(load_fixture("agentspine/as3_progress_long_result.jsonl")),
    "hostile": lambda: timed(hostile_events()),  # SEC1/T3: escaped and masked alike
}


def live_pages(user, events: list[dict]) -> list[str]:
    """The reference: the page's transcript after each event, fed one at a time."""
    live = Conversation.objects.create(owner=user, title="T")
    client = page_client(user)
    pages = []
    for event in events:
        ingest(live, event)
        page = transcript_of(client.get(live.get_absolute_url()).content.decode())
        pages.append(comparable(page, live))
    return pages


@pytest.mark.parametrize("log", LOGS)
def test_sec14_at_every_seq_equals_the_live_page_after_that_event(user, log):
    """Asked in order (each moment carries the last one forward) and in reverse (each
    one is projected afresh), every moment is the live page after that event."""
    events = LOGS[log]()
    whole = Conversation.objects.create(owner=user, title="T")
    ingest(whole, events)
    expected = live_pages(user, events)
    client = page_client(user)
    seqs = list(range(1, len(events) + 1))
    for seq in seqs + seqs[::-1]:
        response = client.get(whole.get_absolute_url(), {"at": seq})
        assert response.status_code == 200
        shown = transcript_of(response.content.decode())
        assert f'data-last-seq="{seq}"' in shown
        assert comparable(shown, whole) == expected[seq - 1], f"after event {seq}"


def test_sec14_moment_keeps_the_live_rows_dom_ids(user):
    """A message that still exists has the DOM id its live row has (replay frames
    keep the reader's open batches; the last moment is the page itself)."""
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, recorded())
    client = page_client(user)
    now = transcript_of(client.get(conversation.get_absolute_url()).content.decode())
    last = client.get(conversation.get_absolute_url(), {"at": conversation.last_seq})
    assert transcript_of(last.content.decode()) == now


def snapshot() -> dict:
    """Everything time travel could write: every row of the projection and the log,
    and the search index."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM chatui_message_search")
        indexed = cursor.fetchone()[0]
    return {
        "conversations": list(Conversation.objects.values().order_by("pk")),
        "events": list(Event.objects.values().order_by("pk")),
        "messages": [message_to_dict(m) for m in Message.objects.order_by("pk")],
        "message_rows": list(Message.objects.values().order_by("pk")),
        "runs": list(Run.objects.values().order_by("pk")),
        "indexed": indexed,
    }


@pytest.mark.sqlite_only(reason="counts rows of SQLite's FTS5 table, chatui_message_search")
def test_sec14_time_travel_and_replay_never_write(user):
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, showcase_events())
    before = snapshot()
    client = page_client(user)
    for seq in range(conversation.last_seq + 1):
        assert client.get(conversation.get_absolute_url(), {"at": seq}).status_code == 200
        assert client.get(f"/c/{conversation.pk}/at/{seq}").status_code == 200
    assert client.get(f"/c/{conversation.pk}/replay").status_code == 200
    assert snapshot() == before


def test_sec14_label_link_back_to_now_and_read_only(user):
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, recorded())
    page = page_client(user).get(conversation.get_absolute_url(), {"at": 3}).content.decode()
    assert "As of event 3 · " in re.sub(r"<[^>]+>", "", page)  # its text, as read
    assert "2026-11-02 09:00:03" in page  # event 3's recorded time
    assert f'href="{conversation.get_absolute_url()}" data-back-to-now' in page
    assert 'id="composer"' not in page and "data-stop-run" not in page
    assert "ws-connect" not in page  # no live socket: nothing swaps a past moment


def test_sec14_before_the_first_event_is_an_empty_transcript(user):
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, recorded())
    page = page_client(user).get(conversation.get_absolute_url(), {"at": 0}).content.decode()
    assert "Before the first event" in page
    assert 'data-role="' not in transcript_of(page)


@pytest.mark.parametrize("raw", ["x", "-1", "1.5", "²", "99999999999999999999999", "22", ""])
def test_sec14_bad_at_is_400_naming_the_field(user, raw):
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, recorded())  # 21 events
    client = page_client(user)
    for response in (
        client.get(conversation.get_absolute_url(), {"at": raw}),
        client.get(f"/c/{conversation.pk}/replay", {"at": raw}),
    ):
        assert response.status_code == 400
        assert response.json()["field"] == "at"
    if raw:  # an empty path segment is simply another URL
        response = client.get(f"/c/{conversation.pk}/at/{raw}")
        assert response.status_code in (400, 404)


def test_sec14_beyond_the_last_event_says_which_is_last(user):
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, recorded())
    response = page_client(user).get(conversation.get_absolute_url(), {"at": 22})
    assert response.json()["error"] == "'at' is beyond the last event (21)"


def test_sec14_pending_timer_is_reckoned_from_the_moment(user):
    """A tool running at event N shows how long it had run at event N, not since."""
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(
        conversation,
        [
            {"type": "agent.tool.started", "tool_call_id": "t1", "tool_name": "slow",
             "run_id": "r", "timestamp": "2026-11-02T10:00:00Z"},
            {"type": "agent.tool.progress", "tool_call_id": "t1", "progress": 0.5,
             "run_id": "r", "timestamp": "2026-11-02T10:00:42Z"},
        ],
    )  # fmt: skip
    page = page_client(user).get(conversation.get_absolute_url(), {"at": 2}).content.decode()
    assert re.search(r"<time data-elapsed\s+datetime=\"[^\"]+\">42 s</time>", page)
    assert 'data-as-of="2026-11-02T10:00:42+00:00"' in page  # chatui.js's clock stops there


def test_sec14_other_user_gets_404_everywhere(user, other_user):
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, recorded())
    client = page_client(other_user)
    assert client.get(conversation.get_absolute_url(), {"at": 3}).status_code == 404
    assert client.get(f"/c/{conversation.pk}/at/3").status_code == 404
    assert client.get(f"/c/{conversation.pk}/replay").status_code == 404


def test_sec14_anonymous_is_sent_to_log_in(user):
    conversation = Conversation.objects.create(owner=user, title="T")
    for path in (f"/c/{conversation.pk}/at/0", f"/c/{conversation.pk}/replay"):
        response = Client().get(path)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_sec14_auditor_may_time_travel_and_replay(user, other_user):
    conversation = Conversation.objects.create(owner=other_user, title="T")
    ingest(conversation, recorded())
    user.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    client = page_client(user)
    assert "As of event 3" in client.get(conversation.get_absolute_url(), {"at": 3}).text
    assert client.get(f"/c/{conversation.pk}/at/3").status_code == 200
    assert client.get(f"/c/{conversation.pk}/replay").status_code == 200


def test_sec14_replay_page_carries_the_timeline_and_starts_paused_at_the_start(user):
    conversation = Conversation.objects.create(owner=user, title="T")
    events = recorded()
    ingest(conversation, events)
    page = page_client(user).get(f"/c/{conversation.pk}/replay").content.decode()
    found = re.search(r'<script id="replay-timeline" type="application/json">(.*?)</script>', page)
    timeline = json.loads(found.group(1))
    assert [point["seq"] for point in timeline] == list(range(1, len(events) + 1))
    assert timeline[1]["t"] - timeline[0]["t"] == 1000  # the recorded pace: 09:00:01 → 02
    assert 'data-shown-seq="0"' in page and "Before the first event" in page
    assert 'data-last-seq="0"' in transcript_of(page)
    assert 'max="21"' in page  # the scrubber spans every seq
    assert "data-replay-play" in page and "data-replay-step" in page
    assert 'id="composer"' not in page and "ws-connect" not in page


def test_sec14_replay_fragment_is_the_transcript_and_its_label(user):
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, recorded())
    client = page_client(user)
    fragment = client.get(f"/c/{conversation.pk}/at/7").content.decode()
    page = client.get(conversation.get_absolute_url(), {"at": 7}).content.decode()
    assert transcript_of(fragment) == transcript_of(page)
    assert re.search(r'<p id="moment-label"[^>]*hx-swap-oob="true"', fragment)
    assert "As of event 7 · " in re.sub(r"<[^>]+>", "", fragment)


def test_sec14_admin_change_page_links_to_replay_and_time_travel(user):
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, recorded())
    user.is_staff = True
    user.save()
    for codename in ("view_conversation", "view_message", "view_event", "view_run"):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    page = page_client(user).get(f"/admin/chatui/conversation/{conversation.pk}/change/").text
    assert f'href="/c/{conversation.pk}/replay" data-admin-replay' in page
    assert f'href="/c/{conversation.pk}/?at=21">As of event 21' in page


def test_sec14_moments_of_many_conversations_never_mix(user):
    """More conversations than the projections a thread holds, asked in turn: each
    moment shows its own conversation's messages only."""
    conversations = []
    for n in range(6):
        conversation = Conversation.objects.create(owner=user, title=f"c{n}")
        ingest(
            conversation,
            [{"type": "user.message", "content": f"only in c{n} #{k}"} for k in range(3)],
        )
        conversations.append(conversation)
    client = page_client(user)
    for seq in (2, 3, 1):
        for n, conversation in enumerate(conversations):
            page = client.get(conversation.get_absolute_url(), {"at": seq}).content.decode()
            shown = re.findall(r"only in c(\d) #(\d)", transcript_of(page))
            assert shown == [(str(n), str(k)) for k in range(seq)]


def test_sec14_conversation_page_links_to_its_replay(user):
    conversation = Conversation.objects.create(owner=user, title="T")
    client = page_client(user)
    assert "data-replay-link" not in client.get(conversation.get_absolute_url()).text  # no log yet
    ingest(conversation, recorded())
    page = client.get(conversation.get_absolute_url()).text
    assert f'href="/c/{conversation.pk}/replay" data-replay-link' in page


@pytest.mark.sqlite_only(reason="on PostgreSQL a moment is a rolled-back transaction there")
def test_sec14_time_travel_sends_the_real_sqlite_database_reads_only(user):
    """No write, not even one rolled back: on SQLite that would take the database's
    one write lock and make every writer wait for the projection."""
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, showcase_events())
    client = page_client(user)
    client.get("/")  # the session's own writes (last login) happen before
    statements: list[str] = []

    def record(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        for seq in (10, 20, 5, 45):
            assert client.get(conversation.get_absolute_url(), {"at": seq}).status_code == 200
            assert client.get(f"/c/{conversation.pk}/at/{seq}").status_code == 200
        assert client.get(f"/c/{conversation.pk}/replay").status_code == 200
    assert statements
    assert [sql for sql in statements if not sql.lstrip().upper().startswith("SELECT")] == []


def test_w10_steps_are_the_moments_either_side_and_none_at_the_ends(user):
    conversation = Conversation.objects.create(owner=user, title="steps")
    ingest(conversation, [{"type": "user.message", "content": f"m{n}"} for n in range(3)])
    here = conversation.get_absolute_url()
    first, middle, last = (replay.moment(conversation, seq) for seq in (0, 2, 3))
    assert replay.steps(conversation, first) == replay.Steps(None, f"{here}?at=1")
    assert replay.steps(conversation, middle) == replay.Steps(f"{here}?at=1", f"{here}?at=3")
    assert replay.steps(conversation, last) == replay.Steps(f"{here}?at=2", None)
