"""docs/events.md#importers importers and T2: files → events → `ingest` → the expected messages.

Each sample in tests/fixtures/imports/ imports to its committed
`<format>.expected.json`. Regenerate those after an intended change with
`CHATUI_UPDATE_GOLDEN=1 pytest tests/importers/test_importers.py` and review the diff.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re

import pytest
from django.core.management import CommandError, call_command
from django.template.loader import render_to_string

from chatui.importers import IMPORT_FORMATS, TranscriptError, import_transcript, parse_transcript
from chatui.ingest.dialects.legacy import blocks_of, parse_call
from chatui.ingest.service import reproject
from chatui.models import Conversation, Event, Message, Run
from chatui.read.presenters import present_transcript
from chatui.read.selectors import messages_of
from chatui.read.serializers import message_to_dict
from tests.support.fixtures import FIXTURES
from tests.support.importer_files import (
    HOSTILE_FILES,
    spy_on_parser,
)

IMPORTS = FIXTURES / "imports"
SAMPLES = {
    "openai": "openai.json",
    "anthropic": "anthropic.json",
    # The real capture (tests/fixtures/agentspine/), not an invented one.
    "agentspine": "../agentspine/as1_builtin_tools.jsonl",
    "chatui": "chatui.jsonl",
    "legacy": "legacy.json",
    # A real capture (tests/fixtures/agui/): Pydantic AI's AG-UI stream.
    "agui": "../agui/pydantic_ai.jsonl",
}
#: Formats whose runs are the file's own (chatui.importers.FILE_RUNS).
ONE_RUN_FORMATS = [fmt for fmt in SAMPLES if fmt not in ("chatui", "agui")]


def messages(conversation) -> list[dict]:
    return [message_to_dict(m) for m in messages_of(conversation)]


def sample(fmt: str) -> bytes:
    return (IMPORTS / SAMPLES[fmt]).read_bytes()


def tool(conversation, call_id: str) -> dict:
    return message_to_dict(Message.objects.get(conversation=conversation, tool_call_id=call_id))


def tools(conversation) -> list[dict]:
    return [m for m in messages(conversation) if m["role"] == "tool"]


def imported(conversation, fmt: str, document) -> list[dict]:
    text = document if isinstance(document, str) else json.dumps(document)
    import_transcript(text, fmt, conversation)
    return messages(conversation)


def prefix_of(raw: bytes) -> str:
    return "import:" + hashlib.sha256(raw).hexdigest()[:12]


# -- every format ---------------------------------------------------------------


def test_every_format_has_a_sample():
    assert set(SAMPLES) == set(IMPORT_FORMATS)


@pytest.mark.parametrize("fmt", SAMPLES)
def test_imported_sample_equals_its_expected_messages(fmt, conversation):
    import_transcript(sample(fmt), fmt, conversation)
    expected = IMPORTS / f"{fmt}.expected.json"
    if os.environ.get("CHATUI_UPDATE_GOLDEN"):
        expected.write_text(json.dumps(messages(conversation), indent=2, ensure_ascii=False) + "\n")
    assert messages(conversation) == json.loads(expected.read_text())


@pytest.mark.parametrize("fmt", SAMPLES)
def test_import_same_file_twice_is_all_duplicates(fmt, conversation):
    first = import_transcript(sample(fmt), fmt, conversation)
    before = messages(conversation)
    again = import_transcript(sample(fmt), fmt, conversation)
    assert first.accepted == first.events > 0
    assert (again.accepted, again.duplicates) == (0, first.events)
    assert messages(conversation) == before


@pytest.mark.parametrize("fmt", SAMPLES)
def test_import_is_reproducible_in_another_conversation(fmt, user):
    one = Conversation.objects.create(owner=user)
    two = Conversation.objects.create(owner=user)
    import_transcript(sample(fmt), fmt, one)
    import_transcript(sample(fmt), fmt, two)
    assert messages(one) == messages(two)
    assert list(Event.objects.filter(conversation=one).values_list("event_id", "body_hash")) == (
        list(Event.objects.filter(conversation=two).values_list("event_id", "body_hash"))
    )


@pytest.mark.parametrize("fmt", SAMPLES)
def test_imported_conversation_reprojects_to_the_same_messages(fmt, conversation):
    import_transcript(sample(fmt), fmt, conversation)
    before = messages(conversation)
    reproject(conversation)
    assert messages(conversation) == before


@pytest.mark.parametrize("fmt", ONE_RUN_FORMATS)
def test_import_is_one_run_that_ends_completed(fmt, conversation):
    result = import_transcript(sample(fmt), fmt, conversation)
    prefix = prefix_of(sample(fmt))
    assert result.run_id == prefix
    assert list(Run.objects.filter(conversation=conversation).values_list("run_id", "status")) == [
        (prefix, "completed")
    ]
    events = list(Event.objects.filter(conversation=conversation).order_by("seq"))
    assert {event.run_id for event in events} == {prefix}
    assert (events[0].type, events[0].payload) == ("agent.status", {"status": "running"})
    assert (events[-1].type, events[-1].payload) == ("agent.status", {"status": "completed"})
    conversation.refresh_from_db()
    assert conversation.status == "completed"


@pytest.mark.parametrize("fmt", ONE_RUN_FORMATS)
def test_import_event_ids_are_derived_from_the_file(fmt, conversation):
    import_transcript(sample(fmt), fmt, conversation)
    prefix = prefix_of(sample(fmt))
    ids = list(Event.objects.filter(conversation=conversation).values_list("event_id", flat=True))
    assert ids == [f"{prefix}:{n}" for n in range(1, len(ids) + 1)]


def test_import_undated_file_gets_fixed_timestamps_one_second_per_message(conversation):
    # openai.json has no times: the run starts at 2000-01-01, each message a second later,
    # and the events of one message (a step and its tool starts) share its time.
    import_transcript(sample("openai"), "openai", conversation)
    events = list(Event.objects.filter(conversation=conversation).order_by("seq"))
    stamps = [(event.type, event.timestamp.isoformat()) for event in events[:6]]
    assert stamps == [
        ("agent.status", "2000-01-01T00:00:00+00:00"),
        ("user.message", "2000-01-01T00:00:01+00:00"),
        ("agent.step.completed", "2000-01-01T00:00:02+00:00"),
        ("agent.tool.started", "2000-01-01T00:00:02+00:00"),
        ("agent.tool.started", "2000-01-01T00:00:02+00:00"),
        ("agent.tool.completed", "2000-01-01T00:00:03+00:00"),
    ]
    assert events[-1].timestamp.isoformat() == "2000-01-01T00:00:10+00:00"


def test_import_uses_timestamps_from_the_source(conversation):
    import_transcript(sample("legacy"), "legacy", conversation)
    first_user, first_assistant = messages(conversation)[:2]
    assert first_user["timestamp"] == "2025-11-03T10:00:00Z"
    assert first_assistant["timestamp"] == "2025-11-03T10:00:09Z"
    run = Run.objects.get(conversation=conversation)
    assert run.started_at.isoformat() == "2025-11-03T10:00:00+00:00"


def test_import_accepts_text_bytes_and_file_objects(user):
    raw = sample("openai")
    results = []
    for source in (raw, raw.decode(), io.BytesIO(raw), io.StringIO(raw.decode())):
        conversation = Conversation.objects.create(owner=user)
        import_transcript(source, "openai", conversation)
        results.append(messages(conversation))
    assert results[0] == results[1] == results[2] == results[3]


HOSTILE = {
    "openai": "no matches <script>alert('pwned')</script> @everyone",
    "anthropic": '{"incidents": []}\n<!-- fetched 2.1 KB --><img src=x onerror=alert(1)>',
    "agentspine": "line 3: contact @alice:example.org",
    "chatui": "Retry the ticket with my token: @alice <img src=x onerror=alert(1)>",
    "legacy": "What did you run last week? <script>alert('user')</script>",
    "agui": "<script>alert('readme')</script>\n<img src=x onerror=\"alert(1)\">",
}


@pytest.mark.parametrize("fmt", SAMPLES)
def test_import_stores_hostile_content_unchanged(fmt, conversation):
    import_transcript(sample(fmt), fmt, conversation)
    contents = [m["content"] for m in messages(conversation)]
    assert any(HOSTILE[fmt] in content for content in contents)
    assert not any("&lt;" in content or "&amp;" in content for content in contents)


@pytest.mark.sqlite_only(
    reason="PostgreSQL text cannot hold U+0000; there it is stored as U+FFFD "
    "(tests/cluster/test_postgres_ingest.py::test_nul_is_stored_as_replacement_character)"
)
def test_import_hostile_strings_round_trip_exactly(conversation):
    nasty = (
        "<script>alert(1)</script> {{ request }} {% csrf_token %} hx-get=/x "
        'onerror="x" javascript:alert(1) @channel &amp; \u2028 \x7f ‮rtl'
    )
    document = [
        {"role": "user", "content": nasty},
        {
            "role": "assistant",
            "content": nasty,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": nasty},
    ]
    result = [m["content"] for m in imported(conversation, "openai", document)]
    assert result == [nasty, nasty, nasty]


# -- openai ---------------------------------------------------------------------


def test_import_openai_tool_calls_become_tool_entries_matched_by_id(conversation):
    import_transcript(sample("openai"), "openai", conversation)
    entry = tool(conversation, "call_7QvLxW2mR9d1")
    assert entry["metadata"]["tool_name"] == "read_file"
    assert entry["metadata"]["args"] == {"path": "Makefile"}
    assert entry["metadata"]["tool_status"] == "success"
    assert entry["content"].startswith("test: install\n")


def test_import_openai_arguments_that_are_not_json_stay_as_args_summary(conversation):
    import_transcript(sample("openai"), "openai", conversation)
    entry = tool(conversation, "call_Lm5e1Bv7Nq3c")
    assert "args" not in entry["metadata"]
    assert entry["metadata"]["args_summary"] == '{"pattern": "yaml", "path": "pyproject.toml"'


def test_import_openai_tool_error_text_is_output_since_the_format_has_no_error_flag(
    conversation,
):
    import_transcript(sample("openai"), "openai", conversation)
    entry = tool(conversation, "call_Rk2w9Yq4Tt5e")
    assert entry["metadata"]["tool_status"] == "success"
    assert entry["content"].startswith("Error: command exited with status 2")


def test_import_openai_system_prompt_and_image_parts_are_skipped_and_counted(conversation):
    result = import_transcript(sample("openai"), "openai", conversation)
    assert result.skipped == {"system message": 1, "image_url content part": 1}
    assert messages(conversation)[0]["content"].endswith("\n\n[image]")
    assert "skipped 1 × image_url content part, 1 × system message" in result.summary()


def test_import_openai_unanswered_call_stays_queued(conversation):
    document = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "g", "arguments": ""}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "done"},
    ]
    imported(conversation, "openai", document)
    assert tool(conversation, "a")["metadata"]["tool_status"] == "success"
    assert tool(conversation, "b")["metadata"]["tool_status"] == "queued"


def test_import_openai_reused_call_ids_get_a_numbered_suffix(conversation):
    def call(text):
        return {
            "role": "assistant",
            "content": text,
            "tool_calls": [
                {"id": "call_0", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        }

    document = [
        {"role": "user", "content": "twice"},
        call("first"),
        {"role": "tool", "tool_call_id": "call_0", "content": "one"},
        call("second"),
        {"role": "tool", "tool_call_id": "call_0", "content": "two"},
    ]
    imported(conversation, "openai", document)
    assert [(t["metadata"]["tool_call_id"], t["content"]) for t in tools(conversation)] == [
        ("call_0", "one"),
        ("call_0~2", "two"),
    ]


def test_import_openai_deprecated_function_call_is_one_tool_call(conversation):
    document = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "weather", "arguments": '{"city": "Oslo"}'},
        },
        {"role": "function", "name": "weather", "content": "-3 °C"},
    ]
    imported(conversation, "openai", document)
    (entry,) = tools(conversation)
    assert entry["metadata"]["tool_name"] == "weather"
    assert entry["metadata"]["args"] == {"city": "Oslo"}
    assert (entry["content"], entry["metadata"]["tool_status"]) == ("-3 °C", "success")


# -- anthropic ------------------------------------------------------------------


def test_import_anthropic_is_error_becomes_tool_error(conversation):
    import_transcript(sample("anthropic"), "anthropic", conversation)
    entry = tool(conversation, "toolu_01B7xkPq2Lz3mN4vR5sT6uW")
    assert entry["metadata"]["tool_status"] == "error"
    assert entry["metadata"]["tool_error"] == "PagerDuty API error 503: service unavailable"
    assert "tool_result" not in entry["metadata"]
    assert entry["content"] == "PagerDuty API error 503: service unavailable"


def test_import_anthropic_tool_use_input_becomes_args_and_results_match_by_id(conversation):
    import_transcript(sample("anthropic"), "anthropic", conversation)
    entry = tool(conversation, "toolu_01A09q90qw90lq917835lq9")
    assert entry["metadata"]["args"] == {"ref": "v2.4.1"}
    assert entry["content"] == "pipeline #4812: passed (build, unit, e2e)"


def test_import_anthropic_thinking_and_system_are_skipped_and_counted(conversation):
    result = import_transcript(sample("anthropic"), "anthropic", conversation)
    assert result.skipped == {"system prompt": 1, "thinking block": 1}
    assert not any("CI status and open incidents" in m["content"] for m in messages(conversation))


def test_import_anthropic_usage_becomes_step_tokens(conversation):
    import_transcript(sample("anthropic"), "anthropic", conversation)
    assistant = [m for m in messages(conversation) if m["role"] == "assistant"]
    assert [m["metadata"]["tokens"] for m in assistant] == [812 + 96, 1020 + 61, 1188 + 143]


def test_import_anthropic_user_text_after_tool_results_is_a_user_message(conversation):
    import_transcript(sample("anthropic"), "anthropic", conversation)
    roles = [(m["role"], m["content"][:20]) for m in messages(conversation)]
    assert roles[-3:] == [
        ("tool", '{"incidents": []}\n<!'),
        ("user", "Also, what about the"),
        ("assistant", "Yes, it looks safe:\n"),
    ]


def test_import_anthropic_is_error_without_text_still_fails_the_tool(conversation):
    document = {
        "messages": [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "probe", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True}],
            },
        ]
    }
    imported(conversation, "anthropic", document)
    entry = tool(conversation, "t1")
    assert (entry["metadata"]["tool_status"], entry["content"]) == ("error", "tool failed")


# -- agentspine -----------------------------------------------------------------


def test_import_agentspine_args_json_string_becomes_args(conversation):
    import_transcript(sample("agentspine"), "agentspine", conversation)
    assert tool(conversation, "call_cmd")["metadata"]["args"] == {
        "command": "echo building; echo oops >&2; exit 3"
    }


def test_import_agentspine_exit_code_suffix_is_an_error(conversation):
    import_transcript(sample("agentspine"), "agentspine", conversation)
    entry = tool(conversation, "call_cmd")
    assert entry["metadata"]["tool_status"] == "error"
    assert entry["metadata"]["tool_error"].endswith("[exit code: 3]")


def test_import_agentspine_error_prefix_is_an_error(conversation):
    import_transcript(sample("agentspine"), "agentspine", conversation)
    entry = tool(conversation, "call_missing")
    assert (entry["metadata"]["tool_status"], entry["content"]) == (
        "error",
        "Error: file not found: /ws/missing.txt",
    )


def test_import_agentspine_result_preview_is_the_result_marked_as_preview(conversation):
    import_transcript(sample("agentspine"), "agentspine", conversation)
    entry = tool(conversation, "call_read")
    assert entry["content"].startswith("line 1\nline 2\n")
    assert entry["metadata"]["result_is_preview"] is True
    assert entry["metadata"]["tool_status"] == "success"


def test_import_agentspine_unknown_events_are_skipped_with_a_count(conversation):
    lines = [{"type": "agent_start"}, {"type": "lane_metrics", "x": 1}, {"type": "agent_end"}]
    result = import_transcript("\n".join(map(json.dumps, lines)), "agentspine", conversation)
    assert result.skipped == {"lane_metrics event": 1}


def test_import_agentspine_streamed_deltas_make_the_assistant_text(conversation):
    import_transcript(sample("agentspine"), "agentspine", conversation)
    texts = [m["content"] for m in messages(conversation) if m["role"] == "assistant"]
    assert texts == ["Let me look.", "notes.txt has 15 lines; the build failed with exit code 3."]


def test_import_agentspine_stopped_run_becomes_a_continuation(conversation):
    lines = [
        {"type": "agent_start"},
        {"type": "message_end", "role": "user", "text_preview": "loop please"},
        {"type": "message_end", "role": "assistant", "text_preview": ""},
        {"type": "tool_execution_start", "tool_call_id": "c1", "tool_name": "f", "args": "{}"},
        {
            "type": "tool_execution_end",
            "tool_call_id": "c1",
            "tool_name": "f",
            "result_preview": "x",
        },
        {"type": "turn_end", "round": 3, "status": "loop_detected"},
        {"type": "agent_end", "final_text": "(agent stopped: repeated tool-call loop detected)"},
    ]
    text = "\n".join(json.dumps(line) for line in lines)
    result = imported(conversation, "agentspine", text)
    assert result[-1]["role"] == "status"
    assert result[-1]["content"] == "Agent stopped: loop_detected"
    assert result[-1]["metadata"]["continuation"] == {
        "should_continue": False,
        "stop_reason": "loop_detected",
        "resolved_by": "AgentSpine",
    }
    assert sum(m["role"] == "status" for m in result) == 1


def test_import_agentspine_final_text_after_tool_calls_is_the_final_answer(conversation):
    lines = [
        {"type": "message_end", "role": "user", "text_preview": "hi"},
        {"type": "message_end", "role": "assistant", "text_preview": "checking"},
        {"type": "tool_execution_start", "tool_call_id": "c1", "tool_name": "f", "args": "[1]"},
        {
            "type": "tool_execution_end",
            "tool_call_id": "c1",
            "tool_name": "f",
            "result_preview": "ok",
        },
        {"type": "agent_end", "final_text": "All done."},
    ]
    result = imported(conversation, "agentspine", "\n".join(json.dumps(line) for line in lines))
    assert [(m["role"], m["content"]) for m in result] == [
        ("user", "hi"),
        ("assistant", "checking"),
        ("tool", "ok"),
        ("assistant", "All done."),
    ]
    assert result[2]["metadata"]["args_summary"] == "[1]"  # not an object: kept verbatim


# -- chatui ---------------------------------------------------------------------


def test_import_chatui_keeps_event_ids_runs_and_timestamps(conversation):
    result = import_transcript(sample("chatui"), "chatui", conversation)
    assert result.run_id == ""
    events = list(Event.objects.filter(conversation=conversation).order_by("seq"))
    assert events[0].event_id == "evt-001"
    assert events[0].timestamp.isoformat() == "2026-05-02T08:30:00+00:00"
    # Lines without an event_id get one derived from the file.
    assert events[8].event_id == prefix_of(sample("chatui")) + ":9"
    runs = Run.objects.filter(conversation=conversation).values_list("run_id", "status")
    assert list(runs) == [("run_7f3a", "completed"), ("run_8b41", "failed")]


def test_import_chatui_nested_tool_keeps_its_parent(conversation):
    import_transcript(sample("chatui"), "chatui", conversation)
    assert tool(conversation, "tc_grep")["metadata"]["parent_tool_call_id"] == "tc_sub"


def test_import_chatui_invalid_event_names_the_line_and_field(conversation):
    text = '{"type": "user.message", "content": "hi"}\n\n{"type": "agent.tool.started"}\n'
    with pytest.raises(TranscriptError) as caught:
        import_transcript(text, "chatui", conversation)
    assert str(caught.value) == "line 3: missing required field 'tool_call_id'"
    assert not Event.objects.filter(conversation=conversation).exists()


def test_import_jsonl_string_holding_u2028_is_one_line(conversation):
    line = {"type": "user.message", "content": "one\u2028line\u2029still\x85one"}
    text = json.dumps(line, ensure_ascii=False) + "\n"
    assert messages(conversation) == []
    assert imported(conversation, "chatui", text)[0]["content"] == line["content"]


# -- legacy ---------------------------------------------------------------------


def legacy_messages(conversation, text: str) -> list[tuple[str, str, str | None, str | None]]:
    import_transcript(text, "legacy", conversation)
    return [
        (
            m["role"],
            m["content"],
            m.get("metadata", {}).get("tool_name"),
            m.get("metadata", {}).get("tool_status"),
        )
        for m in messages(conversation)
    ]


def test_import_legacy_tool_block_becomes_a_finished_tool_entry(conversation):
    text = "Checking.\n\n<tool>run_shell_command(args=[&quot;pwd&quot;])\n/app</tool>\n\nDone."
    assert legacy_messages(conversation, text) == [
        ("assistant", "Checking.", None, None),
        ("tool", "/app", "run_shell_command", "success"),
        ("assistant", "Done.", None, None),
    ]
    (entry,) = tools(conversation)
    assert entry["metadata"]["args_summary"] == 'args=["pwd"]'
    kinds = list(Event.objects.filter(conversation=conversation).values_list("type", flat=True))
    assert kinds.count("agent.tool.started") == kinds.count("agent.tool.completed") == 1


def test_import_legacy_pending_tool_block_stays_running(conversation):
    result = legacy_messages(conversation, "Building:\n<tool>make(target=build)</tool>")
    assert result[-1] == ("tool", "", "make", "running")


def test_t2_tool_and_validation_pair_is_finished_and_validation_is_its_own_block(conversation):
    text = (
        "<tool>save_file(file_name=a.py)</tool>\n<validation>completed in 1.2 seconds</validation>"
    )
    assert legacy_messages(conversation, text) == [
        ("tool", "", "save_file", "success"),
        ("assistant", "<validation>completed in 1.2 seconds</validation>", None, None),
    ]
    assert tools(conversation)[0]["metadata"]["tool_duration_ms"] == 1200


def test_t2_validation_block_renders_as_its_own_block_never_in_a_batch(conversation):
    text = "<tool>a()</tool>\n<validation>done in 3 s</validation>\n<tool>b()\nok</tool>"
    import_transcript(text, "legacy", conversation)
    items = present_transcript(list(messages_of(conversation)))
    assert [item.kind for item in items] == ["tool_batch", "assistant", "tool_batch"]
    assert [batch.count for batch in items if batch.kind == "tool_batch"] == [1, 1]
    assert items[1].validation == "done in 3 s"
    html = render_to_string(
        "chatui/_transcript.html#earlier", {"items": items, "conversation": conversation}
    )
    assert html.count("data-validation") == 1 and "validation()" not in html
    assert "data-tool-title>Validation" not in html


def test_t2_standalone_validation_block_is_its_own_message(conversation):
    text = "Done.\n<validation>Validated 3 files in 250 ms</validation>"
    assert legacy_messages(conversation, text) == [
        ("assistant", "Done.", None, None),
        ("assistant", "<validation>Validated 3 files in 250 ms</validation>", None, None),
    ]


def test_t2_mindroom_markers_import_as_tool_entries_with_their_trace(conversation):
    document = [
        {
            "role": "assistant",
            "content": "Looking.\n\n🔧 `search_web` [1]\n🔧 `fetch\\`x` [2] ⏳\n\nWaiting.",
            "io.mindroom.tool_trace": {
                "version": 2,
                "events": [
                    {
                        "tool_name": "search_web",
                        "args_preview": "q=a\n\nb",
                        "result_preview": "3 hits",
                    },
                    {"tool_name": "fetch`x"},
                ],
            },
        }
    ]
    import_transcript(json.dumps(document), "legacy", conversation)
    entries = [
        (t["metadata"]["tool_name"], t["metadata"]["tool_status"], t["content"])
        for t in tools(conversation)
    ]
    assert entries == [("search_web", "success", "3 hits"), ("fetch`x", "running", "")]
    assert tools(conversation)[0]["metadata"]["args_summary"] == "q=a b"
    assert tools(conversation)[1]["metadata"]["no_result_recorded"] is True
    assert [m["content"] for m in messages(conversation) if m["role"] == "assistant"] == [
        "Looking.",
        "Waiting.",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Searching.\n\n🔧 `search_web` [1] ⏳",
        "Building:\n<tool>make(target=build)</tool>",
    ],
    ids=["mindroom-marker", "legacy-tool-block"],
)
def test_t2_imported_pending_tool_shows_no_result_recorded_never_a_ticking_timer(
    conversation, client, text
):
    import_transcript(text, "legacy", conversation)
    items = present_transcript(list(messages_of(conversation)))
    (entry,) = (e for item in items if item.kind == "tool_batch" for e in item.entries)
    assert (entry.no_result, entry.is_pending, entry.elapsed_text) == (True, False, None)
    client.force_login(conversation.owner)
    page = client.get(conversation.get_absolute_url()).content.decode()
    assert "data-tool-no-result>no result recorded<" in page
    assert "data-elapsed" not in page and "data-tool-pending" not in page
    assert "⏳" not in page.split('id="transcript"', 1)[1]


def test_t2_mindroom_pending_marker_then_finished_marker_is_one_entry(conversation):
    text = "🔧 `make` [1] ⏳\nbuilding…\n🔧 `make` [1]\n🔧 `make` [2]"
    import_transcript(text, "legacy", conversation)
    statuses = [
        (t["metadata"]["tool_name"], t["metadata"]["tool_status"]) for t in tools(conversation)
    ]
    assert statuses == [("make", "success"), ("make", "success")]


def test_t2_newlines_inside_an_argument_collapse_to_one_space_keeping_the_text(conversation):
    text = '<tool>save_file(name=a.py, content="line one\nline two\r\n\nthree")\nsaved</tool>'
    import_transcript(text, "legacy", conversation)
    (entry,) = tools(conversation)
    assert entry["metadata"]["args_summary"] == 'name=a.py, content="line one line two three"'
    assert entry["content"] == "saved"


def test_t2_call_cut_mid_argument_keeps_its_first_line_as_the_call(conversation):
    text = "<tool>read_file(file_name=very_long…\n[project]\nname = 1</tool>"
    import_transcript(text, "legacy", conversation)
    (entry,) = tools(conversation)
    assert entry["metadata"]["args_summary"] == "file_name=very_long…"
    assert entry["content"] == "[project]\nname = 1"


def test_t2_many_unclosed_argument_lines_stay_linear():
    text = "<tool>f(" + "x\n" * 200_000 + "</tool>"
    (block,) = blocks_of(text)
    assert block.text == "f(x" and block.result.count("x") == 199_999


def test_import_legacy_markdown_pair_becomes_a_tool_entry(conversation):
    text = (
        "Saving.\n\n🔧 **Tool Call:** `save_file(file_name=a.py)`\n"
        "✅ **`save_file` result:**\nok\n12 bytes\n\nSaved it."
    )
    assert legacy_messages(conversation, text) == [
        ("assistant", "Saving.", None, None),
        ("tool", "ok\n12 bytes", "save_file", "success"),
        ("assistant", "Saved it.", None, None),
    ]


def test_import_legacy_markdown_result_in_a_fence_keeps_blank_lines(conversation):
    text = (
        "🔧 **Tool Call:** `pytest()`\n"
        "✅ **`pytest` result:**\n```\nF.\n\n1 failed\n```\n\nOne fails."
    )
    assert legacy_messages(conversation, text) == [
        ("tool", "F.\n\n1 failed", "pytest", "success"),
        ("assistant", "One fails.", None, None),
    ]


def test_import_legacy_markdown_results_pair_with_their_calls_by_name(conversation):
    text = (
        "🔧 **Tool Call:** `a(x=1)`\n🔧 **Tool Call:** `b(y=2)`\n"
        "✅ **`b` result:**\nbee\n✅ **`a` result:**\nay\n✅ **`c` result:**\nsee"
    )
    import_transcript(text, "legacy", conversation)
    entries = [(t["metadata"]["tool_name"], t["content"]) for t in tools(conversation)]
    assert entries == [("a", "ay"), ("b", "bee"), ("c", "see")]


def test_import_legacy_markdown_call_without_result_stays_running(conversation):
    result = legacy_messages(conversation, "🔧 **Tool Call:** `deploy(env=prod)`\n\nWaiting.")
    assert result[0] == ("tool", "", "deploy", "running")


def test_import_legacy_undoes_the_legacy_escaping_once(conversation):
    text = "<tool>echo(s=&quot;&amp;lt;b&amp;gt;&quot;)\n&lt;b&gt; &amp;lt; @\u200bteam</tool>"
    import_transcript(text, "legacy", conversation)
    (entry,) = tools(conversation)
    assert entry["content"] == "<b> &lt; @team"
    assert entry["metadata"]["args_summary"] == 's="&lt;b&gt;"'


def test_import_legacy_prose_is_not_unescaped(conversation):
    text = "Use &amp; and <b>bold</b> @\u200bsomeone"
    assert legacy_messages(conversation, text) == [("assistant", text, None, None)]


def test_import_legacy_plain_text_is_one_assistant_message(conversation):
    result = import_transcript("Just prose.\n", "legacy", conversation)
    assert [(m["role"], m["content"]) for m in messages(conversation)] == [
        ("assistant", "Just prose.")
    ]
    assert result.events == 3  # running, the step, completed


def test_legacy_blocks_keep_the_text_order():
    text = "a<tool>x()\n1</tool>b<validation>v</validation>"
    assert [(b.kind, b.text, b.result) for b in blocks_of(text)] == [
        ("prose", "a", None),
        ("tool", "x()", "1"),
        ("prose", "b", None),
        ("validation", "v", None),
    ]


@pytest.mark.parametrize(
    ("call", "parsed"),
    [
        ("read_file(file_name=a.py)", {"tool_name": "read_file", "args_summary": "file_name=a.py"}),
        ("f(a=(1))", {"tool_name": "f", "args_summary": "a=(1)"}),
        ("list_files()", {"tool_name": "list_files"}),
        ("status", {"tool_name": "status"}),
        (
            "read_file(file_name=very_long…",
            {"tool_name": "read_file", "args_summary": "file_name=very_long…"},
        ),
        ("save file now", {"tool_name": "save file now"}),
    ],
)
def test_legacy_call_line_gives_name_and_args_summary(call, parsed):
    assert parse_call(call) == parsed


# -- bad files --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "text", "message"),
    [
        ("openai", '[{"role": "user", "content": "hi"},\n  {"role": ', "line 2: not valid JSON"),
        ("openai", '{"model": "x"}', 'expected a JSON list of messages or {"messages": [...]}'),
        ("openai", "[]", "the file holds no messages"),
        ("openai", '[{"role": "user", "content": "hi"}, "hello"]', "messages[1]: a message must"),
        ("openai", '[{"role": "robot", "content": "x"}]', "messages[0]: unknown role 'robot'"),
        (
            "openai",
            '[{"role": "assistant", "tool_calls": [{"type": "function", "function": {}}]}]',
            "messages[0].tool_calls[0].function: 'name' must be a non-empty string",
        ),
        ("openai", '[{"role": "tool", "content": "x"}]', "messages[0]: 'tool_call_id' must be"),
        (
            "openai",
            '[{"role": "user", "content": "x", "timestamp": "noon"}]',
            "messages[0]: 'timestamp'",
        ),
        ("anthropic", '[{"role": "user", "content": 7}]', "messages[0]: 'content' must be"),
        (
            "anthropic",
            '[{"role": "user", "content": [{"type": "tool_result"}]}]',
            "messages[0].content[0]: 'tool_use_id' must be a non-empty string",
        ),
        ("agentspine", '{"type": "agent_start"}\nnot json\n', "line 2: not valid JSON"),
        (
            "agentspine",
            '{"type": "agent_start"}\n[1, 2]\n',
            "line 2: each line must be a JSON object",
        ),
        ("agentspine", '{"round": 1}\n', "line 1: 'type' must be a non-empty string"),
        (
            "agentspine",
            '{"type": "tool_execution_start", "tool_name": "f"}\n',
            "line 1: missing required field 'tool_call_id'",
        ),
        ("agentspine", '{"type": "lane_metrics"}\n', "the file holds nothing to import"),
        ("chatui", "\n\n", "the file holds no events"),
        (
            "chatui",
            '{"type": "user.mesage", "content": "x"}',
            "line 1: unknown event type 'user.mesage'",
        ),
        ("legacy", '[{"role": "user", "content": 1}]', "messages[0]: 'content' must be a string"),
        ("legacy", "", "the file is empty"),
        ("legacy", "[not json", "line 1: not valid JSON"),
    ],
)
def test_import_bad_file_raises_a_clear_error_and_changes_nothing(fmt, text, message, conversation):
    with pytest.raises(TranscriptError) as caught:
        import_transcript(text, fmt, conversation)
    assert str(caught.value).startswith(message)
    assert not Event.objects.filter(conversation=conversation).exists()


# -- hostile files: a clear error, never a crash (docs/events.md#sec6, docs/events.md#reliability)
# -----------------------


@pytest.mark.parametrize(("fmt", "case", "raw", "says"), HOSTILE_FILES)
def test_sec6_hostile_file_is_a_clear_import_error_that_changes_nothing(
    fmt, case, raw, says, conversation
):
    with pytest.raises(TranscriptError) as caught:
        import_transcript(raw, fmt, conversation)
    assert says in str(caught.value)
    assert not Event.objects.filter(conversation=conversation).exists()


@pytest.mark.parametrize(("fmt", "case", "raw", "says"), HOSTILE_FILES)
def test_import_transcript_command_hostile_file_is_a_command_error(
    fmt, case, raw, says, user, tmp_path
):
    path = tmp_path / "hostile.txt"
    path.write_bytes(raw)
    with pytest.raises(CommandError, match=re.escape(says)):
        run_import(str(path), "--format", fmt, "--owner", "alice")
    assert not Conversation.objects.exists()


def test_import_larger_than_the_limit_is_refused_without_reading_it_all(conversation, settings):
    settings.CHATUI_IMPORT_MAX_BYTES = 1000
    message = "the file is larger than 1000 B (CHATUI_IMPORT_MAX_BYTES)"
    with pytest.raises(TranscriptError, match=re.escape(message)):
        import_transcript("x" * 1001, "legacy", conversation)

    class Endless(io.RawIOBase):
        def readable(self):
            return True

        def read(self, size=-1):
            assert size is not None and size >= 0, "the whole file was asked for"
            return b"x" * size

    with pytest.raises(TranscriptError, match=re.escape(message)):
        import_transcript(Endless(), "legacy", conversation)
    assert import_transcript("x" * 1000, "legacy", conversation).events == 3


def test_import_making_too_many_events_is_refused(conversation, settings):
    settings.CHATUI_IMPORT_MAX_EVENTS = 10
    document = [{"role": "user", "content": f"message {n}"} for n in range(20)]
    with pytest.raises(TranscriptError) as caught:
        import_transcript(json.dumps(document), "openai", conversation)
    assert str(caught.value) == (
        "messages[10]: the file makes more than 10 events (CHATUI_IMPORT_MAX_EVENTS); split it"
    )
    assert not Event.objects.filter(conversation=conversation).exists()


def test_import_arguments_string_with_a_lone_surrogate_stays_text(conversation):
    """JSON inside a JSON string can hide a surrogate escape: such arguments are kept
    verbatim as args_summary (valid text), never decoded into the database."""
    arguments = '{"q": "\\ud800"}'
    document = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    import_transcript(json.dumps(document), "openai", conversation)
    (call,) = Message.objects.get(conversation=conversation, role="assistant").metadata[
        "tool_calls"
    ]
    assert call["args_summary"] == arguments and "args" not in call


# -- the legacy parser: linear, and before any transaction ----------------------------


def test_legacy_unclosed_tags_parse_in_one_linear_pass(conversation):
    """ "<tool>" repeated, never closed, took 12 s for 144 KB (a regex searched the rest
    of the text from each tag) while holding the write lock; 1.2 MB now parses at
    once, and stays the prose it is."""
    text = "<tool>" * 200_000
    draft = parse_transcript(text, "legacy")
    (step,) = [event for event in draft.events if event["type"] == "agent.step.completed"]
    assert step["content"] == text
    many = "<tool>a\nb</tool>" + "<validation>" * 100_000 + "</tool" * 100_000
    assert [b.kind for b in blocks_of(many)] == ["tool", "prose"]


def test_legacy_call_line_of_blanks_parses_in_linear_time():
    assert parse_call("f(" + " " * 1_000_000 + "x") == {"tool_name": "f", "args_summary": "x"}
    assert parse_call("f" + " " * 1_000_000 + "x")["tool_name"].startswith("f ")


@pytest.mark.django_db(transaction=True)
def test_import_transcript_command_parses_before_opening_a_transaction(user, monkeypatch):
    """A big file must not hold the database's write lock while it is parsed."""
    seen = spy_on_parser(monkeypatch, "legacy")
    run_import(str(IMPORTS / "legacy.json"), "--format", "legacy", "--owner", "alice")
    assert seen == [False]  # parsed once, outside any transaction


