"""docs/events.md#sessions: Claude Code and Codex session files (real ones, tests/fixtures/
claude_code/ and codex/, sources in their README) imported: commands with exit codes,
diffs, file reads, nested sub-agents, reasoning, checklists, unknown records kept, and a
second import adding nothing."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from chatui.importers import TranscriptError, import_transcript, parse_transcript
from chatui.ingest.dialects.claude_code import ClaudeCodeTranslator
from chatui.ingest.service import ingest
from chatui.models import Conversation, Event, Message, Role, ToolStatus
from tests.support.fixtures import FIXTURES
from tests.support.hostile import SCRIPT_VARIANTS

CLAUDE = FIXTURES / "claude_code" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
CLAUDE_SIDECHAIN = FIXTURES / "claude_code" / "sidechain_integrated.jsonl"
CODEX = (
    FIXTURES / "codex" / "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
)


@pytest.fixture
def imported(user):
    """Import a file into a new untitled conversation (its first prompt titles it)."""

    def run(path, fmt: str) -> Conversation:
        conversation = Conversation.objects.create(owner=user, title="")
        import_transcript(path.read_bytes(), fmt, conversation)
        conversation.refresh_from_db()
        return conversation

    return run


def tool(conversation, call_id: str) -> Message:
    return Message.objects.get(conversation=conversation, role=Role.TOOL, tool_call_id=call_id)


def tools_named(conversation, name: str) -> list[Message]:
    return list(
        Message.objects.filter(conversation=conversation, role=Role.TOOL, tool_name=name).order_by(
            "position"
        )
    )


# -- Claude Code ----------------------------------------------------------------------


def test_claude_code_bash_is_a_command_with_its_exit_code(imported):
    conversation = imported(CLAUDE, "claude-code")
    listing = tool(conversation, "toolu_01D7Vzhj8hZUNetTNd3q54pk")  # ls -la /path/to/Demo
    assert listing.metadata["args"]["command"] == "ls -la /path/to/Demo"
    assert listing.metadata["details"] == {
        "kind": "command",
        "exit_code": 0,
        "cwd": "/path/to/Demo",
    }
    assert listing.tool_status == ToolStatus.SUCCESS
    assert listing.metadata["tool_result"].startswith("total 8\n")
    failed = tool(conversation, "toolu_01KDiLyJT1VsszVhG4d3p6jV")  # `tree` that failed
    assert failed.tool_status == ToolStatus.ERROR
    assert failed.metadata["tool_error"].startswith("lsd: 3: No such file or directory")


def test_g18_claude_code_multiedit_is_a_unified_diff(imported):
    conversation = imported(CLAUDE, "claude-code")
    (edit,) = tools_named(conversation, "MultiEdit")
    details = edit.metadata["details"]
    assert details["kind"] == "diff"
    assert details["path"] == "/path/to/Demo/CLAUDE.md"
    lines = details["diff"].splitlines()
    assert lines[:3] == [
        "--- a/path/to/Demo/CLAUDE.md",
        "+++ b/path/to/Demo/CLAUDE.md",
        "@@ -1,44 +1,68 @@",
    ]
    removed = (
        "-A fully functional TODO application built with Next.js 14, TypeScript, and Tailwind "
        "CSS. Features modern React patterns, comprehensive state management, and persistent "
        "storage."
    )
    assert removed in lines
    # The edit that failed first ("File has not been read yet") is an error, not a diff.
    (first_edit,) = tools_named(conversation, "Edit")
    assert first_edit.tool_status == ToolStatus.ERROR
    assert first_edit.metadata["tool_error"].startswith("File has not been read yet.")


def test_g19_claude_code_read_is_the_file_with_its_path(imported):
    conversation = imported(CLAUDE, "claude-code")
    read = tool(conversation, "toolu_01YGfgPmLThZtkbtqRpvYMVW")
    assert read.metadata["details"] == {
        "kind": "file",
        "path": "/path/to/Demo/CLAUDE.md",
        "start_line": 1,
        "num_lines": 97,
        "total_lines": 97,
    }
    # The file itself, not Claude Code's numbered lines ("     1→# TODO…").
    assert read.metadata["tool_result"].startswith("# TODO App Project\n\n## Project Overview\n")
    assert "→" not in read.metadata["tool_result"].splitlines()[0]


def test_g13_claude_code_sub_agent_tools_nest_under_their_task(imported):
    conversation = imported(CLAUDE, "claude-code")
    task = "toolu_01LKfUwrsnof18CpWZQcJH44"  # Task "Analyze current project structure"
    nested = Message.objects.filter(conversation=conversation, parent_tool_call_id=task)
    assert sorted(m.tool_name for m in nested) == ["Bash", "Bash", "Bash", "Bash", "Bash", "Read"]
    other = "toolu_014YF9TXhDRR7BnpasNJ7gjC"  # the parallel Task "Check package configuration"
    assert sorted(
        m.tool_name
        for m in Message.objects.filter(conversation=conversation, parent_tool_call_id=other)
    ) == ["Glob", "Read"]
    parent = tool(conversation, task)
    assert parent.tool_status == ToolStatus.SUCCESS
    assert parent.metadata["details"]["kind"] == "subagent"
    assert parent.metadata["tool_duration_ms"] == 38601
    # The sub-agent's own prompt and words are not top-level messages of the session.
    assert not Message.objects.filter(
        conversation=conversation, content__startswith="Analyze the current project structure"
    ).exists()


def test_g13_sidechain_records_tie_to_their_task_by_agent_id(imported):
    conversation = imported(CLAUDE_SIDECHAIN, "claude-code")
    grep = tool(conversation, "toolu_01BWgwmyj8gGuqFNHMPqqtN2")
    assert grep.parent_tool_call_id == "toolu_01JA2mLseQCAW3MdwPE4qWEk"


def test_todowrite_is_a_checklist_line(imported):
    conversation = imported(CLAUDE, "claude-code")
    last = tools_named(conversation, "TodoWrite")[-1]
    line = last.metadata["args_summary"]
    assert line.startswith("☑ Discover available commands in the project · ☑ ")
    assert last.metadata["details"]["kind"] == "checklist"
    middle = tools_named(conversation, "TodoWrite")[1]
    assert middle.metadata["args_summary"].startswith(
        "◐ Discover available commands in the project · ☐ "
    )


def test_claude_code_session_is_one_run_titled_by_its_prompt(imported):
    conversation = imported(CLAUDE, "claude-code")
    assert conversation.title == "/orchestrator @CLAUDE.md を最新の状態にアップデートしてください"
    assert conversation.status == "completed"
    (user,) = Message.objects.filter(conversation=conversation, role=Role.USER)
    assert user.run_id == "cc:5877060c-0a35-4f68-90a6-fdaa3727859a"
    # The expanded slash-command prompt (isMeta) is kept in the log, not shown.
    kept = Event.objects.get(
        conversation=conversation, event_id="cc:e3b9327b-507e-4eca-b3cd-6a1fdabfc1fc"
    )
    assert kept.type == "session.record"
    assert kept.payload["kind"] == "meta"


def thinking_record(uuid: str, *blocks: dict, **extra) -> dict:
    return {
        "type": "assistant",
        "uuid": uuid,
        "timestamp": "2026-03-01T22:38:51Z",
        "message": {"id": "msg_1", "role": "assistant", "content": list(blocks)},
        **extra,
    }


THOUGHT = {"type": "thinking", "thinking": "Look first.", "signature": "Eo8D"}


def test_r6_claude_code_thinking_is_a_reasoning_block(conversation):
    events = ClaudeCodeTranslator().translate(thinking_record("u-think", THOUGHT))
    assert [(e["type"], e["event_id"]) for e in events] == [
        # Work before any prompt: a run of its own (T2), as for any shown record.
        ("agent.status", "cc:u-think:1"),
        ("agent.reasoning.delta", "cc:u-think:reasoning"),
        ("agent.step.completed", "cc:u-think:reasoned"),
    ]
    assert events[1]["message_id"] == events[2]["message_id"] == "cc:u-think"
    assert events[1]["delta"] == "Look first." and events[2]["content"] == ""
    ingest(conversation, events)
    (message,) = Message.objects.filter(conversation=conversation)
    # Beside the answer, never its text; ended at once (a record holds a whole thought).
    assert message.role == Role.ASSISTANT and message.content == ""
    assert message.metadata["reasoning"] == "Look first."
    assert message.is_final


def test_r6_claude_code_redacted_thinking_is_encrypted_reasoning(conversation):
    record = thinking_record("u-red", {"type": "redacted_thinking", "data": "EqQBCkYIARgC"})
    ingest(conversation, ClaudeCodeTranslator().translate(record))
    (message,) = Message.objects.filter(conversation=conversation)
    assert message.metadata["reasoning"] == ""
    assert message.metadata["reasoning_encrypted"] is True


def test_r6_thinking_and_text_in_one_record_are_one_answer_with_its_reasoning(conversation):
    """Older versions write a message's blocks in one record: one answer, its reasoning kept."""
    record = thinking_record("u-both", THOUGHT, {"type": "text", "text": "Found it."})
    ingest(conversation, ClaudeCodeTranslator().translate(record))
    (message,) = Message.objects.filter(conversation=conversation)
    assert message.content == "Found it."
    assert message.metadata["reasoning"] == "Look first."


