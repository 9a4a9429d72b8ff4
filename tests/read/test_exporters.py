"""docs/events.md#exports exports: canonical messages JSON, raw events JSONL, OTLP/JSON GenAI
spans."""

from __future__ import annotations

import calendar
import hashlib
import io
import json
from datetime import UTC, datetime

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatui.importers import import_transcript
from chatui.ingest.service import ingest
from chatui.models import Conversation, Event
from chatui.read.exporters import (
    EXPORT_FORMATS,
    export_events,
    export_messages,
    export_otlp,
    export_text,
    unix_nanos,
)
from chatui.read.selectors import messages_of
from chatui.read.serializers import message_to_dict
from tests.support.fixtures import FIXTURES, load_fixture

IMPORTS = FIXTURES / "imports"


def messages(conversation) -> list[dict]:
    return [message_to_dict(m) for m in messages_of(conversation)]


def nanos(*moment: int) -> str:
    """Unix nanoseconds of a UTC date-time, computed independently of the exporter."""
    seconds = calendar.timegm(datetime(*moment[:6], tzinfo=UTC).utctimetuple())
    micro = moment[6] if len(moment) > 6 else 0
    return str(seconds * 1_000_000_000 + micro * 1_000)


def hex_id(*parts: str, size: int) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[: size * 2]


def spans_of(document: dict) -> list[dict]:
    (resource_spans,) = document["resourceSpans"]
    (scope_spans,) = resource_spans["scopeSpans"]
    return scope_spans["spans"]


def attrs(span: dict) -> dict:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


def by_name(spans: list[dict], name: str) -> dict:
    (span,) = [s for s in spans if s["name"] == name]
    return span


@pytest.fixture
def recorded(conversation) -> Conversation:
    ingest(conversation, load_fixture("recorded_run.json"))
    conversation.refresh_from_db()
    return conversation


@pytest.fixture
def nested(conversation) -> Conversation:
    """tests/fixtures/imports/chatui.jsonl: a completed run with a nested tool, a failed run."""
    import_transcript((IMPORTS / "chatui.jsonl").read_bytes(), "chatui", conversation)
    return conversation


# -- messages and events --------------------------------------------------------------


def test_export_messages_is_the_conversation_and_its_seed_000_messages(recorded):
    exported = export_messages(recorded)
    assert list(exported) == ["conversation", "messages", "notes"]
    assert exported["conversation"]["id"] == str(recorded.pk)
    assert exported["conversation"]["status"] == "completed"
    assert exported["conversation"]["last_seq"] == 21
    assert (
        exported["messages"]
        == json.loads((FIXTURES / "recorded_run.expected.json").read_text())["messages"]
    )
    assert json.loads(export_text(recorded, "messages")) == json.loads(
        json.dumps(exported, ensure_ascii=False)
    )


def test_export_events_is_one_event_per_line_in_seq_order(recorded):
    lines = export_text(recorded, "events").split("\n")
    assert lines[-1] == ""  # every line ends with a newline
    lines = [json.loads(line) for line in lines[:-1]]
    # Each event carries its proof; the signed checkpoints follow the events
    # (docs/auditing.md#verifying-an-export).
    events = [
        {key: value for key, value in line.items() if key != "chatui_proof"}
        for line in lines
        if "chatui_proof" in line
    ]
    assert [line["chatui_proof"]["seq"] for line in lines[:21]] == list(range(1, 22))
    assert all("chatui_checkpoint" in line for line in lines[21:]) and lines[21:]
    assert [e["event_id"] for e in events] == [f"rec-{n:02d}" for n in range(1, 22)]
    assert events[0] == {
        "type": "user.message",
        "event_id": "rec-01",
        "run_id": "run_1",
        "timestamp": "2026-11-02T09:00:01Z",
        "message_id": "msg_u1",
        "content": "What's in this repo, and does the test suite pass?",
    }
    # An aliased event is exported as what it was normalised to.
    assert events[6]["type"] == "agent.tool.started"
    assert list(export_events(recorded)) == events


def test_export_events_then_import_round_trips_for_the_recorded_run(recorded, user):
    fresh = Conversation.objects.create(owner=user)
    result = import_transcript(export_text(recorded, "events"), "chatui", fresh)
    assert (result.accepted, result.duplicates) == (21, 0)
    assert messages(fresh) == messages(recorded)
    fresh.refresh_from_db()
    assert (fresh.status, fresh.last_seq) == (recorded.status, recorded.last_seq)