def test_import_file_that_is_not_utf8_names_the_line(conversation):
    with pytest.raises(TranscriptError, match=r"^line 2: the file is not valid UTF-8"):
        import_transcript(b'{"type": "agent_start"}\n\xff\xfe\n', "agentspine", conversation)


def test_import_unknown_format_lists_the_formats(conversation):
    with pytest.raises(TranscriptError) as caught:
        import_transcript("[]", "markdown", conversation)
    assert str(caught.value) == (
        "unknown format 'markdown'; the formats are: openai, anthropic, agentspine, chatui, "
        "legacy, agui"
    )


def test_import_event_too_large_names_the_source_message(conversation, settings):
    settings.CHATUI_MAX_EVENT_BYTES = 1000
    document = [{"role": "user", "content": "hi"}, {"role": "user", "content": "x" * 2000}]
    with pytest.raises(TranscriptError, match=r"^messages\[1\]: event is larger than 1000 bytes"):
        import_transcript(json.dumps(document), "openai", conversation)
    assert not Event.objects.filter(conversation=conversation).exists()


def test_import_tool_call_id_taken_by_another_import_is_refused(conversation):
    def transcript(answer):
        return json.dumps(
            [
                {"role": "user", "content": answer},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "call_0",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_0", "content": answer},
            ]
        )

    import_transcript(transcript("first"), "openai", conversation)
    with pytest.raises(TranscriptError, match="tool call id 'call_0' is already used"):
        import_transcript(transcript("second"), "openai", conversation)
    assert [t["content"] for t in tools(conversation)] == ["first"]