def test_r6_a_sub_agents_thinking_stays_in_the_log(conversation):
    translator = ClaudeCodeTranslator()
    translator.chains["u-side-parent"] = "toolu_task"
    record = thinking_record("u-side", THOUGHT, isSidechain=True, parentUuid="u-side-parent")
    events = translator.translate(record)
    assert [e["type"] for e in events] == ["session.record"]
    assert events[0]["kind"] == "reasoning" and events[0]["text"] == "Look first."


def test_r6_a_session_held_from_before_re_sent_adds_its_reasoning_without_a_clash(conversation):
    """Reasoning was once kept as a `session.record` under the record's id: a tail
    re-sending that session gets duplicates and the reasoning, never a 409."""
    record = thinking_record("u-old", THOUGHT, {"type": "text", "text": "Found it."})
    old = [
        {"type": "session.record", "event_id": "cc:u-old", "timestamp": "2026-03-01T22:38:51Z",
         "dialect": "claude-code", "kind": "reasoning", "message_id": "cc:u-old",
         "text": "Look first."},
        {"type": "agent.status", "event_id": "cc:u-old:1", "run_id": "cc:u-old",
         "timestamp": "2026-03-01T22:38:51Z", "status": "running"},
        {"type": "agent.step.completed", "event_id": "cc:u-old:2", "run_id": "cc:u-old",
         "timestamp": "2026-03-01T22:38:51Z", "message_id": "cc:u-old", "content": "Found it."},
    ]  # fmt: skip
    ingest(conversation, old)
    result = ingest(conversation, ClaudeCodeTranslator().translate(record))
    # The reasoning is new; the status and the text are duplicates. The text's own step
    # completes the message: no empty completion after it to blank it.
    assert (result.accepted, result.duplicates) == (1, 2)
    (message,) = Message.objects.filter(conversation=conversation)
    assert message.content == "Found it."
    assert message.metadata["reasoning"] == "Look first."


