"""Fuzzing the importers (docs/events.md#sec6, docs/events.md#reliability,
docs/events.md#importers): about 2,400 generated hostile files per run, across every format.

Each file is imported as the admin and the command do it (parse with no
transaction open, then a new conversation and one ingest in a transaction).
Either it imports, and then the transcript renders (the live frame of a page
that loads it) and its event log exports; or it is refused with the importers'
own `TranscriptError`, and nothing of it is left behind: no conversation, no
event, no message, no run. Any other exception is a bug.

The files are shaped like each format, so they get past the first checks and
reach the deep ones, with hostile leaves: markup, invisible and surrogate
characters, legacy block markers, NaN and huge numbers, deep nesting, times
outside any calendar, colliding ids; some are cut short or are not UTF-8.
Every example is rolled back, so the database stays small.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatui.importers import IMPORT_FORMATS, TranscriptError, import_draft, parse_transcript
from chatui.ingest.conversations import create_conversation
from chatui.live.frames import replay_frame
from chatui.models import Conversation, Event, Message, Run
from chatui.read.exporters import export_text

#: Examples per format: six formats make about 2,400 files a run.
EXAMPLES = 400

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,  # database work: no per-example timing
    database=None,  # no .hypothesis folder in the work tree; failures print their example
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# -- raw JSON fragments json.dumps cannot write -------------------------------------------


class Raw:
    """JSON text spliced in verbatim: what a hostile file holds but no encoder writes."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return f"Raw({self.text[:40]!r}…)"


RAW_FRAGMENTS = [
    Raw("[" * 100 + "]" * 100),
    Raw("[" * 30_000 + "]" * 30_000),
    Raw('{"a":' * 70 + "1" + "}" * 70),
    Raw("1" * 4500),
    Raw("-" + "9" * 4301),
    Raw("NaN"),
    Raw("Infinity"),
    Raw("-Infinity"),
    Raw("1e999"),
    Raw("-1e999"),
    Raw('"\\ud800"'),
    Raw('"tail \\udfff"'),
    Raw('"\\ud83d\\ude00 a real pair"'),
    Raw('"\\u0000 nul"'),
]


def to_json(value: Any) -> str:
    """json.dumps, with each `Raw` replaced by its text."""
    fragments: list[str] = []

    def placeholder(item: Any) -> str:
        if not isinstance(item, Raw):
            raise TypeError(type(item))
        fragments.append(item.text)
        return f"\x00raw{len(fragments) - 1}\x00"

    text = json.dumps(value, default=placeholder)
    for number, fragment in enumerate(fragments):
        text = text.replace(f'"\\u0000raw{number}\\u0000"', fragment, 1)
    return text


# -- hostile leaves ---------------------------------------------------------------------------

NASTY_STRINGS = [
    "",
    " ",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "{{ request }} {% csrf_token %}",
    "@everyone @here",
    "@\u200bescaped",
    "&lt;b&gt;&amp;amp;",
    "\u202eevil\u202c",
    "\u2028line\u2029",
    "\x00\x01\x1b[2J",
    "\ufeff",
    "\U0001f600",
    "a" * 300,
    "<tool>",
    "</tool>",
    "<validation>completed in 2 s</validation>",
    "🔧 **Tool Call:** `f(x)`",
    "✅ **`f` result:**",
    "```",
    "(agent stopped: loop detected)",
]
LEGACY_PIECES = [
    "<tool>",
    "</tool>",
    "<validation>",
    "</validation>",
    "\n",
    "\n\n",
    " ",
    "\t",
    "🔧 **Tool Call:** `",
    "`",
    "✅ **`",
    "` result:**",
    "```",
    "read_file(path=a.py)",
    "f(",
    ")",
    "done in 5 ms",
    "&lt;",
    "&amp;",
    "&#x41;",
    "@\u200b",
    "prose",
]
KEYS = [
    "role", "content", "type", "text", "tool_calls", "id", "function", "name", "arguments",
    "tool_call_id", "timestamp", "created", "created_at", "refusal", "input", "tool_use_id",
    "is_error", "usage", "input_tokens", "output_tokens", "delta", "partial", "result",
    "result_preview", "details", "error", "duration_ms", "final_text", "status", "message_id",
    "event_id", "run_id", "args", "args_summary", "parent_tool_call_id", "attempt",
    "max_attempts", "progress", "output", "message", "error_message", "tokens", "kind",
    "should_continue", "stop_reason", "resolved_by", "custom", "error_code", "text_preview",
]  # fmt: skip
#: The first GOOD_TIMES are valid times; the rest are not, or not within 1970–9000.
GOOD_TIMES = 4
TIMES = [
    "2026-03-14T15:09:00Z",
    "2026-03-14T15:09:00.5+02:00",
    "1970-01-01T00:00:00Z",
    1_700_000_000,
    "2026-03-14",
    "1969-12-31T23:59:59Z",
    "0001-01-01T00:00:00+05:00",
    "9999-12-31T23:59:59-05:00",
    "8999-12-31T23:59:59Z",
    "2026-13-45T25:61:00Z",
    "2026-01-01T00:00:00+99:00",
    "noon",
    "",
    0,
    -1,
    1_700_000_000_000,
    10**30,
    1e300,
    -1e300,
    True,
    None,
]


