"""Claude Code's session files (`~/.claude/projects/<project>/<session>.jsonl`) → chatui
events, for `import_transcript --format claude-code` and for `chatui-tail` alike
(docs/events.md#claude-code; what the session dialects share: `sessions`).

Each line is a record: `type` `user` / `assistant` with an Anthropic `message`, a `uuid`
(the record's key: its events are `cc:<uuid>`, `cc:<uuid>:1`, …), `parentUuid`,
`isSidechain`, `timestamp`, and for a tool's answer a `toolUseResult` with the tool's own
structured result. Claude Code writes one content block per record, so one API message
spans several records; each record's text and calls become their own step.

- A user prompt (text, not `isMeta` nor `isCompactSummary`, not a sidechain's) starts a
  run; a slash command (`<command-name>/x</command-name><command-args>y</command-args>`)
  reads as "/x y".
- `tool_use` → the step's call and `agent.tool.started`; `tool_result` →
  `agent.tool.completed` (`is_error` → its error). By tool:
  Bash → `details` `{kind: command, exit_code}` (0 unless it failed; "Exit code N" read
  from a failure); Edit / MultiEdit / Write → `{kind: diff, path, diff}` (the unified diff
  of Claude Code's `structuredPatch`), or `{kind: edit, path, old, new}` where there is no
  patch (a file created whole: `old` ""); Read → the file's text as the result,
  `{kind: file, path, start_line, num_lines, total_lines}`; TodoWrite → its call line is
  the checklist ("☑ done · ◐ doing · ☐ to do"); Task / Agent → `{kind: subagent}`.
- Sub-agents: the records a Task's agent writes (`isSidechain: true`) are nested under
  its call (G13): their tool calls start with `parent_tool_call_id`, their text is the
  call's progress output. A sidechain is tied to its call by `agentId` where the record
  has one, by its first prompt (the call's `prompt`), else to the newest open call.
- `thinking` → a reasoning block on its message (R6, `agent.reasoning.delta`);
  `redacted_thinking` → encrypted reasoning. A sub-agent's thinking stays in the log.
- Every other record (`summary`, `system`, `file-history-snapshot`, meta prompts, record
  types of newer versions) is kept in the log as a `session.record`.
"""

from __future__ import annotations

import re
from typing import Any

from .files import Draft
from .sessions import (
    MAX_ID_CHARS,
    MAX_STATE_ENTRIES,
    SessionTranslator,
    checklist_line,
    cut,
    digest_key,
    own_key,
    parse_file,
    text_of,
    tool_name,
)

DIALECT = "claude-code"
SHELL_TOOLS = frozenset({"Bash"})
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
READ_TOOLS = frozenset({"Read"})
TODO_TOOLS = frozenset({"TodoWrite"})
AGENT_TOOLS = frozenset({"Task", "Agent"})

_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_EXIT_CODE = re.compile(r"^(?:Error: )?Exit code (-?\d{1,4})\b")


