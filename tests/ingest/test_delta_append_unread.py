"""docs/PERFORMANCE.md#p2, #p5: a lone delta to an answer the page shows streaming is appended by
one UPDATE that finds the message itself (no read first). It must store and announce
exactly what the read-then-append did: text appended only to an unfinished assistant
answer, sent as just its text only when the page shows the answer streaming."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatui.ingest.service import IngestResult, reproject
from chatui.ingest.service import ingest as ingest_uncommitted
from chatui.models import Message

RUN = "r1"


def delta(message_id: str, text: str) -> dict[str, Any]:
    return {"type": "agent.message.delta", "run_id": RUN, "message_id": message_id, "delta": text}


def stored(conversation) -> list[tuple]:
    return list(
        Message.objects.filter(conversation=conversation)
        .order_by("position")
        .values_list("message_id", "role", "content", "is_final", "updated_seq")
    )


@pytest.fixture
def ingest(django_capture_on_commit_callbacks):
    """`ingest` with its on-commit work run, as after a real commit: the process then
    knows the run (`projection.known_runs`), as it does for every event after a run's
    first."""

    def committed(conversation, body) -> IngestResult:
        with django_capture_on_commit_callbacks(execute=True):
            return ingest_uncommitted(conversation, body)

    return committed


@pytest.fixture
def running(conversation, ingest):
    ingest(conversation, {"type": "user.message", "run_id": RUN, "content": "hi"})
    ingest(conversation, {"type": "agent.status", "run_id": RUN, "status": "running"})
    return conversation


@pytest.mark.parametrize(
    ("first", "appended"),
    [
        ("Hello", True),
        ("  \t\n", False),  # blank so far: rendered whole
        ("\u3000\u2028 {", False),  # JSON-like after what str.lstrip strips
        (" [1,", False),
        ("\u200bword", True),  # a zero-width space is no whitespace to str.isspace
        ("x" * 70, True),
    ],
)
def test_p5_a_lone_delta_is_appended_and_announced_as_before(running, ingest, first, appended):
    ingest(running, delta("a1", first))
    result = ingest(running, delta("a1", " more"))
    pk = Message.objects.get(conversation=running, message_id="a1").pk
    assert result.changes.changed == {pk: result.last_seq}
    assert (pk in result.changes.appended) is appended
    if appended:
        assert result.changes.appended[pk] == [(result.last_seq, " more")]
    assert stored(running)[-1] == ("a1", "assistant", first + " more", False, result.last_seq)


def test_p2_a_lone_delta_to_a_streaming_answer_runs_one_message_statement(running, ingest):
    ingest(running, delta("a1", "Hello"))
    with CaptureQueriesContext(connection) as captured:
        ingest(running, delta("a1", " world"))
    on_messages = [q["sql"] for q in captured.captured_queries if "chatui_message" in q["sql"]]
    assert len(on_messages) == 1 and on_messages[0].startswith("UPDATE")


def test_a_delta_to_a_finished_or_other_message_changes_nothing(running, ingest):
    ingest(running, delta("a1", "Done"))
    ingest(running, {"type": "agent.step.completed", "run_id": RUN, "message_id": "a1",
                     "content": "Done."})  # fmt: skip
    user_message = Message.objects.get(conversation=running, role="user").message_id
    before = stored(running)
    for message_id in ("a1", user_message):
        result = ingest(running, delta(message_id, " late"))
        assert result.accepted == 1 and not result.changes.changed
    assert stored(running) == before


def test_p2_lone_deltas_store_what_a_reprojection_gives(running, ingest):
    for message_id, text in [("a1", " "), ("a1", "Hi"), ("a2", "{"), ("a2", "x"), ("a1", "!")]:
        ingest(running, delta(message_id, text))
    ingest(running, {"type": "agent.status", "run_id": RUN, "status": "completed"})
    live = stored(running)
    reproject(running)
    assert stored(running) == live


def agui_delta(message_id: str, text: str) -> dict[str, Any]:
    return {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": text}


def test_p5_an_agui_text_delta_takes_the_same_one_statement_append(conversation, ingest):
    """docs/events.md#ag-ui, docs/PERFORMANCE.md#agui-cpu: AG-UI's content delta too."""
    ingest(conversation, {"type": "RUN_STARTED", "threadId": "t", "runId": RUN})
    ingest(conversation, agui_delta("a1", "Hello"))
    with CaptureQueriesContext(connection) as captured:
        result = ingest(conversation, agui_delta("a1", " world"))
    on_messages = [q["sql"] for q in captured.captured_queries if "chatui_message" in q["sql"]]
    assert len(on_messages) == 1 and on_messages[0].startswith("UPDATE")
    pk = Message.objects.get(conversation=conversation, message_id="a1").pk
    assert result.changes.appended[pk] == [(result.last_seq, " world")]
    ingest(conversation, {"type": "TEXT_MESSAGE_START", "messageId": "u1", "role": "user"})
    ingest(conversation, agui_delta("u1", "a user's"))
    ingest(conversation, agui_delta("u1", " words"))  # not an answer: the usual way
    live = stored(conversation)
    assert live[-1][:3] == ("u1", "user", "a user's words")
    reproject(conversation)
    assert stored(conversation) == live