def test_r6_session_reasoning_shows_as_an_escaped_reasoning_block(client, conversation):
    hostile = "\n".join(SCRIPT_VARIANTS)
    record = thinking_record("u-h", {"type": "thinking", "thinking": hostile, "signature": "x"})
    ingest(conversation, ClaudeCodeTranslator().translate(record))
    client.force_login(conversation.owner)
    html = client.get(f"/c/{conversation.pk}/").content.decode()
    assert 'class="reasoning"' in html and "data-reasoning" in html
    assert "Thought" in html and "Thinking…" not in html
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "&lt;script&gt;alert(&#x27;xss-script&#x27;)&lt;/script&gt;" in html


def test_unknown_claude_code_records_are_kept_in_the_log(conversation):
    record = {"type": "brand-new-record", "uuid": "u-new", "anything": {"nested": [1, 2]}}
    raw = json.dumps(record).encode() + b"\n"
    import_transcript(raw, "claude-code", conversation)
    (event,) = Event.objects.filter(conversation=conversation)
    assert event.type == "session.record"
    assert event.payload["record"] == record


# -- Codex ------------------------------------------------------------------------------


def test_codex_shell_is_a_command_with_its_exit_code(imported):
    conversation = imported(CODEX, "codex")
    listing = tool(conversation, "call_GfHib9GW3d5m9EB1wMTper0j")
    assert listing.tool_name == "shell"
    assert listing.metadata["args_summary"] == "ls"  # bash -lc "ls": the command itself
    assert listing.metadata["details"] == {"kind": "command", "exit_code": 0}
    assert listing.metadata["tool_result"].startswith("LM Studio configuration.md\nREADME.md\n")
    assert conversation.title.startswith("finish up the users work by rigging up the chatbot-ui")


