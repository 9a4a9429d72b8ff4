"""OpenAI Codex's session files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) → chatui
events, for `import_transcript --format codex` and for `chatui-tail` alike
(docs/events.md#codex; what the session dialects share: `sessions`).

Each line is `{timestamp, type, payload}` (older versions wrote the payload alone):

- `response_item` `message`: a user's (`input_text`) starts a run and is a user message —
  except the context Codex injects (`<environment_context>`, AGENTS.md instructions), kept
  in the log; an assistant's (`output_text`) is an `agent.step.completed`.
- `response_item` `function_call` {name, arguments, call_id} → the step's call and
  `agent.tool.started` (`arguments` decoded; kept as text when it is not a JSON object);
  `custom_tool_call` {name, input, call_id} (`apply_patch`) the same, `input` as `args.input`.
  `function_call_output` / `custom_tool_call_output` {call_id, output} →
  `agent.tool.completed`: shell tools (`shell`, `exec_command`, `local_shell`, …) get
  `details` `{kind: command, exit_code}` from Codex's `metadata.exit_code` or its
  "Process exited with code N" line, and the output as the result.
- A patch (`apply_patch`, or `shell` running `apply_patch <<'EOF' …`) → `details`
  `{kind: diff, path, diff}`: Codex's patch as a unified diff (its hunks name no line
  numbers); the call line names the files.
- `update_plan` {plan: [{step, status}]} → its call line is the checklist.
- `reasoning` {summary, encrypted_content} → a reasoning block (R6,
  `agent.reasoning.delta`): the summary text, or only that it happened when all of it
  is encrypted.
- `event_msg` `task_complete` / `turn_aborted` end the run. The `event_msg` copies of what
  `response_item`s already hold (`user_message`, `agent_message`, `agent_reasoning`) are
  skipped; everything else (`session_meta`, `turn_context`, `token_count`, newer record
  types) is kept in the log as a `session.record`.

Codex's records carry no id of their own except a call's `call_id`: a call is
`codex:<call_id>`, its output `codex:<call_id>:out`, any other record `codex:<SHA-256 of its
canonical JSON>`.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from .files import Draft
from .sessions import (
    MAX_ID_CHARS,
    SessionTranslator,
    checklist_line,
    clean,
    cut,
    digest_key,
    parse_file,
    text_of,
    tool_name,
)

DIALECT = "codex"
SHELL_TOOLS = frozenset(
    {
        "shell",
        "exec_command",
        "local_shell",
        "local_shell_call",
        "container.exec",
        "shell_command",
        "unified_exec",
    }
)
PATCH_TOOLS = frozenset({"apply_patch"})
#: Unanswered patches kept in the translator's state for their outputs' diffs, and their size.
MAX_PATCHES_KEPT = 8
MAX_PATCH_CHARS = 200_000
PLAN_TOOLS = frozenset({"update_plan"})
#: event_msg types that repeat a response_item: not logged twice.
COPIES = frozenset(
    {"user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content"}
)
RUN_ENDS = frozenset({"task_complete", "turn_complete", "turn_aborted"})
#: User messages Codex writes itself, before the person's first words.
INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")
ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
    }
)

_EXITED = re.compile(r"(?:Process exited with code|Exit code:?)\s*(-?\d{1,4})")
_PATCH = re.compile(r"\*\*\* Begin Patch\n.*?(?:\*\*\* End Patch|\Z)", re.S)
_PATCH_FILE = re.compile(r"^\*\*\* (Update|Add|Delete) File: (.+)$", re.M)


class CodexTranslator(SessionTranslator):
    dialect = DIALECT
    prefix = "codex"

    def key_of(self, record: dict[str, Any]) -> str:
        payload = _payload(record)
        call_id = payload.get("call_id") if payload else None
        if isinstance(call_id, str) and call_id.strip() and len(call_id) <= 120:
            kind = payload.get("type", "")
            return call_id + (":out" if str(kind).endswith("_output") else "")
        return digest_key(record)

    def _record(self, record: dict[str, Any]) -> None:
        payload = _payload(record)
        if payload is None:
            self.keep(record, "record")
            return
        kind = payload.get("type")
        if record.get("type") == "event_msg":
            if kind in COPIES:
                self.skip(f"event_msg {kind} (a copy)")
            elif kind in RUN_ENDS and self.run:
                self.keep(record, "run end")
                self.emit("agent.status", status="completed")
                self.run = ""
            else:
                self.keep(record, "event")
            return
        if kind == "message":
            self._message(record, payload)
        elif kind == "reasoning":
            self._reasoning(payload)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            self._call(payload)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._output(record, payload)
        else:
            self.keep(record, "record")

    def _message(self, record: dict[str, Any], payload: dict[str, Any]) -> None:
        text = text_of(payload.get("content"))
        role = payload.get("role")
        if role == "user" and text.strip() and not text.lstrip().startswith(INJECTED):
            self.start_run()
            self.emit("user.message", message_id=f"codex:{self._key}", content=cut(text))
        elif role == "assistant" and text.strip():
            self.emit("agent.step.completed", message_id=f"codex:{self._key}", content=cut(text))
        else:
            self.keep(record, "context" if role == "user" else "message")

    def _reasoning(self, payload: dict[str, Any]) -> None:
        summary = payload.get("summary")
        text = text_of(summary) if isinstance(summary, list) else ""
        if not text.strip():
            text = text_of(payload.get("content"))
        encrypted = not text.strip() and bool(payload.get("encrypted_content"))
        self.reasoning(f"codex:{self._key}", cut(text), encrypted=encrypted)

    def _call(self, payload: dict[str, Any]) -> None:
        call_id = payload.get("call_id") or payload.get("id")
        if not isinstance(call_id, str) or not call_id.strip() or len(call_id) > MAX_ID_CHARS:
            call_id = f"codex:{self._key}"
        name = tool_name(payload.get("name") or payload.get("type"))
        fields = _arguments(payload)
        args = fields.get("args") or {}
        patch = _patch_in(name, args)
        if patch is not None:
            files = [path.strip() for _, path in _PATCH_FILE.findall(patch)]
            fields["args_summary"] = "apply_patch " + ", ".join(files) if files else None
        elif name in SHELL_TOOLS:
            fields["args_summary"] = _command_line(args) or fields.get("args_summary")
        elif name in PLAN_TOOLS:
            fields["args_summary"] = _plan_line(args) or fields.get("args_summary")
        self.call(call_id, name, **fields)
        if patch is not None:
            # Remembered with the call (in the state): its output shows the diff. Only the
            # newest few unanswered patches, so the state the tail sends back stays small.
            self.calls[call_id] = name + "\x1f" + cut(patch, MAX_PATCH_CHARS)
            waiting = [key for key, value in self.calls.items() if "\x1f" in value]
            for stale in waiting[:-MAX_PATCHES_KEPT]:
                self.calls[stale] = self.calls[stale].partition("\x1f")[0]

    def _output(self, record: dict[str, Any], payload: dict[str, Any]) -> None:
        call_id = payload.get("call_id")
        if not isinstance(call_id, str) or not call_id.strip() or len(call_id) > MAX_ID_CHARS:
            self.keep(record, "output without a call id")
            return
        remembered = self.calls.pop(call_id, "")
        name, _, patch = remembered.partition("\x1f")
        text, exit_code, duration_ms = _output_of(payload.get("output"))
        fields: dict[str, Any] = {"tool_call_id": call_id, "result": cut(text)}
        if name:
            fields["tool_name"] = name
        if duration_ms is not None:
            fields["duration_ms"] = duration_ms
        if name in SHELL_TOOLS or exit_code is not None:
            details: dict[str, Any] = {"kind": "command"}
            if exit_code is not None:
                details["exit_code"] = exit_code
            fields["details"] = details
        if patch:
            diff = _unified(patch)
            if diff:
                files = _PATCH_FILE.findall(patch)
                fields["details"] = {
                    **fields.get("details", {}),
                    "kind": "diff",
                    "path": files[0][1].strip() if files else None,
                    "diff": cut(diff),
                }
        self.emit("agent.tool.completed", **fields)


def _payload(record: dict[str, Any]) -> dict[str, Any] | None:
    payload = record.get("payload")
    if isinstance(payload, dict) and isinstance(payload.get("type"), str):
        return payload
    if record.get("type") in ITEM_TYPES:  # older versions: the item is the line
        return record
    return None


def _arguments(payload: dict[str, Any]) -> dict[str, Any]:
    raw = payload.get("arguments", payload.get("input", payload.get("action")))
    if isinstance(raw, dict):
        return {"args": raw}
    if isinstance(raw, str):
        try:
            decoded = json.loads(raw)
        except (ValueError, RecursionError):
            decoded = None
        if isinstance(decoded, dict):
            return {"args": clean(decoded)}  # decoded here: NaN and NUL made storable
        # A custom tool's input is free text (apply_patch's patch).
        return (
            {"args": {"input": cut(raw)}}
            if payload.get("type") == "custom_tool_call"
            else {"args_summary": cut(raw)}
        )
    return {}


def _command_line(args: dict[str, Any]) -> str | None:
    command = args.get("command", args.get("cmd"))
    if isinstance(command, str):
        return command
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        if len(command) == 3 and command[0].endswith("sh") and command[1] in ("-lc", "-c"):
            return command[2]
        return shlex.join(command)
    return None


def _plan_line(args: dict[str, Any]) -> str | None:
    plan = args.get("plan")
    items = [
        (step["step"], step.get("status") if isinstance(step.get("status"), str) else "pending")
        for step in (plan if isinstance(plan, list) else [])
        if isinstance(step, dict) and isinstance(step.get("step"), str)
    ]
    return checklist_line(items) if items else None


def _patch_in(name: str, args: dict[str, Any]) -> str | None:
    """The patch a call applies: apply_patch's input, or a shell running apply_patch."""
    if name in PATCH_TOOLS:
        for key in ("input", "patch"):
            if isinstance(args.get(key), str):
                return args[key]
        return None
    command = _command_line(args) if name in SHELL_TOOLS else None
    if command and command.lstrip().startswith("apply_patch"):
        found = _PATCH.search(command)
        return found.group(0) if found else None
    return None