@pytest.mark.parametrize(
    ("fmt", "name"),
    [
        ("openai", "openai.json"),
        ("anthropic", "anthropic.json"),
        ("agentspine", "../agentspine/as1_builtin_tools.jsonl"),
        ("chatui", "chatui.jsonl"),
        ("legacy", "legacy.json"),
    ],
)
def test_export_events_then_import_round_trips(fmt, name, user):
    source = Conversation.objects.create(owner=user)
    import_transcript((IMPORTS / name).read_bytes(), fmt, source)
    fresh = Conversation.objects.create(owner=user)
    import_transcript(export_text(source, "events"), "chatui", fresh)
    assert messages(fresh) == messages(source)


def test_export_events_without_ids_or_times_round_trips_and_reimports_as_duplicates(
    conversation, feed, user
):
    feed(
        {"type": "user.message", "content": "hi <img src=x onerror=alert(1)>\u2028there"},
        {"type": "agent.step.completed", "content": "hello"},
    )
    exported = export_text(conversation, "events")
    fresh = Conversation.objects.create(owner=user)
    import_transcript(exported, "chatui", fresh)
    assert messages(fresh) == messages(conversation)
    again = import_transcript(exported, "chatui", fresh)
    assert (again.accepted, again.duplicates) == (0, 2)


# -- OpenTelemetry ----------------------------------------------------------------------


def test_export_otlp_is_resource_scope_spans_with_one_span_per_run_and_tool(recorded):
    document = export_otlp(recorded)
    (resource_spans,) = document["resourceSpans"]
    assert resource_spans["resource"] == {
        "attributes": [{"key": "service.name", "value": {"stringValue": "chatui"}}]
    }
    (scope_spans,) = resource_spans["scopeSpans"]
    assert scope_spans["scope"] == {"name": "chatui.read.exporters", "version": "1"}
    assert [span["name"] for span in scope_spans["spans"]] == [
        "invoke_agent",
        "execute_tool list_files",
        "execute_tool read_file",
        "execute_tool run_cmd",
        "execute_tool run_cmd",
        "execute_tool web_fetch",
    ]
    assert json.loads(export_text(recorded, "otlp")) == document


def test_export_otlp_run_span_covers_first_to_last_event_with_status_and_usage(recorded):
    conversation_id = str(recorded.pk)
    run = spans_of(export_otlp(recorded))[0]
    assert run == {
        "traceId": hex_id("trace", conversation_id, "run_1", size=16),
        "spanId": hex_id("run", conversation_id, "run_1", size=8),
        "name": "invoke_agent",
        "kind": 1,
        "startTimeUnixNano": nanos(2026, 11, 2, 9, 0, 1),
        "endTimeUnixNano": nanos(2026, 11, 2, 9, 0, 21),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
            {"key": "gen_ai.conversation.id", "value": {"stringValue": conversation_id}},
            {"key": "gen_ai.usage.total_tokens", "value": {"intValue": "862"}},  # 212 + 650
            {"key": "chatui.run_id", "value": {"stringValue": "run_1"}},
            {"key": "chatui.run.status", "value": {"stringValue": "completed"}},
        ],
        "status": {"code": 1},
    }


def test_export_otlp_tool_span_is_child_of_its_run_from_started_to_completed(recorded):
    conversation_id = str(recorded.pk)
    spans = spans_of(export_otlp(recorded))
    assert spans[1] == {
        "traceId": hex_id("trace", conversation_id, "run_1", size=16),
        "spanId": hex_id("tool", conversation_id, "run_1", "call_1", size=8),
        "parentSpanId": hex_id("run", conversation_id, "run_1", size=8),
        "name": "execute_tool list_files",
        "kind": 1,
        "startTimeUnixNano": nanos(2026, 11, 2, 9, 0, 7),
        "endTimeUnixNano": nanos(2026, 11, 2, 9, 0, 8),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "list_files"}},
            {"key": "gen_ai.tool.call.id", "value": {"stringValue": "call_1"}},
            {"key": "gen_ai.conversation.id", "value": {"stringValue": conversation_id}},
            {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": '{"path": "."}'}},
            {
                "key": "gen_ai.tool.call.result",
                "value": {"stringValue": "README.md\npyproject.toml\nsrc/\ntests/"},
            },
            {"key": "chatui.run_id", "value": {"stringValue": "run_1"}},
            {"key": "chatui.tool.status", "value": {"stringValue": "success"}},
            {"key": "chatui.tool.outcome", "value": {"stringValue": "succeeded"}},
        ],
        "status": {"code": 1},
    }