def test_g18_codex_apply_patch_is_a_diff_named_by_its_file(imported):
    conversation = imported(CODEX, "codex")
    patch = tool(conversation, "call_lfCwuU2mObc6TfAufhHsRVVs")
    assert patch.metadata["args_summary"] == "apply_patch components/chat/chat-helpers/index.ts"
    details = patch.metadata["details"]
    assert details["kind"] == "diff"
    assert details["exit_code"] == 0
    assert details["path"] == "components/chat/chat-helpers/index.ts"
    lines = details["diff"].splitlines()
    assert lines[:3] == [
        "--- a/components/chat/chat-helpers/index.ts",
        "+++ b/components/chat/chat-helpers/index.ts",
        "@@",
    ]
    assert "-  // Ollama API: https://github.com/jmorganca/ollama/blob/main/docs/api.md" in lines


def test_codex_update_plan_is_a_checklist_line(imported):
    conversation = imported(CODEX, "codex")
    (first, _) = tools_named(conversation, "update_plan")
    assert first.metadata["args_summary"].startswith(
        "◐ Inspect existing LM Studio integration points"
    )
    assert " · ☐ Implement necessary code updates" in first.metadata["args_summary"]


def test_r6_codex_reasoning_summary_is_a_reasoning_block(imported):
    conversation = imported(CODEX, "codex")
    reasoning = Event.objects.filter(
        conversation=conversation, type="agent.reasoning.delta"
    ).order_by("seq")
    assert reasoning.count() == 38
    first = reasoning[0].payload
    assert first["delta"] == "**Planning repository inspection**"
    message = Message.objects.get(conversation=conversation, message_id=first["message_id"])
    assert message.role == Role.ASSISTANT and message.content == ""
    assert message.metadata["reasoning"] == "**Planning repository inspection**"
    assert message.is_final
    assert not Event.objects.filter(
        conversation=conversation, type="session.record", payload__kind="reasoning"
    ).exists()
    # Codex writes each summary twice (event_msg agent_reasoning): logged once.
    assert not Event.objects.filter(
        conversation=conversation, payload__record__payload__type="agent_reasoning"
    ).exists()


def test_codex_metadata_records_are_kept_in_the_log(imported):
    conversation = imported(CODEX, "codex")
    kept = Event.objects.filter(conversation=conversation, type="session.record")
    kinds = {e.payload.get("record", {}).get("type") for e in kept}
    assert {"session_meta", "turn_context", "event_msg"} <= kinds