def _unified(patch: str) -> str:
    """Codex's patch format as a unified diff: each file's `--- a/…` / `+++ b/…` header,
    its `@@` lines (with no line numbers: the format names none) and its ` `/`+`/`-` lines."""
    out: list[str] = []
    adding = False
    for line in patch.split("\n"):
        header = _PATCH_FILE.match(line)
        if header:
            action, path = header.group(1), header.group(2).strip()
            old = "/dev/null" if action == "Add" else f"a/{path}"
            new = "/dev/null" if action == "Delete" else f"b/{path}"
            out += [f"--- {old}", f"+++ {new}"]
            adding = action == "Add"
            if adding:
                out.append("@@")
        elif line.startswith("@@") or (line[:1] in ("+", "-", " ") and out):
            out.append(line)
        elif adding and line and not line.startswith("*** "):
            out.append("+" + line)
    return "\n".join(out) + "\n" if out else ""


def _output_of(output: Any) -> tuple[str, int | None, float | None]:
    """(text, exit code, duration in ms) of a call's output: Codex's JSON
    `{output, metadata: {exit_code, duration_seconds}}`, or exec_command's text."""
    if isinstance(output, dict | list):
        output = json.dumps(output, ensure_ascii=False)
    if not isinstance(output, str):
        return "", None, None
    try:
        decoded = json.loads(output)
    except (ValueError, RecursionError):
        decoded = None
    if isinstance(decoded, dict) and isinstance(decoded.get("output"), str):
        metadata = decoded.get("metadata") if isinstance(decoded.get("metadata"), dict) else {}
        code = metadata.get("exit_code")
        seconds = metadata.get("duration_seconds")
        duration = (
            seconds * 1000
            if isinstance(seconds, int | float)
            and not isinstance(seconds, bool)
            and 0 <= seconds < 10**8
            else None
        )
        return decoded["output"], code if _is_code(code) else None, duration
    found = _EXITED.search(output[:2000])
    text = output
    if found and "\nOutput:\n" in output:
        text = output.split("\nOutput:\n", 1)[1]  # exec_command's header lines dropped
    return text, int(found.group(1)) if found else None, None


def _is_code(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -9999 <= value <= 9999


def parse(raw: bytes) -> Draft:
    return parse_file(raw, CodexTranslator())
