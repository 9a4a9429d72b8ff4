"""docs/events.md#importers, #ag-ui: the `agui` import format — JSONL or the SSE text an
agent streamed — through the same translator as the events endpoint."""

from __future__ import annotations

import pytest

from chatui.importers import TranscriptError, import_transcript
from chatui.ingest.service import ingest
from chatui.models import Conversation, Event
from tests.support.agui import AGUI, capture, captures, comparable, transcript


@pytest.mark.parametrize("name", captures())
def test_a_capture_imports_as_jsonl_and_as_sse_as_it_pushes(user, name):
    pushed, jsonl, sse = (Conversation.objects.create(owner=user) for _ in range(3))
    ingest(pushed, capture(name))
    import_transcript((AGUI / f"{name}.jsonl").read_bytes(), "agui", jsonl)
    import_transcript((AGUI / f"{name}.sse").read_bytes(), "agui", sse)
    assert comparable(transcript(jsonl)) == comparable(transcript(pushed))
    assert comparable(transcript(sse)) == comparable(transcript(pushed))


def test_imported_events_are_logged_as_sent_under_the_files_ids(conversation):
    result = import_transcript((AGUI / "pydantic_ai.sse").read_bytes(), "agui", conversation)
    logged = list(Event.objects.filter(conversation=conversation).order_by("seq"))
    assert [row.payload for row in logged] == capture("pydantic_ai")
    assert all(row.event_id.startswith("import:") for row in logged)
    assert result.run_id == ""  # the file's runs are its own


def test_importing_an_sse_file_twice_is_all_duplicates(conversation):
    raw = (AGUI / "langgraph.sse").read_bytes()
    first = import_transcript(raw, "agui", conversation)
    again = import_transcript(raw, "agui", conversation)
    assert (again.accepted, again.duplicates) == (0, first.events)


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b'{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n{"type": "agent_start"}\n',
         "line 2: not an AG-UI event (type 'agent_start')"),
        (b'data: {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n\ndata: [1]\n\n',
         "SSE event 1: each event must be a JSON object"),
        (b'data: {"type": "TOOL_CALL_START", "toolCallId": "c"}\n\n',
         "SSE event 0: AG-UI TOOL_CALL_START event: field 'toolCallName': Field required"),
        (b": just a comment\n\n", "the file holds no events"),
    ],
)  # fmt: skip
def test_a_bad_agui_file_is_refused_naming_the_line_or_event(conversation, raw, says):
    with pytest.raises(TranscriptError) as caught:
        import_transcript(raw, "agui", conversation)
    assert str(caught.value) == says
    assert not Event.objects.filter(conversation=conversation).exists()