def test_newer_codex_exec_command_and_apply_patch_tool(conversation):
    """Codex 0.5x+ records (`exec_command` with its text output, `apply_patch` as a custom
    tool), in the shapes its rollout files hold."""
    patch = "*** Begin Patch\n*** Add File: hello.py\n+print('hi')\n*** End Patch\n"
    records = [
        {"timestamp": "2026-01-02T03:04:05Z", "type": "response_item", "payload": {
            "type": "function_call", "name": "exec_command", "call_id": "call_x1",
            "arguments": json.dumps({"cmd": "pytest -q", "workdir": "/repo"})}},
        {"timestamp": "2026-01-02T03:04:07Z", "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": "call_x1",
            "output": "Chunk ID: 9f\nWall time: 1.2 seconds\nProcess exited with code 1\n"
                      "Output:\n1 failed, 3 passed\n"}},
        {"timestamp": "2026-01-02T03:04:08Z", "type": "response_item", "payload": {
            "type": "custom_tool_call", "status": "completed", "call_id": "call_p1",
            "name": "apply_patch", "input": patch}},
        {"timestamp": "2026-01-02T03:04:09Z", "type": "response_item", "payload": {
            "type": "custom_tool_call_output", "call_id": "call_p1",
            "output": json.dumps({"output": "Success. Updated the following files:\nA hello.py\n",
                                  "metadata": {"exit_code": 0, "duration_seconds": 0.1}})}},
    ]  # fmt: skip
    raw = "\n".join(json.dumps(r) for r in records).encode()
    import_transcript(raw, "codex", conversation)
    run = tool(conversation, "call_x1")
    assert run.metadata["args_summary"] == "pytest -q"
    assert run.metadata["tool_result"] == "1 failed, 3 passed\n"
    assert run.metadata["details"] == {"kind": "command", "exit_code": 1}
    assert run.tool_status == ToolStatus.ERROR  # G15: a non-zero exit is a failure
    applied = tool(conversation, "call_p1")
    assert applied.metadata["args"] == {"input": patch}
    assert applied.metadata["args_summary"] == "apply_patch hello.py"
    assert applied.metadata["details"]["diff"].splitlines() == [
        "--- /dev/null",
        "+++ b/hello.py",
        "@@",
        "+print('hi')",
    ]
    assert applied.metadata["tool_duration_ms"] == 100


# -- both -------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "fmt"), [(CLAUDE, "claude-code"), (CODEX, "codex")])
def test_reimporting_a_session_adds_nothing(conversation, path, fmt):
    first = import_transcript(path.read_bytes(), fmt, conversation)
    assert first.accepted > 0 and first.duplicates == 0
    again = import_transcript(path.read_bytes(), fmt, conversation)
    assert (again.accepted, again.duplicates) == (0, first.accepted)


def test_a_longer_copy_of_the_session_adds_only_its_new_records(conversation):
    """A session imported while it ran, then again when it grew: the records already
    there are duplicates (their ids are theirs), only the new ones are added."""
    lines = CLAUDE.read_bytes().splitlines(keepends=True)
    import_transcript(b"".join(lines[:20]), "claude-code", conversation)
    before = Event.objects.filter(conversation=conversation).count()
    result = import_transcript(b"".join(lines), "claude-code", conversation)
    assert result.duplicates >= 20
    whole = parse_transcript(CLAUDE.read_bytes(), "claude-code")
    ids = {e["event_id"] for e in whole.events}
    stored = set(Event.objects.filter(conversation=conversation).values_list("event_id", flat=True))
    assert ids <= stored
    assert Event.objects.filter(conversation=conversation).count() > before


def test_import_command_takes_the_session_formats(db, django_user_model):
    django_user_model.objects.create(username="ann")
    out = io.StringIO()
    call_command(
        "import_transcript", str(CODEX), "--format", "codex", "--owner", "ann", stdout=out,
        stderr=io.StringIO(),
    )  # fmt: skip
    conversation = Conversation.objects.get(pk=out.getvalue().strip().splitlines()[-1])
    assert Message.objects.filter(conversation=conversation, tool_name="shell").count() == 37