def test_export_otlp_tool_error_is_error_status_with_the_message(recorded):
    failed = spans_of(export_otlp(recorded))[3]
    assert failed["name"] == "execute_tool run_cmd"
    assert failed["status"] == {"code": 2, "message": "1 test failed: test_parse (AssertionError)"}
    assert (failed["startTimeUnixNano"], failed["endTimeUnixNano"]) == (
        nanos(2026, 11, 2, 9, 0, 11),
        nanos(2026, 11, 2, 9, 0, 13),
    )
    values = attrs(failed)
    assert values["error.type"] == "_OTHER"
    assert values["chatui.tool.status"] == "error"
    assert values["chatui.tool.args_summary"] == "pytest -q"
    assert values["chatui.tool.duration_ms"] == "2300"
    assert "gen_ai.tool.call.result" not in values


def test_export_otlp_nested_tool_span_is_child_of_its_parent_tool_span(nested):
    conversation_id = str(nested.pk)
    spans = spans_of(export_otlp(nested))
    parent = by_name(spans, "execute_tool sessions_spawn")
    child = by_name(spans, "execute_tool search_logs")
    assert parent["parentSpanId"] == hex_id("run", conversation_id, "run_7f3a", size=8)
    assert child["parentSpanId"] == parent["spanId"]
    assert child["spanId"] == hex_id("tool", conversation_id, "run_7f3a", "tc_grep", size=8)
    assert child["traceId"] == parent["traceId"]
    assert attrs(child)["chatui.tool.parent_call_id"] == "tc_sub"
    assert (child["startTimeUnixNano"], child["endTimeUnixNano"]) == (
        nanos(2026, 5, 2, 8, 30, 2),
        nanos(2026, 5, 2, 8, 30, 3, 250_000),
    )


def test_export_otlp_each_run_is_its_own_trace(nested):
    conversation_id = str(nested.pk)
    runs = [s for s in spans_of(export_otlp(nested)) if s["name"] == "invoke_agent"]
    assert [s["traceId"] for s in runs] == [
        hex_id("trace", conversation_id, "run_7f3a", size=16),
        hex_id("trace", conversation_id, "run_8b41", size=16),
    ]
    assert all("parentSpanId" not in s for s in runs)
    assert {attrs(s)["gen_ai.conversation.id"] for s in runs} == {conversation_id}


def test_export_otlp_failed_run_is_error_and_its_unfinished_tool_is_unset_to_the_run_end(nested):
    spans = spans_of(export_otlp(nested))
    run = spans[-2]
    tool = spans[-1]
    assert run["name"] == "invoke_agent"
    assert run["status"] == {"code": 2, "message": "model request timed out after 30 s"}
    assert attrs(run)["error.type"] == "_OTHER"
    assert (run["startTimeUnixNano"], run["endTimeUnixNano"]) == (
        nanos(2026, 5, 2, 8, 41, 10),
        nanos(2026, 5, 2, 8, 41, 41),
    )
    assert tool["name"] == "execute_tool create_ticket"
    assert tool["status"] == {"code": 0}
    assert attrs(tool)["chatui.tool.status"] == "running"
    assert tool["startTimeUnixNano"] == nanos(2026, 5, 2, 8, 41, 11)
    assert tool["endTimeUnixNano"] == run["endTimeUnixNano"]


def test_export_otlp_tool_completed_without_start_begins_its_duration_earlier(conversation, feed):
    feed(
        {
            "type": "agent.status",
            "status": "running",
            "run_id": "r",
            "timestamp": "2026-01-01T00:00:00Z",
        },
        {
            "type": "agent.tool.completed",
            "run_id": "r",
            "timestamp": "2026-01-01T00:00:05.500Z",
            "tool_call_id": "c",
            "tool_name": "probe",
            "result": "ok",
            "duration_ms": 1500,
        },
    )
    tool = spans_of(export_otlp(conversation))[1]
    assert (tool["startTimeUnixNano"], tool["endTimeUnixNano"]) == (
        nanos(2026, 1, 1, 0, 0, 4),
        nanos(2026, 1, 1, 0, 0, 5, 500_000),
    )
    run = spans_of(export_otlp(conversation))[0]
    assert run["status"] == {"code": 0}  # still running
    assert "gen_ai.usage.total_tokens" not in attrs(run)


