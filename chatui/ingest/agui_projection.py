"""AG-UI's events applied to messages and runs (docs/events.md#ag-ui): the projector's side
of the dialect chatui.ingest.dialects.agui translates.

`AguiProjection` is a part of `chatui.ingest.projection.Projector` (a mixin, so the AG-UI
operations share the projector's caches and helpers): `apply_agui` asks the dialect for
the operations one logged event means and applies each, native ones through the
projector's own handlers. Deterministic like the rest of the projector: everything it
names (run, message and status ids) comes from the events themselves.

What AG-UI needs beyond native events, each `_agui_<name>` below: a message's role known
from its start (`text`), arguments streamed into the call line and read at the end
(`args`, `args_end`, `call_chunk`), a result remembered by its message id (`result`) so a
later outcome marker finds it (`outcome`), steps as the run's status line (`step`),
reasoning (`reasoning`), interrupts as approval requests (`interrupt`), usage (`usage`),
and snapshots as reconciliation (`reconcile`). G14: a call of the same tool with the same
arguments right after a failed one in the same run is its next attempt (`_link_attempts`).

Why it is long: one operation per kind of AG-UI event that native events do not cover,
and the reconciliation of snapshots; each is short, and they share the projector's state.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from chatui.ingest.dialects import agui
from chatui.models import POSITION_STRIDE, Event, Message, Role, Run, ToolStatus, position_for

from .events import DEFAULT_APPROVAL_TIMEOUT_S, MAX_APPROVAL_TIMEOUT_S
from .values import MAX_TOKENS

#: Pydantic AI's outcomes that make a finished call a failure (`denied` is its own).
FAILED_OUTCOMES = ("retried", "failed", "interrupted")
#: Roles whose text is a message on the page; `system`/`developer` stay in the log.
SHOWN_ROLES = (Role.ASSISTANT, Role.USER)


class AguiProjection:
    """The AG-UI operations of `Projector` (see the module's docstring)."""

    conversation: Any
    #: The projector's tool statuses (chatui.ingest.projection): finished, still open.
    FINISHED: tuple[str, ...]
    OPEN: tuple[str, ...]
    # Caches of what the log says (a message's role, a subagent's parent call), never
    # state of their own: a stream projects the same whichever batches it came in.
    _agui_roles: dict[str, str]
    _agui_subagents: dict[str, str]

    def _agui_reset(self) -> None:
        self._agui_roles = {}
        self._agui_subagents = {}

    # -- entry point ---------------------------------------------------------------

    def apply_agui(self, event: Event) -> None:
        kind = event.type.removeprefix(agui.LOG_PREFIX)
        for name, fields in agui.translate(kind, event.payload):
            if name.startswith(agui.LOG_PREFIX):
                getattr(self, "_agui_" + name.removeprefix(agui.LOG_PREFIX))(event, fields)
            else:
                self._agui_native(event, name, fields)

    def _agui_native(self, event: Event, name: str, fields: dict[str, Any]) -> None:
        """A native operation, once: a run ended (or failed) is not ended again by a
        re-sent end under another body (RUN_ERROR has no id to be a duplicate by)."""
        ends = name == "agent.status" and fields["status"] in ("completed", "failed", "cancelled")
        if ends and self._run_has_ended(event.run_id):
            return
        getattr(self, "_on_" + name.replace(".", "_"))(event, fields)

    # -- text messages -------------------------------------------------------------

    def _agui_text(self, event: Event, fields: dict[str, Any]) -> None:
        """START names the role (nothing shows yet: an empty START/END pair shows
        nothing, R3); CONTENT and CHUNK stream text into a message of that role."""
        message_id = fields["message_id"]
        if fields.get("chunk") and not message_id:
            message_id = self._open_chunk(event)
        if "role" in fields:
            self._agui_roles[message_id] = fields["role"]
        delta = fields.get("delta", "")
        if not delta or not message_id:
            return
        message = self._find(message_id)
        role = message.role if message is not None else self._agui_role(event, message_id)
        if role not in SHOWN_ROLES:
            return  # system/developer text: kept in the log, shown in the admin only
        if message is None:
            self._create(event, message_id, role, content=delta, is_final=False)
        elif message.is_final:
            return  # text after its end is ignored, as a native delta after its step
        elif role == Role.ASSISTANT:
            self._append(message, delta, event)
        else:
            message.content += delta
            self._save(message, event)

    def _open_chunk(self, event: Event) -> str:
        """A chunk that names no message continues the run's open answer, or opens one."""
        open_message = self._open_assistant_message(event.run_id)
        if open_message is not None:
            return open_message.message_id
        return f"{event.run_id or 'agui'}-chunk-{event.seq}"

    def _agui_role(self, event: Event, message_id: str) -> str:
        """The role its TEXT_MESSAGE_START, or a TEXT_MESSAGE_CHUNK naming one, gave the
        message (assistant when none did). Read from the log when an earlier request
        named it, so a stream teed one event a request projects as it re-projects."""
        if message_id not in self._agui_roles:
            start = (
                Event.objects.filter(
                    conversation=self.conversation,
                    type__in=("agui.TEXT_MESSAGE_START", "agui.TEXT_MESSAGE_CHUNK"),
                    seq__lt=event.seq,
                    payload__messageId=message_id,
                    payload__has_key="role",
                )
                .order_by("-seq")
                .first()
            )
            role = start.payload.get("role") if start is not None else None
            self._agui_roles[message_id] = role if isinstance(role, str) else Role.ASSISTANT
        role = self._agui_roles[message_id]
        return role if role in SHOWN_ROLES else ""

    def _agui_text_end(self, event: Event, fields: dict[str, Any]) -> None:
        message = self._find(fields["message_id"]) if fields["message_id"] else None
        if message is None or message.is_final or message.role not in SHOWN_ROLES:
            return
        message.is_final = True
        self._save(message, event)
        if message.role == Role.USER:
            self._title_from_user(Role.USER, message.content)

    # -- tool calls ----------------------------------------------------------------

    def _agui_call(self, event: Event, fields: dict[str, Any]) -> None:
        """A started call's context: the answer it belongs to, and (G13) the call its
        subagent runs under."""
        message = self._tool(fields["tool_call_id"])
        if message is None or message.tool_status in self.FINISHED:
            return
        if fields.get("parent_message_id"):
            message.metadata["parent_message_id"] = fields["parent_message_id"]
        parent = self._subagent_parent(event, fields.get("subagent_run_id", ""))
        if parent and parent != message.tool_call_id:
            message.parent_tool_call_id = parent
            message.metadata["parent_tool_call_id"] = parent
        self._save(message, event)

    def _subagent_parent(self, event: Event, subagent_run_id: str) -> str:
        if not subagent_run_id:
            return ""
        if subagent_run_id not in self._agui_subagents:
            start = (
                Event.objects.filter(
                    conversation=self.conversation,
                    type="agui.SUBAGENT_STARTED",
                    seq__lt=event.seq,
                    payload__subagentRunId=subagent_run_id,
                )
                .order_by("-seq")
                .first()
            )
            parent = start.payload.get("parentToolCallId") if start is not None else ""
            self._agui_subagents[subagent_run_id] = parent if isinstance(parent, str) else ""
        return self._agui_subagents[subagent_run_id]

    def _agui_subagent(self, event: Event, fields: dict[str, Any]) -> None:
        self._agui_subagents[fields["subagent_run_id"]] = fields["parent_tool_call_id"]

    def _agui_args(self, event: Event, fields: dict[str, Any]) -> None:
        """The arguments stream into the call line (as its `args_summary`) until the end
        reads them as JSON."""
        message = self._tool(fields["tool_call_id"])
        if message is None or message.tool_status in self.FINISHED or not fields["delta"]:
            return  # kept in the log
        meta = message.metadata
        meta["args_text"] = meta.get("args_text", "") + fields["delta"]
        meta["args_summary"] = meta["args_text"]
        self._save(message, event)

    def _agui_args_end(self, event: Event, fields: dict[str, Any]) -> None:
        message = self._tool(fields["tool_call_id"])
        if message is None:
            return
        if self._read_args(message):
            self._save(message, event)
        self._link_attempts(message, event)

    @staticmethod
    def _read_args(message: Message) -> bool:
        """The streamed text as `args` (an object), or kept as the call line's text."""
        meta = message.metadata
        if "args_text" not in meta:
            return False
        text = meta.pop("args_text")
        parsed = agui.parsed_args(text)
        if "args" in parsed:
            meta["args"] = parsed["args"]
            meta.pop("args_summary", None)
        elif parsed:
            meta["args_summary"] = parsed["args_summary"]
        else:
            meta.pop("args_summary", None)
        return True

    def _agui_call_chunk(self, event: Event, fields: dict[str, Any]) -> None:
        """TOOL_CALL_CHUNK: a start when it names a new call, and its args. Chunks have no
        end: the args are read as soon as they parse as an object."""
        call_id = fields["tool_call_id"] or self._open_chunk_call(event)
        if not call_id:
            return
        if self._tool(call_id) is None:
            self._on_agent_tool_started(
                event, {"tool_call_id": call_id, "tool_name": fields["tool_name"] or "tool"}
            )
            self._agui_call(event, {**fields, "tool_call_id": call_id})
        self._agui_args(event, {"tool_call_id": call_id, "delta": fields["delta"]})
        message = self._tool(call_id)
        if message is None or "args_text" not in message.metadata:
            return
        parsed = agui.parsed_args(message.metadata["args_text"])
        if "args" in parsed:
            self._read_args(message)
            self._save(message, event)
            self._link_attempts(message, event)

    def _open_chunk_call(self, event: Event) -> str:
        """A chunk that names no call continues the run's latest call."""
        self.flush()
        row = (
            Message.objects.filter(
                conversation=self.conversation, role=Role.TOOL, run_id=event.run_id
            )
            .order_by("-position")
            .first()
        )
        return row.tool_call_id if row is not None else ""

    def _agui_result(self, event: Event, fields: dict[str, Any]) -> None:
        """TOOL_CALL_RESULT completes the call; its message id is kept so an outcome
        stated later about that message finds the call."""
        call_id = fields["tool_call_id"]
        message = self._tool(call_id)
        if message is not None and message.tool_status not in self.FINISHED:
            self._read_args(message)  # a call whose end never came (chunks)
        self._on_agent_tool_completed(event, {"tool_call_id": call_id, "result": fields["result"]})
        message = self._tool(call_id)
        if message is not None and fields["result_message_id"]:
            message.metadata["result_message_id"] = fields["result_message_id"]
            self._save(message, event)

    def _agui_outcome(self, event: Event, fields: dict[str, Any]) -> None:
        """A framework's word on a finished call (Pydantic AI's marker): a retried or
        failed call is a failed attempt (G6, G14) — even after its card showed success."""
        message = self._tool_by_result_message(fields["entity_id"])
        if message is None:
            return
        outcome = fields["outcome"]
        meta = message.metadata
        meta["outcome"] = outcome
        if "attempt" in fields:
            meta["attempt"] = fields["attempt"]
        if "max_attempts" in fields:
            meta["max_attempts"] = fields["max_attempts"]
        if outcome in FAILED_OUTCOMES:
            self._fail(message, message.content or outcome, event)
            self._link_attempts(message, event)
        elif outcome == "denied":
            message.tool_status = ToolStatus.DENIED
            self._save(message, event)
        else:
            self._save(message, event)

    def _tool_by_result_message(self, entity_id: str) -> Message | None:
        """The call whose result came as message `entity_id` (or whose id it is)."""
        if not entity_id:
            return None
        found = self._tool(entity_id)
        if found is not None:
            return found
        for message in self._tools.values():
            if message is not None and message.metadata.get("result_message_id") == entity_id:
                return message
        self.flush()
        row = (
            Message.objects.filter(
                conversation=self.conversation,
                role=Role.TOOL,
                metadata__result_message_id=entity_id,
            )
            .order_by("-position")
            .first()
        )
        if row is None:
            return None
        message = self._tools.get(row.tool_call_id) or row
        self._tools[row.tool_call_id] = message
        return message

    def _agui_tool_error(self, event: Event, fields: dict[str, Any]) -> None:
        """An error a framework reported beside the stream (LangGraph's RAW on_tool_error)."""
        message = self._tool(fields["tool_call_id"])
        if message is None or message.tool_status in (ToolStatus.ERROR, ToolStatus.DENIED):
            return
        self._fail(message, fields["error"], event)
        self._link_attempts(message, event)

    def _agui_run_error(self, event: Event, fields: dict[str, Any]) -> None:
        """RUN_ERROR carries the exception that ended the run: the calls still running
        when it came are errors with its text (G6); queued ones never ran and show "no
        result recorded" (T2)."""
        if not event.run_id or self._run_has_ended(event.run_id):
            return
        self.flush()
        running = Message.objects.filter(
            conversation=self.conversation,
            role=Role.TOOL,
            run_id=event.run_id,
            tool_status=ToolStatus.RUNNING,
        ).order_by("position")
        for row in running:
            message = self._held(row)
            if message.tool_status == ToolStatus.RUNNING:
                self._fail(message, fields["error"], event)

    def _fail(self, message: Message, error: str, event: Event) -> None:
        """G6: the entry is an error with `error` as its text, whatever it showed before."""
        message.metadata["tool_error"] = error
        message.metadata.pop("no_result_recorded", None)
        message.tool_status = ToolStatus.ERROR
        message.content = error
        self._save(message, event)

    def _link_attempts(self, message: Message, event: Event) -> None:
        """G14: no framework names a retry. A call of the same tool with the same
        arguments right after a failed one in the same run is its next attempt: asked
        when a call's arguments are known (looking back) and when a call fails (looking
        forward, as LangGraph's failures are only known at the end)."""
        if not message.run_id or "args_text" in message.metadata:
            return
        self.flush()
        same_tool = Message.objects.filter(
            conversation=self.conversation,
            role=Role.TOOL,
            run_id=message.run_id,
            tool_name=message.tool_name,
        )
        before = same_tool.filter(position__lt=message.position).order_by("-position").first()
        if before is not None:
            self._number_attempts(self._held(before), message, event)
        if message.tool_status != ToolStatus.ERROR:
            return  # only a failure looks forward (most ends: no second query)
        after = same_tool.filter(position__gt=message.position).order_by("position").first()
        if after is not None:
            self._number_attempts(message, self._held(after), event)

    def _held(self, row: Message) -> Message:
        """The instance this projector holds for `row`, so no stale copy overwrites it."""
        held = self._tools.get(row.tool_call_id) if row.tool_call_id else None
        if held is None:
            self._tools[row.tool_call_id] = row
            return row
        return held

    def _number_attempts(self, failed: Message, retry: Message, event: Event) -> None:
        before, now = failed.metadata, retry.metadata
        if failed.tool_status != ToolStatus.ERROR or "args_text" in now:
            return
        if before.get("args") != now.get("args") or (
            before.get("args_summary") != now.get("args_summary")
        ):
            return
        attempt = before.get("attempt") if isinstance(before.get("attempt"), int) else 1
        if before.get("attempt") != attempt:
            before["attempt"] = attempt
            self._save(failed, event)
        if now.get("attempt") == attempt + 1:
            return
        now["attempt"] = attempt + 1
        limit = before.get("max_attempts")
        if isinstance(limit, int) and limit >= attempt + 1:
            now["max_attempts"] = limit
        self._save(retry, event)

    # -- steps, interrupts, usage ------------------------------------------------------

    def _agui_step(self, event: Event, fields: dict[str, Any]) -> None:
        """STEP_STARTED shows the step's name as the run's status line while it runs;
        STEP_FINISHED takes it away (S3 would at the run's end anyway)."""
        if not fields["name"]:
            return
        message_id = f"agui-step:{event.run_id}:{fields['name']}"[:200]
        message = self._find(message_id)
        if fields["phase"] == "start":
            if message is None:
                self._create(
                    event, message_id, Role.STATUS, content=fields["name"], status_type="thinking"
                )
            return
        if message is not None:
            self.flush()
            self._remove_rows([(message.position, message.pk, message.role, message.tool_status)])
            self._messages[message_id] = None

    def _agui_interrupt(self, event: Event, fields: dict[str, Any]) -> None:
        """docs/events.md#approvals: an interrupt for a tool call puts it in
        `awaiting_approval` (other interrupts are `_agui_stopped`)."""
        call_id = fields["tool_call_id"]
        entry = self._tool(call_id)
        request = {
            "tool_call_id": call_id,
            "tool_name": entry.tool_name if entry is not None else "tool",
            "reason": fields["message"],
            "timeout_s": interrupt_timeout_s(fields.get("expires_at"), event.received_at),
        }
        # The native request's own handler: the same deadline, and the same clock
        # (chatui.live.approval_clock) told of it when the ingest commits.
        self._on_agent_tool_approval_requested(event, request)
        message = self._tool(call_id)
        if message is not None and message.tool_status == ToolStatus.AWAITING_APPROVAL:
            message.metadata["interrupt"] = fields
            self._save(message, event)

    def _agui_stopped(self, event: Event, fields: dict[str, Any]) -> None:
        reason = fields["reason"] or "interrupted"
        self._on_agent_continuation(
            event, {"should_continue": False, "stop_reason": reason, "resolved_by": "AG-UI"}
        )

    def _agui_usage(self, event: Event, fields: dict[str, Any]) -> None:
        """S4: the run's tokens, on its last assistant message (the meta line sums its
        run's messages' tokens); a run with no answer has no line to show them."""
        self.flush()
        row = (
            Message.objects.filter(
                conversation=self.conversation, role=Role.ASSISTANT, run_id=event.run_id
            )
            .order_by("-position")
            .first()
        )
        if row is None:
            return
        message = self._messages.get(row.message_id) or row
        self._messages[row.message_id] = message
        message.metadata["tokens"] = min(fields["tokens"], MAX_TOKENS)
        message.metadata["usage"] = {
            key: fields[key] for key in ("input_tokens", "output_tokens", "model") if fields[key]
        }
        self._save(message, event)

    # -- reasoning (R6) ------------------------------------------------------------

    def _agui_reasoning(self, event: Event, fields: dict[str, Any]) -> None:
        """A message named by its id; the 0.x THINKING_* events and id-less chunks name
        none: they continue the run's open reasoning block, or open one."""
        message_id = fields["message_id"]
        if not message_id:
            message_id = (
                self._open_reasoning(event) or f"{event.run_id or 'agui'}-thinking-{event.seq}"
            )
        self._on_agent_reasoning_delta(event, {"message_id": message_id, "delta": fields["delta"]})

    def _open_reasoning(self, event: Event) -> str:
        """The run's latest reasoning block that has not ended, read from the rows (so a
        stream posted event by event projects as it does in one batch)."""
        self.flush()
        row = (
            Message.objects.filter(
                conversation=self.conversation,
                role=Role.ASSISTANT,
                run_id=event.run_id,
                metadata__has_key="reasoning",
            )
            .exclude(metadata__has_key="reasoning_ended_at")
            .order_by("-position")
            .first()
        )
        return row.message_id if row is not None else ""

    def _agui_reasoning_end(self, event: Event, fields: dict[str, Any]) -> None:
        message_id = fields["message_id"] or self._open_reasoning(event)
        message = self._find(message_id) if message_id else None
        if message is None or "reasoning" not in message.metadata:
            return
        if "reasoning_ended_at" not in message.metadata:
            message.metadata["reasoning_ended_at"] = _iso(event.timestamp)
            self._save(message, event)

    def _agui_encrypted_reasoning(self, event: Event, fields: dict[str, Any]) -> None:
        """R6: encrypted reasoning shows only that it happened."""
        self._on_agent_reasoning_delta(
            event, {"message_id": fields["message_id"], "delta": "", "encrypted": True}
        )

    # -- snapshots: [000]'s reconciliation ------------------------------------------------

    def _agui_reconcile(self, event: Event, fields: dict[str, Any]) -> None:
        """Add what the stream did not deliver — user messages, assistant texts, calls and
        their results — matched by message id and `toolCallId`; a tool message with an
        error completes its call as an error; arguments the stream garbled are read from
        the snapshot. Nothing shown is removed."""
        messages = fields["messages"]
        names = {
            call["id"]: call["name"]
            for message in messages
            if message["role"] == "assistant"
            for call in message["tool_calls"]
        }
        added_calls = False
        for index, message in enumerate(messages):
            role = message["role"]
            if role == "user":
                self._reconcile_text(event, message, Role.USER, index)
            elif role == "assistant":
                assistant_id = self._reconcile_text(event, message, Role.ASSISTANT, index)
                for position, call in enumerate(message["tool_calls"]):
                    entry = self._tool(call["id"])
                    if entry is None:
                        self._queue_tool_call(event, assistant_id, position, call)
                        added_calls = True
                    else:
                        self._reconcile_args(event, entry, call)
            elif role == "tool":
                self._reconcile_result(event, message, names.get(message["tool_call_id"], "tool"))
        if added_calls and self._run_has_ended(event.run_id):
            self._mark_unanswered_tools(event)  # T2: no ticking timer on a finished run

    def _reconcile_text(self, event: Event, message: dict[str, Any], role: str, index: int) -> str:
        """The message's id in chatui: its own, or (with no id) one made from the event."""
        message_id = message["id"][:200] or f"agui-snapshot-{event.seq}-{index}"
        content = message["content"]
        if self._find(message_id) is not None or not content.strip():
            return message_id
        self.flush()  # what this call created is matched too
        if (
            Message.objects.filter(conversation=self.conversation, role=role, content=content)
            .exclude(message_id=message_id)
            .exists()
        ):
            return message_id  # delivered under another id (the stream's, the composer's)
        created = self._create(event, message_id, role, content=content)
        if role == Role.USER:
            self._title_from_user(Role.USER, content)
            self._place_at_run_start(created, event)
        return message_id

    def _place_at_run_start(self, message: Message, event: Event) -> None:
        """A user message only a snapshot names (a runtime tees its stream, and the user's
        words were never in it) goes where its run began, not after the run's answer;
        viewers get the transcript afresh."""
        started = Run.objects.filter(
            conversation=self.conversation, run_id=event.run_id, started_seq__lt=event.seq
        ).values_list("started_seq", flat=True)
        start = started.first() if event.run_id else None
        if start is None:
            return
        self.flush()
        top = position_for(start + 1, 0) - 1
        taken = Message.objects.filter(
            conversation=self.conversation,
            position__gt=position_for(start, POSITION_STRIDE // 2),
            position__lte=top,
        ).count()
        message.position = top - taken
        message.save(update_fields=["position"])
        self.changes.full_refresh = True

    def _reconcile_args(self, event: Event, entry: Message, call: dict[str, Any]) -> None:
        """The snapshot's arguments where the stream's did not parse (ag-ui-langgraph sends
        a call's first piece of arguments only inside its start)."""
        meta = entry.metadata
        if "args" in meta or "args_text" in meta or "args" not in call:
            return
        meta["args"] = call["args"]
        meta.pop("args_summary", None)
        self._save(entry, event)
        self._link_attempts(entry, event)

    def _reconcile_result(self, event: Event, message: dict[str, Any], name: str) -> None:
        call_id = message["tool_call_id"]
        entry = self._tool(call_id)
        error = message["error"]
        if entry is None or entry.tool_status in self.OPEN:
            completed = {"tool_call_id": call_id, "tool_name": name, "result": message["result"]}
            if error:
                completed["error"] = error
            self._on_agent_tool_completed(event, completed)
            entry = self._tool(call_id)
            if error and entry is not None:
                self._link_attempts(entry, event)
        elif error and entry.tool_status == ToolStatus.SUCCESS:
            self._fail(entry, error, event)
            self._link_attempts(entry, event)
        elif error and entry.tool_status == ToolStatus.ERROR and entry.content == agui.TOOL_FAILED:
            entry.metadata.setdefault("tool_result", message["result"])
            self._fail(entry, error, event)  # the error's text, known now


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def interrupt_timeout_s(expires_at: Any, received_at: datetime) -> float:
    """An interrupt's `expiresAt` as a native request's `timeout_s`, reckoned from when the
    server received it (as native requests are, so re-projection gives the same deadline):
    past → 0 (expired at once), beyond a week → a week, absent or not an ISO 8601 time
    (AG-UI leaves its form open) → the native default."""
    try:
        expires = parse_datetime(expires_at) if isinstance(expires_at, str) else None
    except ValueError:  # well formed but out of range (a 25th hour)
        expires = None
    if expires is None:
        return DEFAULT_APPROVAL_TIMEOUT_S
    if expires.tzinfo is None:
        expires = expires.replace(tzinfo=UTC)
    seconds = (expires - received_at).total_seconds()
    return min(max(seconds, 0.0), float(MAX_APPROVAL_TIMEOUT_S))