class Shapes:
    """Strategies for files shaped like each format. A `hostile` set slips a hostile
    value in here and there (a lone surrogate, NaN, a time past year 9999, a role
    that does not exist…); a clean one keeps every field within its format, odd
    content included, so that most of its files import and render."""

    def __init__(self, hostile: bool):
        self.hostile = hostile
        mostly = self.mostly
        surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
        plain = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
        text = mostly(
            st.one_of(
                plain,
                st.sampled_from(NASTY_STRINGS),
                st.lists(st.sampled_from(LEGACY_PIECES), max_size=12).map("".join),
            ),
            st.text(st.one_of(st.characters(), surrogates), min_size=1, max_size=12),
            odds=8,
        )
        words = st.one_of(plain, st.sampled_from(NASTY_STRINGS)).filter(str.strip)
        finite = st.one_of(
            st.integers(min_value=0, max_value=10**12),
            st.floats(min_value=0, max_value=1e12, allow_nan=False),
        )
        numbers = mostly(
            finite,
            st.one_of(st.floats(), st.integers(), st.sampled_from([2**63, 10**100, 1e308])),
        )
        times = mostly(
            st.sampled_from(TIMES[:GOOD_TIMES]), st.one_of(st.sampled_from(TIMES), numbers), odds=3
        )
        ids = mostly(st.sampled_from(["c1", "c2", "c3", "c1~2", "import:x:t1"]), text, odds=3)
        names = mostly(st.sampled_from(["read_file", "f", "validation", "web_search"]), text)
        leaves = mostly(
            st.one_of(st.none(), st.booleans(), finite, text),
            st.one_of(numbers, st.sampled_from(RAW_FRAGMENTS)),
            odds=8,
        )
        json_values = st.recursive(
            leaves,
            lambda children: st.one_of(
                st.lists(children, max_size=3),
                st.dictionaries(st.one_of(st.sampled_from(KEYS), plain), children, max_size=3),
            ),
            max_leaves=6,
        )
        json_objects = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=3)
        arguments = mostly(
            st.one_of(json_objects, json_objects.map(to_json), words),
            st.one_of(
                st.sampled_from(
                    ['{"q": "\\ud800"}', '{"a": NaN}', "[" * 5000, '{"n": ' + "1" * 5000 + "}"]
                ),
                json_values,
            ),
        )
        self.text, self.json_values = text, json_values

        def objects(required: dict[str, Any], optional: dict[str, Any]) -> st.SearchStrategy:
            """Dicts with these keys (each optional one may be missing); in a hostile
            set, sometimes a stray key too, or another value altogether."""
            shaped = st.fixed_dictionaries(required, optional=optional)
            stray = st.fixed_dictionaries(required, optional={**optional, "stray": json_values})
            return mostly(shaped, st.one_of(stray, json_values), odds=12)

        openai_call = objects(
            {
                "id": ids,
                "type": st.just("function"),
                "function": objects({"name": names}, {"arguments": arguments}),
            },
            {},
        ) | objects(
            {"id": ids, "type": st.just("custom")},
            {"custom": objects({"name": names}, {"input": arguments})},
        )
        part_types = mostly(
            st.sampled_from(["text", "input_text"]),
            st.sampled_from(["refusal", "image_url", "input_audio", "x"]),
        )
        openai_part = objects({"type": part_types, "text": text}, {"refusal": text})
        content = text | st.lists(openai_part | text, min_size=1, max_size=3)
        dated = {"timestamp": times, "created": times}
        openai_message = st.one_of(
            objects({"role": st.just("user"), "content": content}, dated),
            objects(
                {"role": st.just("assistant")},
                {
                    **dated,
                    "content": content,
                    "tool_calls": st.lists(openai_call, max_size=3),
                    "function_call": objects({"name": names}, {"arguments": arguments}),
                    "refusal": text,
                },
            ),
            objects({"role": st.just("tool"), "tool_call_id": ids}, {**dated, "content": content}),
            objects({"role": st.just("function"), "name": names}, {**dated, "content": content}),
            objects({"role": st.sampled_from(["system", "developer"]), "content": content}, dated),
            objects({"role": mostly(st.just("user"), text), "content": content}, dated),
        )
        result_parts = st.lists(
            objects({"type": st.sampled_from(["text", "image", "x"])}, {"text": text}),
            max_size=3,
        )
        anthropic_block = objects(
            {
                "type": st.sampled_from(
                    ["text", "tool_use", "tool_result", "server_tool_use",
                     "web_search_tool_result", "thinking", "image", "document", "mystery"]
                )
            },
            {
                "text": text,
                "id": ids,
                "name": names,
                "input": arguments,
                "tool_use_id": ids,
                "content": st.one_of(text, result_parts, objects({"error_code": text}, {})),
                "is_error": mostly(st.booleans(), json_values),
            },
        )  # fmt: skip
        anthropic_message = objects(
            {
                "role": mostly(st.sampled_from(["user", "assistant", "system"]), text, odds=12),
                "content": text | st.lists(anthropic_block, min_size=1, max_size=4),
            },
            {
                "usage": objects({}, {"input_tokens": numbers, "output_tokens": numbers}),
                "timestamp": times,
            },
        )
        legacy_text = st.lists(st.sampled_from(LEGACY_PIECES) | text, max_size=15).map("".join)
        legacy_message = objects(
            {
                "role": mostly(st.sampled_from(["user", "assistant", "system"]), text, odds=12),
                "content": legacy_text,
            },
            {"timestamp": times},
        )
        agentspine_event = objects(
            {
                "type": st.sampled_from(
                    ["agent_start", "turn_start", "message_start", "message_update",
                     "message_end", "tool_execution_start", "tool_execution_update",
                     "tool_execution_end", "turn_end", "agent_end", "mystery"]
                ),
                "timestamp": times,
                "tool_call_id": ids,
                "tool_name": names,
            },
            {
                "role": st.sampled_from(["user", "assistant", "tool"]),
                "content": text,
                "text_preview": text,
                "delta": text,
                "args": arguments,
                "partial": text,
                "result": json_values,
                "result_preview": text,
                "is_error": st.booleans(),
                "details": json_objects,
                "duration_ms": numbers,
                "final_text": text | st.just("(agent stopped: cancelled)"),
                "status": st.sampled_from(["cancelled", "loop_detected", "done"]),
            },
        )  # fmt: skip
        common = {"event_id": ids, "run_id": ids, "timestamp": times}
        chatui_event = st.one_of(
            objects(
                {"type": st.just("user.message"), "content": words},
                {**common, "message_id": ids},
            ),
            objects(
                {"type": st.just("agent.message.delta"), "message_id": ids, "delta": text},
                common,
            ),
            objects(
                {"type": st.just("agent.step.completed"), "content": text},
                {
                    **common,
                    "message_id": ids,
                    "tool_calls": st.lists(
                        objects({"name": names}, {"id": ids, "args": json_objects}), max_size=3
                    ),
                    "duration_ms": numbers,
                    "tokens": mostly(st.integers(0, 10**9), numbers),
                },
            ),
            objects(
                {
                    "type": st.sampled_from(["agent.tool.started", "tool_execution_start"]),
                    "tool_call_id": ids,
                    "tool_name": names,
                },
                {
                    **common,
                    "args": json_objects,
                    "args_summary": text,
                    "parent_tool_call_id": ids,
                    "attempt": mostly(st.integers(1, 5), numbers),
                    "max_attempts": mostly(st.integers(1, 5), numbers),
                },
            ),
            objects(
                {"type": st.just("agent.tool.progress"), "tool_call_id": ids},
                {
                    **common,
                    "progress": mostly(st.floats(0, 1), numbers),
                    "output": text,
                    "message": text,
                },
            ),
            objects(
                {
                    "type": st.sampled_from(["agent.tool.completed", "tool_execution_end"]),
                    "tool_call_id": ids,
                },
                {
                    **common,
                    "tool_name": names,
                    "result": json_values,
                    "error": text,
                    "duration_ms": numbers,
                    "details": json_objects,
                },
            ),
            objects(
                {
                    "type": st.just("agent.continuation"),
                    "should_continue": st.booleans(),
                    "stop_reason": text,
                    "resolved_by": text,
                },
                common,
            ),
            objects(
                {
                    "type": st.just("agent.status"),
                    "status": st.sampled_from(
                        ["running", "thinking", "info", "completed", "failed"]
                    ),
                },
                {**common, "message": text, "error_message": text},
            ),
        )
        claude_block = st.one_of(
            objects({"type": st.just("text"), "text": text}, {}),
            objects(
                {
                    "type": st.just("tool_use"),
                    "id": ids,
                    "name": st.sampled_from(
                        ["Bash", "Edit", "MultiEdit", "Write", "Read", "TodoWrite", "Task"]
                    )
                    | names,
                    "input": json_objects,
                },
                {},
            ),
            objects(
                {"type": st.just("tool_result"), "tool_use_id": ids},
                {
                    "content": text | st.lists(objects({"type": st.just("text")}, {"text": text})),
                    "is_error": st.booleans(),
                },
            ),
            objects(
                {"type": st.sampled_from(["thinking", "redacted_thinking"])}, {"thinking": text}
            ),
        )
        claude_record = objects(
            {
                "type": st.sampled_from(["user", "assistant", "summary", "system", "mystery"]),
                "uuid": ids,
            },
            {
                "parentUuid": ids,
                "isSidechain": st.booleans(),
                "isMeta": st.booleans(),
                "agentId": ids,
                "timestamp": times,
                "message": objects(
                    {"role": st.sampled_from(["user", "assistant"])},
                    {"content": text | st.lists(claude_block, max_size=3)},
                ),
                "toolUseResult": json_values
                | objects(
                    {},
                    {
                        "stdout": text,
                        "stderr": text,
                        "filePath": text,
                        "structuredPatch": json_values,
                        "file": json_objects,
                        "oldString": text,
                        "newString": text,
                        "newTodos": json_values,
                        "agentId": ids,
                        "totalDurationMs": numbers,
                    },
                ),
            },
        )
        codex_payload = objects(
            {
                "type": st.sampled_from(
                    ["message", "reasoning", "function_call", "function_call_output",
                     "custom_tool_call", "custom_tool_call_output", "user_message",
                     "task_complete", "token_count", "mystery"]
                )
            },
            {
                "role": st.sampled_from(["user", "assistant"]),
                "content": text
                | st.lists(
                    objects(
                        {"type": st.sampled_from(["input_text", "output_text"])}, {"text": text}
                    ),
                    max_size=2,
                ),
                "name": st.sampled_from(["shell", "exec_command", "apply_patch", "update_plan"])
                | names,
                "arguments": arguments,
                "input": text
                | st.just("*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch"),
                "call_id": ids,
                "output": text | json_objects.map(to_json),
                "summary": json_values,
            },
        )  # fmt: skip
        codex_record = objects(
            {
                "type": st.sampled_from(
                    ["session_meta", "response_item", "event_msg", "turn_context"]
                ),
                "payload": codex_payload,
            },
            {"timestamp": times},
        )
        agui_times = mostly(st.integers(0, 4 * 10**12), numbers, odds=6)
        agui_common = {"timestamp": agui_times}
        agui_marker = st.sampled_from(["retried", "failed", "denied", "success", "x"]).map(
            lambda outcome: to_json({"pydantic_ai": {"outcome": outcome, "retry": {"attempt": 1}}})
        )
        snapshot_message = st.one_of(
            objects({"id": ids, "role": st.just("user"), "content": text}, {}),
            objects(
                {"id": ids, "role": st.just("assistant")},
                {"content": text, "toolCalls": st.lists(openai_call, max_size=2)},
            ),
            objects(
                {"id": ids, "role": st.just("tool"), "toolCallId": ids, "content": text},
                {"error": text},
            ),
        )
        agui_event = st.one_of(
            objects(
                {"type": st.sampled_from(["RUN_STARTED", "RUN_FINISHED"]), "threadId": ids,
                 "runId": ids},
                {**agui_common, "outcome": st.just({"type": "success"}),
                 "usage": st.just([{"inputTokens": 5, "outputTokens": 7, "model": "m"}])},
            ),
            objects({"type": st.just("RUN_ERROR"), "message": text}, {**agui_common, "code": text}),
            objects(
                {"type": st.sampled_from(["TEXT_MESSAGE_START", "TEXT_MESSAGE_END"]),
                 "messageId": ids},
                {**agui_common, "role": st.sampled_from(["assistant", "user", "system"])},
            ),
            objects(
                {"type": st.sampled_from(["TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"]),
                 "messageId": ids, "delta": text},
                agui_common,
            ),
            objects(
                {"type": st.just("TOOL_CALL_START"), "toolCallId": ids, "toolCallName": names},
                {**agui_common, "parentMessageId": ids},
            ),
            objects(
                {"type": st.just("TOOL_CALL_ARGS"), "toolCallId": ids, "delta": text},
                agui_common,
            ),
            objects({"type": st.just("TOOL_CALL_END"), "toolCallId": ids}, agui_common),
            objects(
                {"type": st.just("TOOL_CALL_RESULT"), "toolCallId": ids, "messageId": ids,
                 "content": text | json_values.map(to_json)},
                agui_common,
            ),
            objects(
                {"type": st.just("REASONING_ENCRYPTED_VALUE"),
                 "subtype": st.sampled_from(["message", "tool-call"]), "entityId": ids,
                 "encryptedValue": text | agui_marker},
                agui_common,
            ),
            objects(
                {"type": st.just("MESSAGES_SNAPSHOT"),
                 "messages": st.lists(snapshot_message, max_size=4)},
                agui_common,
            ),
            objects(
                {"type": st.sampled_from(["STEP_STARTED", "STEP_FINISHED"]), "stepName": text},
                agui_common,
            ),
            objects({"type": st.sampled_from(["RAW", "CUSTOM"]), "event": json_values,
                     "name": text, "value": json_values}, agui_common),
        )  # fmt: skip
        self.files = {
            "claude-code": self.jsonl(claude_record),
            "codex": self.jsonl(codex_record),
            "agui": self.jsonl(agui_event)
            | st.lists(agui_event.map(to_json), min_size=1, max_size=6).map(
                lambda lines: "".join(f"data: {line}\n\n" for line in lines)
            ),
            "openai": self.document(openai_message),
            "anthropic": self.document(anthropic_message),
            "legacy": self.document(legacy_message) | legacy_text,
            "agentspine": self.jsonl(agentspine_event),
            "chatui": self.jsonl(chatui_event),
        }

    def mostly(
        self, good: st.SearchStrategy, bad: st.SearchStrategy, odds: int = 4
    ) -> st.SearchStrategy:
        """`good` `odds` times out of `odds` + 1 in a hostile set; always in a clean one."""
        if not self.hostile:
            return good
        # (one_of(good, …, good, bad) would not do: it merges equal branches.)
        return st.sampled_from([True] * odds + [False]).flatmap(lambda ok: good if ok else bad)

    def document(self, messages: st.SearchStrategy) -> st.SearchStrategy[str]:
        """A JSON file: a list of messages or {"messages": [...]}; or anything at all."""
        listed = st.lists(messages, min_size=1, max_size=5)
        return self.mostly(
            listed | st.fixed_dictionaries({"messages": listed}, optional={"system": self.text}),
            self.json_values,
            odds=8,
        ).map(to_json)

    def jsonl(self, events: st.SearchStrategy) -> st.SearchStrategy[str]:
        """A JSONL file: one event a line; in a hostile set, a stray line now and then."""
        line = self.mostly(events.map(to_json), self.json_values.map(to_json) | self.text, 12)
        return st.lists(line, min_size=1, max_size=6).map("\n".join)