def test_a_line_that_is_not_json_is_refused_naming_it(conversation):
    raw = CLAUDE.read_bytes().splitlines()[0] + b"\n{not json\n"
    with pytest.raises(TranscriptError) as caught:
        import_transcript(raw, "claude-code", conversation)
    assert caught.value.where == "line 2"
    assert not Event.objects.filter(conversation=conversation).exists()


def test_t1_hostile_session_text_renders_inert(client, conversation, django_user_model):
    hostile = "\n".join(SCRIPT_VARIANTS)
    records = [
        {"type": "user", "uuid": "h1", "message": {"role": "user", "content": hostile}},
        {"type": "assistant", "uuid": "h2", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_h", "name": "Bash",
             "input": {"command": hostile}}]}},
        {"type": "user", "uuid": "h3", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_h", "content": hostile}]},
         "toolUseResult": {"stdout": hostile + "\x00\ud800", "stderr": ""}},
        {"type": "assistant", "uuid": "h4", "message": {"role": "assistant", "content": [
            {"type": "text", "text": hostile}]}},
    ]  # fmt: skip
    raw = "\n".join(json.dumps(r) for r in records).encode()
    import_transcript(raw, "claude-code", conversation)
    # NUL and the lone surrogate no column could store became U+FFFD.
    assert tool(conversation, "toolu_h").metadata["tool_result"].endswith("\ufffd\ufffd")
    client.force_login(conversation.owner)
    html = client.get(f"/c/{conversation.pk}/").content.decode()
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "<svg onload" not in html
    assert "&lt;script&gt;alert(&#x27;xss-script&#x27;)&lt;/script&gt;" in html


def test_t3_secrets_in_kept_records_are_masked_in_exports(conversation):
    from chatui.read.exporters import export_text

    secret = "sk-" + "a" * 40
    records = [
        {"type": "system", "uuid": "s1", "content": f"OPENAI_API_KEY={secret}"},
        {"type": "assistant", "uuid": "s2", "message": {"role": "assistant", "content": [
            {"type": "thinking", "thinking": f"the key is {secret}"}]}},
    ]  # fmt: skip
    raw = "\n".join(json.dumps(r) for r in records).encode()
    import_transcript(raw, "claude-code", conversation)
    exported = export_text(conversation, "events")
    assert secret not in exported
    assert "aaaa" in exported  # masked as ••••, its last 4 characters kept
    # The log itself keeps what was sent.
    texts = [
        e.payload.get("text") or e.payload.get("delta") or ""
        for e in Event.objects.filter(conversation=conversation)
    ]
    assert any(secret in text for text in texts)


def test_the_translators_state_stays_small_with_many_unanswered_patches():
    """The state goes back and forth with every request of a tail: unanswered patches
    (a session cut off mid-edit, over and over) do not pile up in it."""
    from chatui.ingest.dialects.codex import MAX_PATCHES_KEPT, CodexTranslator

    translator = CodexTranslator()
    patch = "*** Begin Patch\n*** Add File: big.txt\n" + "+x\n" * 50_000 + "*** End Patch\n"
    for n in range(40):
        translator.translate(
            {"type": "response_item", "payload": {
                "type": "custom_tool_call", "name": "apply_patch", "call_id": f"p{n}",
                "input": patch}}
        )  # fmt: skip
    state = translator.dump_state()
    assert sum("\x1f" in value for value in state["calls"].values()) == MAX_PATCHES_KEPT
    assert len(json.dumps(state)) < 2_000_000
    # The newest keeps its patch: its output still shows the diff.
    (done,) = CodexTranslator(state).translate(
        {"type": "response_item", "payload": {
            "type": "custom_tool_call_output", "call_id": "p39", "output": "Done!"}}
    )  # fmt: skip
    assert done["details"]["kind"] == "diff"