class ClaudeCodeTranslator(SessionTranslator):
    dialect = DIALECT
    prefix = "cc"

    def key_of(self, record: dict[str, Any]) -> str:
        return own_key(record.get("uuid"), record)

    def _record(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        message = record.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict):
            self.keep(record, "record")
            return
        parent = self._sub_agent_of(record) if record.get("isSidechain") is True else None
        if kind == "assistant":
            self._assistant(record, message, parent)
        else:
            self._user(record, message, parent)

    # -- user records: prompts and tool results -----------------------------

    def _user(self, record: dict[str, Any], message: dict[str, Any], parent: str | None) -> None:
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        for block in results:
            self._result(record, block, len(results))
        if results:
            return
        text = text_of(content)
        written_by_claude_code = (
            record.get("isMeta") is True or record.get("isCompactSummary") is True
        )
        if written_by_claude_code or parent is not None or not text.strip():
            # Expanded slash-command prompts, the summary a compaction writes, a sub-agent's
            # prompt (its call's argument already), an empty message: not the person's words.
            self.keep(record, "meta" if parent is None else "sub-agent prompt")
            return
        self.start_run()
        self.emit("user.message", message_id=f"cc:{self._key}", content=cut(_readable(text)))

    def _result(self, record: dict[str, Any], block: dict[str, Any], results: int) -> None:
        call_id = block.get("tool_use_id")
        if not isinstance(call_id, str) or not call_id.strip() or len(call_id) > MAX_ID_CHARS:
            self.keep(record, "tool result without a call id")
            return
        name = self.calls.pop(call_id, "")
        # `toolUseResult` describes the record's one result; with several, only the text.
        extra = record.get("toolUseResult") if results == 1 else None
        text = text_of(block.get("content"))
        fields: dict[str, Any] = {"tool_call_id": call_id}
        if name:
            fields["tool_name"] = name
        failed = block.get("is_error") is True
        if failed:
            fields["error"] = _error_text(text, extra) or "tool failed"
        else:
            fields["result"] = text
        details = _details(name, extra, failed, text, record.get("cwd"))
        if details:
            fields["details"] = details
        if isinstance(extra, dict):
            if name in READ_TOOLS and not failed:
                file = extra.get("file")
                if isinstance(file, dict) and isinstance(file.get("content"), str):
                    fields["result"] = file["content"]  # the file itself, not numbered lines
            if name in SHELL_TOOLS and not failed and isinstance(extra.get("stdout"), str):
                stderr = extra.get("stderr") if isinstance(extra.get("stderr"), str) else ""
                fields["result"] = extra["stdout"] + (("\n" + stderr) if stderr else "")
            duration = extra.get("totalDurationMs", extra.get("durationMs"))
            if _is_number(duration) and 0 <= duration < 10**11:
                fields["duration_ms"] = duration
        if name in AGENT_TOOLS or call_id in self.tasks:
            self._end_sub_agent(call_id, record, extra)
        self.emit("agent.tool.completed", **fields)

    # -- assistant records: text, calls, thinking ----------------------------

    def _assistant(
        self, record: dict[str, Any], message: dict[str, Any], parent: str | None
    ) -> None:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        message_id = f"cc:{self._key}"
        blocks = [block for block in blocks if isinstance(block, dict)]
        texts = [
            block["text"]
            for block in blocks
            if block.get("type") == "text" and isinstance(block.get("text"), str)
        ]
        calls = [block for block in blocks if block.get("type") == "tool_use"]
        text = cut("\n\n".join(t for t in texts if t))
        # The record's own step completes `message_id` (its text, no calls): the
        # reasoning needs no completion of its own.
        answered = parent is None and bool(text.strip()) and not calls
        for block in blocks:
            kind = block.get("type")
            if kind in ("thinking", "redacted_thinking"):
                thought = block.get("thinking") if kind == "thinking" else ""
                if not isinstance(thought, str):
                    continue
                encrypted = kind == "redacted_thinking"
                # A sub-agent's thinking stays in the log: its words show in its call's
                # entry, which has no reasoning block.
                if parent is None:
                    self.reasoning(message_id, thought, encrypted=encrypted, ends=not answered)
                else:
                    self.reasoning_record(message_id, thought, encrypted=encrypted)
        if parent is not None:
            if text.strip():
                # A sub-agent's words: its call's live output (the log keeps them all).
                self.emit("agent.tool.progress", tool_call_id=parent, output=text + "\n")
        elif text.strip() and not calls:
            self.emit("agent.step.completed", message_id=message_id, content=text)
        elif text.strip():
            # Text and calls in one record (older versions): one step says and calls.
            self.emit("agent.step.completed", message_id=f"{message_id}:text", content=text)
        for block in calls:
            self._call(record, block, parent, message_id)
        if not blocks or (not text.strip() and not calls and not self._out):
            self.keep(record, "empty message")

    def _call(
        self, record: dict[str, Any], block: dict[str, Any], parent: str | None, message_id: str
    ) -> None:
        call_id = block.get("id")
        if not isinstance(call_id, str) or not call_id.strip() or len(call_id) > MAX_ID_CHARS:
            call_id = f"cc:{self._key}:call"
        name = tool_name(block.get("name"))
        args = block.get("input") if isinstance(block.get("input"), dict) else {}
        summary = _todo_line(args) if name in TODO_TOOLS else None
        if name in AGENT_TOOLS:
            self.tasks[call_id] = digest_key(args.get("prompt") or "")
        self.call(
            call_id,
            name,
            message_id=f"{message_id}:{call_id}"[:MAX_ID_CHARS],
            args=args,
            args_summary=summary,
            parent_tool_call_id=parent,
        )

    # -- sub-agents ---------------------------------------------------------

    def _sub_agent_of(self, record: dict[str, Any]) -> str | None:
        """The Task call a sidechain record runs under, remembered for its chain."""
        agent = _agent_id(record)
        parent_uuid = record.get("parentUuid")
        found = None
        if agent and agent in self.agents:
            found = self.agents[agent]
        elif isinstance(parent_uuid, str) and parent_uuid in self.chains:
            found = self.chains[parent_uuid]
        elif self.tasks:
            message = record.get("message") or {}
            prompt = digest_key(text_of(message.get("content")))
            matching = [call for call, digest in self.tasks.items() if digest == prompt]
            found = (matching or list(self.tasks))[-1]
        elif self.agents:
            # A sidechain record with nothing to place it by (its agent's result came
            # first, as in a file put back together): the latest agent's.
            found = list(self.agents.values())[-1]
        if found is None:
            return None
        if agent:
            self._remember(self.agents, agent, found)
        if found in self.tasks:
            self._remember(self.chains, self._key, found)
        return found

    def _end_sub_agent(self, call_id: str, record: dict[str, Any], extra: Any) -> None:
        """The Task answered: its chain is forgotten, its agent's id kept (a file may hold
        the agent's records after its result)."""
        self.tasks.pop(call_id, None)
        self.chains = {key: call for key, call in self.chains.items() if call != call_id}
        agent = _agent_id(extra if isinstance(extra, dict) else {}) or _agent_id(record)
        if agent:
            self._remember(self.agents, agent, call_id)

    @staticmethod
    def _remember(table: dict[str, str], key: str, call_id: str) -> None:
        table[key] = call_id
        while len(table) > MAX_STATE_ENTRIES:
            table.pop(next(iter(table)))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _agent_id(record: dict[str, Any]) -> str | None:
    agent = record.get("agentId")
    return agent if isinstance(agent, str) and 0 < len(agent) <= MAX_ID_CHARS else None