SHAPES = {hostile: Shapes(hostile) for hostile in (False, True)}


@st.composite
def transcript_file(draw, fmt: str) -> bytes:
    """A file shaped like `fmt`, clean or hostile; a hostile one may also be cut
    short, or start with raw bytes."""
    hostile = draw(st.booleans())
    raw = draw(SHAPES[hostile].files[fmt]).encode("utf-8", errors="surrogatepass")
    damage = draw(st.sampled_from(["none"] * 8 + ["cut", "bytes"])) if hostile else "none"
    if damage == "cut" and raw:
        raw = raw[: draw(st.integers(min_value=0, max_value=len(raw) - 1))]
    elif damage == "bytes":
        raw = draw(st.binary(max_size=60)) + raw[:200]
    return raw


# -- the property ---------------------------------------------------------------------------


@pytest.fixture
def owner(db):
    return get_user_model().objects.create(username="fuzz")


def import_as_the_admin_does(raw: bytes, fmt: str, owner) -> Conversation:
    draft = parse_transcript(raw, fmt)
    with transaction.atomic():
        conversation = create_conversation(owner=owner, title="")
        import_draft(draft, fmt, conversation)
    return conversation


def nothing_left() -> bool:
    """No conversation, event, message or run: each example starts from none."""
    return not any(model.objects.exists() for model in (Conversation, Event, Message, Run))