@pytest.mark.parametrize(
    ("duration", "tokens"),
    [
        pytest.param(int("9" * 400), int("9" * 4300), id="huge"),
        pytest.param(-1, -1, id="negative"),
        pytest.param("1500", "5", id="strings"),
        pytest.param(315_360_000_001, 10**12 + 1, id="over the limits"),
        pytest.param([1500], 2.0, id="list and float"),
    ],
)
def test_export_otlp_leaves_out_a_malformed_stored_duration_and_token_count(
    conversation, feed, duration, tokens
):
    """Old rows (written before ingest bounded numbers) export; the bad number is left out."""
    feed(
        {"type": "agent.status", "status": "running", "run_id": "r"},
        {
            "type": "agent.step.completed",
            "run_id": "r",
            "content": "",
            "tokens": 5,
            "message_id": "a1",
        },
        {
            "type": "agent.tool.completed",
            "run_id": "r",
            "timestamp": "2026-01-01T00:00:05Z",
            "tool_call_id": "c",
            "tool_name": "probe",
            "result": "ok",
            "duration_ms": 1500,
        },
    )
    tool_message = conversation.messages.get(tool_call_id="c")
    tool_message.metadata["tool_duration_ms"] = duration
    tool_message.save()
    step_message = conversation.messages.get(message_id="a1")
    step_message.metadata["tokens"] = tokens
    step_message.save()
    run, tool = spans_of(json.loads(export_text(conversation, "otlp")))
    assert "gen_ai.usage.total_tokens" not in attrs(run)
    assert "chatui.tool.duration_ms" not in attrs(tool)
    assert tool["startTimeUnixNano"] == tool["endTimeUnixNano"] == nanos(2026, 1, 1, 0, 0, 5)


def test_export_otlp_duration_reaching_before_the_year_1_starts_at_the_entry(conversation):
    """A completed-without-start tool near the year 1: its duration cannot be subtracted."""
    ingest(
        conversation,
        {
            "type": "agent.tool.completed",
            "run_id": "r",
            "timestamp": "0001-01-01T00:00:01Z",
            "tool_call_id": "c",
            "tool_name": "probe",
            "duration_ms": 315_360_000_000,
        },
    )
    (run, tool) = spans_of(export_otlp(conversation))
    assert tool["startTimeUnixNano"] == tool["endTimeUnixNano"] == run["startTimeUnixNano"]


def test_export_otlp_ids_are_deterministic_and_differ_between_conversations(recorded, user):
    assert export_otlp(recorded) == export_otlp(recorded)
    other = Conversation.objects.create(owner=user)
    ingest(other, load_fixture("recorded_run.json"))
    mine, theirs = spans_of(export_otlp(recorded)), spans_of(export_otlp(other))
    assert [s["name"] for s in mine] == [s["name"] for s in theirs]
    assert not {s["spanId"] for s in mine} & {s["spanId"] for s in theirs}
    assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in mine)


def test_export_otlp_of_an_empty_conversation_has_no_spans(conversation):
    assert spans_of(export_otlp(conversation)) == []


def test_unix_nanos_is_exact_to_the_microsecond():
    moment = datetime(2026, 11, 2, 9, 0, 1, 123_457, tzinfo=UTC)
    assert unix_nanos(moment) == 1_793_610_001_123_457_000


def test_exporters_only_read(recorded):
    with CaptureQueriesContext(connection) as queries:
        for fmt in EXPORT_FORMATS:
            export_text(recorded, fmt)
    statements = [q["sql"].split()[0].upper() for q in queries.captured_queries]
    # PostgreSQL streams `.iterator()` through a server-side cursor: DECLARE … FOR SELECT.
    assert "SELECT" in statements and set(statements) <= {"SELECT", "DECLARE"}


# -- the command --------------------------------------------------------------------------


def run_export(*args) -> str:
    out = io.StringIO()
    call_command("export_transcript", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.mark.parametrize("fmt", list(EXPORT_FORMATS))
def test_export_transcript_command_writes_the_format_to_stdout(fmt, recorded):
    assert run_export(str(recorded.pk), "--format", fmt) == export_text(recorded, fmt)


def test_export_transcript_command_writes_to_a_file(recorded, tmp_path):
    path = tmp_path / "out.jsonl"
    assert run_export(str(recorded.pk), "--format", "events", "--output", str(path)) == ""
    assert path.read_text(encoding="utf-8") == export_text(recorded, "events")


def test_export_then_import_through_the_commands_gives_equal_messages(recorded, tmp_path):
    path = tmp_path / "events.jsonl"
    run_export(str(recorded.pk), "--format", "events", "--output", str(path))
    out = io.StringIO()
    call_command(
        "import_transcript", str(path), "--format", "chatui", "--owner", "alice",
        stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    fresh = Conversation.objects.get(pk=out.getvalue().strip().splitlines()[-1])
    assert fresh.pk != recorded.pk
    assert messages(fresh) == messages(recorded)
    assert Event.objects.filter(conversation=fresh).count() == 21


@pytest.mark.parametrize(
    ("conversation_id", "message"),
    [
        ("nope", "'nope' is not a conversation id"),
        ("00000000-0000-0000-0000-000000000000", "no conversation 00000000-"),
    ],
)
def test_export_transcript_command_refuses_unknown_conversations(conversation_id, message, db):
    with pytest.raises(CommandError, match=message):
        run_export(conversation_id, "--format", "messages")
