"""docs/rendering.md#long-transcripts and P3: a tool batch renders at most its latest 200 entries;
"show N earlier calls" fetches the rest (a fragment for htmx, a page without JavaScript);
live frames keep working on a windowed batch."""

from __future__ import annotations

import re

import pytest

from chatui.ingest.service import ingest
from chatui.live import frames
from chatui.models import Conversation
from tests.support.batch_events import call_events

CALLS = 450  # 200 shown, 250 earlier: more than the page's window loads back
ENTRY = 'class="tool-entry"'


@pytest.fixture
def giant(user) -> Conversation:
    conversation = Conversation.objects.create(owner=user, title="giant")
    ingest(conversation, [{"type": "user.message", "run_id": "r", "content": "Read them all"}])
    ingest(conversation, call_events(0, CALLS, failed={7}, running={5}))
    return conversation


def call_ids(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'data-tool-call-id="call-(\d+)"', html)]


def earlier_link(html: str) -> str:
    return (
        re.search(r'<a class="button" data-earlier-calls\s+href="([^"]+)"', html)
        .group(1)
        .replace("&amp;", "&")
    )


def test_p3_giant_batch_renders_its_latest_200_entries_and_the_earlier_calls_control(
    client, user, giant, django_assert_max_num_queries
):
    client.force_login(user)
    with django_assert_max_num_queries(25):  # the batch is counted, not loaded whole
        html = client.get(giant.get_absolute_url()).content.decode()
    assert html.count(ENTRY) == 200
    assert call_ids(html) == list(range(CALLS - 200, CALLS))
    assert f"Show {CALLS - 200} earlier calls" in html
    # One batch, summarised whole: its count and the failure among the hidden calls.
    assert html.count("data-tool-batch") == 1
    assert f'data-count="{CALLS}"' in html and f"{CALLS} tool calls" in html
    assert "1 failed" in html and "data-has-error" in html
    # The window opens inside the batch: "load earlier" fetches what lies before the
    # batch (the user message), never the batch's own earlier calls.
    assert 'data-role="user"' not in html
    before = re.search(r"earlier\?before=(\d+)", html).group(1)
    earlier = client.get(f"/c/{giant.pk}/earlier", {"before": before}).content.decode()
    assert 'data-role="user"' in earlier and ENTRY not in earlier


def test_p3_earlier_calls_fragment_inserts_the_previous_200_then_the_rest(
    client, user, giant, django_assert_max_num_queries
):
    client.force_login(user)
    html = client.get(giant.get_absolute_url()).content.decode()
    with django_assert_max_num_queries(20):  # the 200 loaded, the rest counted
        response = client.get(earlier_link(html), headers={"HX-Request": "true"})
    fragment = response.content.decode()
    assert "<html" not in fragment
    assert call_ids(fragment) == list(range(CALLS - 400, CALLS - 200))
    assert "Show 50 earlier calls" in fragment
    rest = client.get(earlier_link(fragment), headers={"HX-Request": "true"}).content.decode()
    assert call_ids(rest) == list(range(0, 50))
    assert "earlier call" not in rest
    assert "boom" in rest  # call 7's error, escaped and shown like any entry


def test_p3_earlier_calls_link_works_without_javascript_as_a_page(client, user, giant):
    client.force_login(user)
    html = client.get(giant.get_absolute_url()).content.decode()
    page = client.get(earlier_link(html)).content.decode()
    assert "<html" in page and "Back to the conversation" in page
    assert call_ids(page) == list(range(CALLS - 400, CALLS - 200))
    assert "Show 50 earlier calls" in page


@pytest.mark.parametrize(
    ("suffix", "status"),
    [("?before=x", 400), ("?before=", 400), ("?before=1", 404)],
)
def test_sec6_earlier_calls_refuses_a_bad_position(client, user, giant, suffix, status):
    client.force_login(user)
    link = earlier_link(client.get(giant.get_absolute_url()).content.decode())
    assert client.get(link.split("?")[0] + suffix).status_code == status


def test_sec5_earlier_calls_of_another_users_conversation_is_404(client, other_user, giant):
    client.force_login(other_user)
    link = f"/c/{giant.pk}/calls/1/earlier?before=999999999"
    assert client.get(link).status_code == 404


def test_earlier_calls_of_a_message_that_opens_no_batch_is_404(client, user, giant):
    client.force_login(user)
    user_message = giant.messages.get(role="user")
    link = f"/c/{giant.pk}/calls/{user_message.pk}/earlier?before=999999999999"
    assert client.get(link).status_code == 404


def frame_for(conversation, *events) -> str:
    result = ingest(conversation, list(events))
    conversation.refresh_from_db()
    first = result.last_seq - result.accepted + 1
    return frames.change_frame(conversation, first, result.last_seq, result.changes).html


def test_live_frame_of_a_giant_batch_loads_only_its_window(giant, django_assert_max_num_queries):
    result = ingest(giant, call_events(CALLS, CALLS + 1)[1:2])
    giant.refresh_from_db()
    with django_assert_max_num_queries(12):
        html = frames.change_frame(giant, result.last_seq, result.last_seq, result.changes).html
    # docs/rendering.md#long-transcripts entry by entry: the summary (counting the whole batch) and
    # the new entry only.
    assert html.count(ENTRY) == 1 and call_ids(html) == [CALLS]
    assert f'data-batch-count="{CALLS + 1}"' in html


def test_live_a_new_call_appears_in_the_windowed_batch(giant):
    first = frame_for(giant, *call_events(CALLS, CALLS + 1)[1:2])
    batch_id = re.search(r'id="(b-\d+)-summary"', first)
    assert batch_id is not None
    html = frame_for(giant, *call_events(CALLS + 1, CALLS + 2)[1:])
    assert f'hx-swap-oob="beforeend:#{batch_id.group(1)}-entries"' in html
    assert call_ids(html) == [CALLS + 1] and f'data-batch-count="{CALLS + 2}"' in html


def test_live_an_update_to_a_call_outside_the_window_changes_the_summary_only(giant):
    assert "2 running" in frame_for(giant, *call_events(CALLS, CALLS + 1)[1:2])
    html = frame_for(
        giant,
        {"type": "agent.tool.completed", "run_id": "r", "tool_call_id": "call-5", "result": "ok"},
    )
    # Call 5 is not on the page: its batch's summary changes, no entry is sent.
    assert html.count("data-batch-summary") == 1 and html.count(ENTRY) == 0
    assert "call-5" not in html and "1 running" in html  # only the new call still runs
