"""docs/events.md#ag-ui: a runtime tees its AG-UI stream to `POST …/events` — as JSON (one
event, an array, `{"events": [...]}`) or as the SSE text itself — and every delivery
renders the same; bad input is a 400 naming index and field, with nothing written;
authorisation as for every event."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from django.test import Client

from chatui.models import ApiToken, Conversation, Event
from chatui.templatetags.chatui_icons import ICONS
from tests.support.agui import capture, captures, comparable, sse_text, tools, transcript

SSE = "text/event-stream"

#: chatui's own W7 icons (chatui/icons/): no text of a transcript can make one.
OUR_ICON_CLASSES = {f"icon icon--{path.stem}" for path in ICONS.glob("*.svg")}


def post_sse(api, conversation: Conversation, text: str, content_type: str = SSE):
    return api.client.post(
        f"/api/v1/conversations/{conversation.pk}/events",
        data=text.encode(),
        content_type=content_type,
        headers=api.headers,
    )


def page(client: Client, conversation: Conversation) -> str:
    response = client.get(f"/c/{conversation.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def shown(client: Client, conversation: Conversation) -> str:
    """The transcript as the page shows it, the conversation's id and the rows' keys in
    DOM ids (`m-12`, `b-3`) blanked: two conversations hold the same messages under other
    keys."""
    response = client.get(f"/c/{conversation.pk}/transcript")
    assert response.status_code == 200
    html = response.content.decode().replace(str(conversation.pk), "#")
    return re.sub(r'(["#\s])([a-z]+)-\d+\b', r"\1\2-N", html)


@pytest.fixture
def owner_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("name", captures())
def test_a_capture_pushed_as_json_and_as_sse_renders_the_same(api, user, owner_client, name):
    as_json = Conversation.objects.create(owner=user, title=name)
    as_sse = Conversation.objects.create(owner=user, title=name)
    answer = api.post_events(as_json, capture(name))
    assert answer.status_code == 200, answer.content
    answer = post_sse(api, as_sse, sse_text(name))
    assert answer.status_code == 200, answer.content
    assert answer.json()["accepted"] == len(capture(name))
    assert comparable(transcript(as_json)) == comparable(transcript(as_sse))
    if name.startswith("pydantic_ai"):  # timestamps from the events: the very same HTML
        assert shown(owner_client, as_json) == shown(owner_client, as_sse)


def test_one_event_an_array_and_an_events_object_are_each_accepted(api, conversation):
    events = capture("pydantic_ai")
    assert api.post_events(conversation, events[0]).json()["accepted"] == 1
    assert api.post_events(conversation, events[1:10]).json()["accepted"] == 9
    assert api.post_events(conversation, {"events": events[10:]}).json()["accepted"] == len(
        events[10:]
    )
    assert tools(conversation)["call_cmd_2"].metadata["attempt"] == 2


def test_rel1_the_same_stream_teed_twice_changes_nothing(api, conversation):
    post_sse(api, conversation, sse_text("pydantic_ai"))
    before = transcript(conversation)
    again = post_sse(api, conversation, sse_text("pydantic_ai")).json()
    assert again["duplicates"] > 0
    assert transcript(conversation) == before


def test_g14_the_page_shows_the_failed_attempt_and_its_successful_retry(
    api, conversation, owner_client
):
    post_sse(api, conversation, sse_text("pydantic_ai"))
    html = page(owner_client, conversation)
    assert "failed once, succeeded on 2/3" in html
    assert "12 passed" in html


class _Markup(HTMLParser):
    """What a page holds that could run: inline scripts, handlers, javascript: links."""

    def __init__(self) -> None:
        super().__init__()
        self.active: list[str] = []
        self._script = False

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.active.append(f"<{tag} {name}={value}>")
        if tag == "script":
            self._script = not dict(attrs).get("src")
        own_icon = tag == "svg" and dict(attrs).get("class") in OUR_ICON_CLASSES  # W7
        if tag in ("img", "svg", "iframe") and not own_icon:
            self.active.append(f"<{tag}>")

    def handle_endtag(self, tag):
        if tag == "script":
            self._script = False

    def handle_data(self, data):
        if self._script and "alert" in data:
            self.active.append(data)


@pytest.mark.parametrize("name", ["pydantic_ai", "langgraph"])
def test_t1_sec1_hostile_text_args_and_results_of_a_real_stream_render_inert(
    api, conversation, owner_client, name
):
    post_sse(api, conversation, sse_text(name))
    html = page(owner_client, conversation)
    markup = _Markup()
    markup.feed(html)
    assert markup.active == []
    assert "&lt;script&gt;alert(&#x27;readme&#x27;)&lt;/script&gt;" in html  # shown, escaped
    assert "javascript:alert(3)" not in html.replace("[details](javascript:alert(3))", "")


def test_t1_hostile_tool_names_and_ids_render_inert(api, conversation, owner_client):
    name = "<img src=x onerror=alert('name')>"
    call = '"><script>alert(1)</script>'
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": name},
        {"type": "TOOL_CALL_RESULT", "toolCallId": call, "messageId": "m",
         "content": "<svg onload=alert(2)>"},
        {"type": "STEP_STARTED", "stepName": "<script>alert('step')</script>"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1",
         "delta": "<img src=x onerror=alert(4)>"},
    ]  # fmt: skip
    assert api.post_events(conversation, events).status_code == 200
    markup = _Markup()
    markup.feed(page(owner_client, conversation))
    assert markup.active == []


def test_r6_reasoning_shows_as_a_muted_block_before_the_answer(api, conversation, owner_client):
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "timestamp": 1_000_000},
        {
            "type": "REASONING_MESSAGE_CONTENT",
            "messageId": "r1",
            "delta": "Weighing <options>",
            "timestamp": 1_000_000,
        },
        {"type": "REASONING_END", "messageId": "r1", "timestamp": 1_004_000},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a1", "delta": "The answer"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    api.post_events(conversation, events)
    html = page(owner_client, conversation)
    block = html.index("data-reasoning")
    assert block < html.index("The answer")
    assert "Thought for 4 s" in html and "Weighing &lt;options&gt;" in html


def test_sec6_bad_event_in_sse_is_400_naming_index_and_field_and_nothing_is_written(
    api, conversation
):
    text = sse_text("pydantic_ai").replace('"toolCallName":"run_cmd"', '"toolCallName":7', 1)
    answer = post_sse(api, conversation, text)
    assert answer.status_code == 400
    body = answer.json()
    assert body["field"] == "toolCallName" and body["index"] == 10
    assert "TOOL_CALL_START" in body["error"]
    assert not Event.objects.filter(conversation=conversation).exists()


@pytest.mark.parametrize(
    ("body", "index"),
    [
        ("data: {}\n\ndata: {not json\n\n", 1),
        (": nothing but a comment\n\n", None),
        ("   ", None),
    ],
)
def test_sec6_sse_that_is_not_events_is_400(api, conversation, body, index):
    answer = post_sse(api, conversation, body)
    assert answer.status_code == 400
    assert answer.json().get("index") == index
    assert not Event.objects.filter(conversation=conversation).exists()


def test_sec6_bad_json_agui_event_names_the_camelcase_field(api, conversation):
    answer = api.post_events(
        conversation,
        [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
            {
                "type": "MESSAGES_SNAPSHOT",
                "messages": [{"id": "t", "role": "tool", "content": "x"}],
            },
        ],
    )
    assert answer.status_code == 400
    assert answer.json()["index"] == 1 and answer.json()["field"] == "messages[0].toolCallId"


def test_sse_with_a_charset_parameter_is_read_too(api, conversation):
    answer = post_sse(api, conversation, sse_text("pydantic_ai"), SSE + "; charset=utf-8")
    assert answer.status_code == 200


def test_sec5_sse_needs_a_token_and_a_conversation_the_caller_may_write(
    api, conversation, other_user
):
    anonymous = Client().post(
        f"/api/v1/conversations/{conversation.pk}/events",
        data=sse_text("pydantic_ai").encode(),
        content_type=SSE,
    )
    assert anonymous.status_code == 401
    _, raw = ApiToken.issue(other_user)
    intruder = Client().post(
        f"/api/v1/conversations/{conversation.pk}/events",
        data=sse_text("pydantic_ai").encode(),
        content_type=SSE,
        headers={"Authorization": f"Bearer {raw}"},
    )
    assert intruder.status_code == 404
    bad = Client().post(
        f"/api/v1/conversations/{conversation.pk}/events",
        data=b"data: {nope\n\n",
        content_type=SSE,
        headers={"Authorization": f"Bearer {raw}"},
    )
    assert bad.status_code == 404  # not yours: 404 whatever the body
    assert not Event.objects.filter(conversation=conversation).exists()


def test_sec6_runtime_may_not_take_an_agui_id_for_a_native_event(api, conversation):
    answer = api.post_events(
        conversation, {"type": "user.message", "content": "x", "event_id": "agui:RUN_STARTED:r:1"}
    )
    assert answer.status_code == 400 and answer.json()["field"] == "event_id"


def test_exported_events_of_an_agui_conversation_import_back_the_same(api, user, conversation):
    from chatui.importers import import_transcript
    from chatui.read.exporters import export_text

    post_sse(api, conversation, sse_text("langgraph"))
    copy = Conversation.objects.create(owner=user, title="copy")
    import_transcript(export_text(conversation, "events"), "chatui", copy)
    assert comparable(transcript(copy)) == comparable(transcript(conversation))
    assert json.dumps(comparable(transcript(copy)))


def test_sec6_an_interrupts_tool_call_id_no_column_holds_is_400_naming_it(api, conversation):
    """A RUN_FINISHED interrupt's toolCallId keys an approval row: past its column it is
    refused by name on every database, and nothing is written (the fuzz's find on
    PostgreSQL, where the row's varchar(200) refused it as a 500)."""
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {
            "type": "interrupt",
            "interrupts": [{"id": "i1", "reason": "tool_call", "toolCallId": "x" * 250}],
        }},
    ]  # fmt: skip
    answer = api.post_events(conversation, events)
    assert answer.status_code == 400
    body = answer.json()
    assert (body["index"], body["field"]) == (1, "outcome.interrupts[0].toolCallId")
    assert not Event.objects.filter(conversation=conversation).exists()