# -- results by tool -------------------------------------------------------------------


def _details(name: str, extra: Any, failed: bool, text: str, cwd: Any) -> dict[str, Any] | None:
    if name in SHELL_TOOLS:
        details: dict[str, Any] = {"kind": "command"}
        found = _EXIT_CODE.match(text) or (
            _EXIT_CODE.match(extra) if isinstance(extra, str) else None
        )
        if found:
            details["exit_code"] = int(found.group(1))
        elif not failed:
            details["exit_code"] = 0
        if isinstance(cwd, str) and cwd:
            details["cwd"] = cwd
        return details
    if not isinstance(extra, dict):
        return None
    if name in EDIT_TOOLS or "structuredPatch" in extra:
        return _edit_details(extra)
    if name in READ_TOOLS and isinstance(extra.get("file"), dict):
        file = extra["file"]
        details = {"kind": "file", "path": file.get("filePath")}
        for key, label in (
            ("startLine", "start_line"),
            ("numLines", "num_lines"),
            ("totalLines", "total_lines"),
        ):
            if isinstance(file.get(key), int):
                details[label] = file[key]
        return details if isinstance(details["path"], str) else None
    if name in AGENT_TOOLS:
        details = {"kind": "subagent", "state": "failed" if failed else "completed"}
        if isinstance(extra.get("agentId"), str):
            details["id"] = extra["agentId"]
        for key, label in (("totalTokens", "tokens"), ("totalToolUseCount", "tool_uses")):
            if isinstance(extra.get(key), int):
                details[label] = extra[key]
        return details
    if name in TODO_TOOLS and isinstance(extra.get("newTodos"), list):
        return {"kind": "checklist", "items": _todo_items({"todos": extra["newTodos"]})}
    return None


def _edit_details(extra: dict[str, Any]) -> dict[str, Any] | None:
    path = extra.get("filePath")
    if not isinstance(path, str):
        return None
    patch = extra.get("structuredPatch")
    if isinstance(patch, list) and patch:
        diff = _unified_diff(path, patch)
        if diff:
            return {"kind": "diff", "path": path, "diff": cut(diff)}
    if extra.get("type") == "create" and isinstance(extra.get("content"), str):
        return {"kind": "edit", "path": path, "old": "", "new": extra["content"]}
    old, new = extra.get("oldString"), extra.get("newString")
    if isinstance(old, str) and isinstance(new, str):
        return {"kind": "edit", "path": path, "old": old, "new": new}
    return None


def _unified_diff(path: str, hunks: list[Any]) -> str:
    """Claude Code's `structuredPatch` (hunks of `lines` prefixed " ", "+", "-") as the
    unified diff it is."""
    relative = path.lstrip("/")
    out = [f"--- a/{relative}", f"+++ b/{relative}"]
    for hunk in hunks:
        if not isinstance(hunk, dict) or not isinstance(hunk.get("lines"), list):
            return ""
        numbers = [hunk.get(key) for key in ("oldStart", "oldLines", "newStart", "newLines")]
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
            return ""
        out.append(f"@@ -{numbers[0]},{numbers[1]} +{numbers[2]},{numbers[3]} @@")
        out.extend(line for line in hunk["lines"] if isinstance(line, str))
    return "\n".join(out) + "\n"


def _error_text(text: str, extra: Any) -> str:
    """A failure's text without Claude Code's <tool_use_error> wrapper."""
    text = text.strip()
    if text.startswith("<tool_use_error>") and text.endswith("</tool_use_error>"):
        text = text[len("<tool_use_error>") : -len("</tool_use_error>")].strip()
    if not text and isinstance(extra, str):
        text = extra
    return text


def _todo_items(args: dict[str, Any]) -> list[dict[str, str]]:
    todos = args.get("todos")
    items = []
    for todo in todos if isinstance(todos, list) else []:
        if isinstance(todo, dict) and isinstance(todo.get("content"), str):
            status = todo.get("status") if isinstance(todo.get("status"), str) else "pending"
            items.append({"text": todo["content"], "status": status})
    return items


def _todo_line(args: dict[str, Any]) -> str | None:
    items = _todo_items(args)
    return checklist_line([(i["text"], i["status"]) for i in items]) if items else None


def _readable(text: str) -> str:
    """A slash command as the person typed it: "/name args"."""
    command = _COMMAND.search(text)
    if command is None:
        return text
    args = _COMMAND_ARGS.search(text)
    typed = command.group(1).strip()
    if args and args.group(1).strip():
        typed += " " + args.group(1).strip()
    return typed or text


def parse(raw: bytes) -> Draft:
    return parse_file(raw, ClaudeCodeTranslator())