def check_import(raw: bytes, fmt: str, owner) -> None:
    """Imports and renders, or is refused with a TranscriptError and leaves nothing."""
    with transaction.atomic():
        try:
            conversation = import_as_the_admin_does(raw, fmt, owner)
        except TranscriptError as error:
            assert str(error).strip()
            str(error).encode("utf-8")  # shown on a page or a terminal: valid text
            assert nothing_left(), "a refused file left something behind"
        else:
            frame = replay_frame(conversation.pk, 0)
            assert frame is not None and 'id="transcript"' in frame.html
            for export_format in ("events", "otlp"):
                export_text(conversation, export_format)
        transaction.set_rollback(True)


@pytest.mark.parametrize("fmt", IMPORT_FORMATS)
def test_fuzzed_files_import_and_render_or_are_refused_cleanly(fmt, owner):
    @FUZZ
    @given(raw=transcript_file(fmt))
    def imports_cleanly_or_is_refused(raw: bytes) -> None:
        check_import(raw, fmt, owner)

    imports_cleanly_or_is_refused()


def test_a_tool_call_id_holding_nul_is_refused_cleanly_on_every_database(owner):
    """Found by the fuzz on PostgreSQL, which cannot compare text holding NUL: the check
    that an imported call's id is free queried with it and failed with a DataError."""
    raw = (
        b'{"type": "tool_execution_start", "timestamp": "2026-03-14T15:09:00Z",'
        b' "tool_call_id": "\\u0000", "tool_name": "read_file"}'
    )
    check_import(raw, "agentspine", owner)