def test_parse_transcript_touches_no_database():
    draft = parse_transcript(sample("openai"), "openai")
    assert draft.events[0]["type"] == "agent.status"
    assert draft.origins[1] == "messages[1]"
    assert draft.tool_call_ids[:2] == ["call_7QvLxW2mR9d1", "call_Hc3nZp8sK0aa"]


# -- the command ------------------------------------------------------------------


def run_import(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("import_transcript", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_import_transcript_command_creates_a_conversation_and_prints_its_id_last(user):
    out, err = run_import(
        str(IMPORTS / "anthropic.json"), "--format", "anthropic", "--owner", "alice"
    )
    conversation = Conversation.objects.get(pk=out.strip().splitlines()[-1])
    assert conversation.owner == user
    assert conversation.title == "Is it safe to deploy v2.4.1 to production today?"
    assert conversation.status == "completed"
    assert messages(conversation) == json.loads((IMPORTS / "anthropic.expected.json").read_text())
    assert "imported 13 events (anthropic format): 13 new, 0 already there" in err


def test_import_transcript_command_title_and_append_to_a_conversation(user):
    out, _ = run_import(
        str(IMPORTS / "openai.json"),
        "--format",
        "openai",
        "--owner",
        "alice",
        "--title",
        "Imported",
    )
    conversation_id = out.strip().splitlines()[-1]
    again, err = run_import(
        str(IMPORTS / "legacy.json"), "--format", "legacy", "--conversation", conversation_id
    )
    assert again.strip().splitlines()[-1] == conversation_id
    conversation = Conversation.objects.get(pk=conversation_id)
    assert conversation.title == "Imported"
    assert Run.objects.filter(conversation=conversation).count() == 2
    assert "skipped 1 × system message" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--owner", "nobody"], "no user named 'nobody'"),
        ([], "--owner is required to create a conversation"),
        (["--conversation", "not-a-uuid"], "'not-a-uuid' is not a conversation id"),
        (
            ["--conversation", "00000000-0000-0000-0000-000000000000"],
            "no conversation 00000000-0000-0000-0000-000000000000",
        ),
    ],
)
def test_import_transcript_command_refuses_bad_arguments(args, message, user):
    with pytest.raises(CommandError, match=message):
        run_import(str(IMPORTS / "openai.json"), "--format", "openai", *args)
    assert not Event.objects.exists()


def test_import_transcript_command_bad_file_is_a_command_error_naming_the_line(user, tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text('{"type": "agent_start"}\n{"type": \n')
    with pytest.raises(CommandError, match=r"broken.jsonl: line 2: not valid JSON"):
        run_import(str(path), "--format", "agentspine", "--owner", "alice")
    assert not Conversation.objects.exists()


def test_import_transcript_command_unreadable_file_is_a_command_error(user, tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        run_import(str(tmp_path / "missing.json"), "--format", "openai", "--owner", "alice")