@pytest.mark.parametrize("field", ["tool_call_id", "run_id", "tool_name"])
def test_an_id_longer_than_its_column_is_refused_cleanly_on_every_database(owner, field):
    """PostgreSQL enforces varchar(200) where SQLite does not: an over-long id must be
    refused by name before any row is written (the fuzz found one on PostgreSQL)."""
    event = {"type": "tool_execution_start", "timestamp": "2026-03-14T15:09:00Z",
             "tool_call_id": "c1", "tool_name": "read_file", field: "x" * 250}  # fmt: skip
    check_import(json.dumps(event).encode(), "agentspine", owner)


@pytest.mark.parametrize("kind", ["agent_start", "turn_start", "message_end"])
def test_an_over_long_tool_call_id_as_an_agentspine_extra_is_refused_cleanly(owner, kind):
    """An AgentSpine event keeps fields its type does not know as extras; a
    `tool_call_id` among them still names the event's call (its column): it is checked
    as an id, or PostgreSQL's varchar(200) refused the row (the fuzz's find)."""
    event = {"type": kind, "timestamp": "2026-03-14T15:09:00Z", "tool_call_id": "x" * 250}
    check_import(json.dumps(event).encode(), "agentspine", owner)


@pytest.mark.parametrize(
    "event",
    [
        {"type": "TOOL_CALL_START", "toolCallId": "x" * 250, "toolCallName": "read_file"},
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r" * 250},
        {"type": "TOOL_CALL_START", "toolCallId": "a\u0000b", "toolCallName": "read_file"},
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {
                "type": "interrupt",
                "interrupts": [{"id": "i", "reason": "tool_call", "toolCallId": "x" * 250}],
            },
        },
    ],
)
def test_an_agui_id_that_no_column_can_hold_is_refused_cleanly(owner, event):
    """ag-ui-protocol's models check types, not lengths: an id past its column (or
    holding NUL) is refused by name on every database, never by PostgreSQL."""
    check_import(json.dumps([event]).encode(), "agui", owner)


@pytest.mark.parametrize("kind", [[], {}, 7, None])
def test_an_agui_file_whose_type_is_no_string_is_refused_cleanly(owner, kind):
    """The fuzz's find: `{"type": []}` raised TypeError (a list looked up in a set)."""
    check_import(json.dumps({"type": kind}).encode(), "agui", owner)
