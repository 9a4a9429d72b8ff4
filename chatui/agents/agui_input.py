"""What chatui sends an AG-UI agent: a `RunAgentInput` built from the conversation
(docs/runtimes.md#be-the-front-end-of-an-ag-ui-agent).

- `threadId` is the conversation's id, `runId` the new run's;
- `messages` is the conversation so far as AG-UI messages — user messages, assistant
  messages with the `toolCalls` they made, a tool message (`toolCallId`, and `error`
  when it failed) for each call that has a result — ending with the new user message;
- `state` is the thread's latest state (its last `STATE_SNAPSHOT` with the
  `STATE_DELTA`s after it applied), else {};
- `tools`, `context` and `forwardedProps` are empty: chatui offers the agent no tools
  of its own;
- a run that continues an interrupted one carries `resume`: one entry per interrupt,
  answered from the decisions people made on the approval requests (docs/events.md#approvals).

It is validated with ag-ui-protocol's own `RunAgentInput` before it is sent, so a
conversation that cannot be said in AG-UI fails here, by name, not at the agent.
"""

from __future__ import annotations

import json
from typing import Any

import jsonpatch
import jsonpointer
from ag_ui.core import RunAgentInput

from chatui.ingest import approvals
from chatui.ingest.dialects.agui import log_type
from chatui.models import Conversation, Event, Message, Role, ToolStatus

#: The AG-UI protocol version chatui speaks (`RunAgentInput.protocolVersion`).
PROTOCOL_VERSION = "1.0"

#: An interrupt people can answer in chatui: a tool call waiting for approval.
TOOL_CALL_REASON = "tool_call"

#: What a person's decision (docs/events.md#approvals) says in an interrupt's resume
#: payload. `approved` plus an optional `reason` is the shape AG-UI's docs recommend for
#: tool approval and the one Pydantic AI's `responseSchema` asks for.
_DECIDED_NO = {"denied": "denied", "expired": "the approval request expired"}

#: How the log names the AG-UI events read here (`agui.<TYPE>`, the dialect's).
STATE_TYPES = (log_type("STATE_SNAPSHOT"), log_type("STATE_DELTA"))
RUN_FINISHED = log_type("RUN_FINISHED")


def build_input(
    conversation: Conversation,
    run_id: str,
    user_text: str,
    *,
    resume_of: str | None = None,
) -> dict[str, Any]:
    """The run's `RunAgentInput`, as the JSON the agent receives (camelCase)."""
    resume = resume_entries(conversation, resume_of) if resume_of else None
    waiting = {entry["_tool_call_id"] for entry in resume or [] if entry.get("_tool_call_id")}
    messages = history(conversation, waiting=waiting)
    if not resume_of and user_text and not _ends_with_user(messages, user_text):
        messages.append({"id": f"{run_id}.user", "role": "user", "content": user_text})
    body: dict[str, Any] = {
        "threadId": str(conversation.pk),
        "runId": run_id,
        "protocolVersion": PROTOCOL_VERSION,
        "messages": messages,
        "tools": [],
        "context": [],
        "state": latest_state(conversation),
        "forwardedProps": {},
    }
    if resume is not None:
        body["resume"] = [
            {key: value for key, value in entry.items() if not key.startswith("_")}
            for entry in resume
        ]
    # The package's model is the judge of what an AG-UI agent accepts.
    return RunAgentInput.model_validate(body).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )


def _ends_with_user(messages: list[dict[str, Any]], text: str) -> bool:
    """The composer ingests the user's message before the run starts: it is in the
    history already (unless the run was started without one, as a script does)."""
    return bool(messages) and messages[-1]["role"] == "user" and messages[-1]["content"] == text


# -- messages ---------------------------------------------------------------------------


def history(conversation: Conversation, *, waiting: set[str] = frozenset()) -> list[dict]:
    """The conversation's user, assistant and tool messages as AG-UI messages, in order.

    chatui keeps a tool call as an entry of its own, not inside the assistant message
    that made it (an AG-UI agent's assistant message may be empty and then shows
    nothing, R3). So each run of consecutive tool entries is given back to the
    assistant message right before it — or to one made for them, when text did not
    precede them — as its `toolCalls`, followed by their results. Calls made by other
    calls (G13 nesting) are the agent's own business and are left out. A call with no
    result is left out too (an agent refuses a history whose calls are unanswered),
    except those in `waiting`: the interrupted calls a resumed run is about to answer.
    """
    rows = Message.objects.filter(
        conversation=conversation, role__in=[Role.USER, Role.ASSISTANT, Role.TOOL]
    ).order_by("position")
    messages: list[dict[str, Any]] = []
    owner: dict[str, Any] | None = None  # the assistant message tool calls go to
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    run_of_calls = None

    def flush() -> None:
        nonlocal owner, calls, results
        if calls:
            if owner is None:
                owner = {"id": f"{calls[0]['id']}.call", "role": "assistant"}
                messages.append(owner)
            owner.setdefault("toolCalls", []).extend(calls)
            messages.extend(results)
        owner, calls, results = None, [], []

    for message in rows:
        if message.role == Role.TOOL:
            if message.parent_tool_call_id or not message.tool_call_id:
                continue
            if calls and message.run_id != run_of_calls:
                flush()  # another run's calls: another assistant turn
            result = _tool_result(message, waiting)
            if result is None and message.tool_call_id not in waiting:
                continue
            run_of_calls = message.run_id
            calls.append(_tool_call(message))
            if result is not None:
                results.append(result)
            continue
        flush()
        if message.role == Role.USER:
            if message.content:
                messages.append(
                    {"id": message.message_id, "role": "user", "content": message.content}
                )
        else:
            owner = {"id": message.message_id, "role": "assistant"}
            if message.content:
                owner["content"] = message.content
            messages.append(owner)
    flush()
    # An assistant message that said nothing and called nothing is not worth sending.
    return [
        m for m in messages if m["role"] != "assistant" or m.get("content") or m.get("toolCalls")
    ]


def _tool_call(message: Message) -> dict[str, Any]:
    args = (message.metadata or {}).get("args")
    if isinstance(args, str):
        arguments = args  # arguments that did not parse are sent back as they came
    else:
        arguments = json.dumps(args if args is not None else {}, ensure_ascii=False)
    return {
        "id": message.tool_call_id,
        "type": "function",
        "function": {"name": message.tool_name or "tool", "arguments": arguments},
    }


def _tool_result(message: Message, waiting: set[str]) -> dict[str, Any] | None:
    """The tool message answering this call, or None when it has no result (yet)."""
    if message.tool_call_id in waiting:
        return None
    meta = message.metadata or {}
    status = message.tool_status
    base = {
        "id": f"{message.tool_call_id}.result",
        "role": "tool",
        "toolCallId": message.tool_call_id,
    }
    if status == ToolStatus.ERROR:
        error = str(meta.get("tool_error") or message.content or "the tool failed")
        return {**base, "content": error, "error": error}
    if status == ToolStatus.DENIED:
        return {**base, "content": message.content or "The call was not approved."}
    if status in (ToolStatus.SUCCESS, ToolStatus.SKIPPED):
        result = meta.get("tool_result", message.content)
        content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        return {**base, "content": content}
    return None  # queued, running, awaiting approval: nothing to answer with


# -- state ------------------------------------------------------------------------------


def latest_state(conversation: Conversation) -> Any:
    """The thread's state as its agent last reported it: the latest `STATE_SNAPSHOT`,
    with the `STATE_DELTA`s (JSON Patch) received after it applied; {} when none."""
    state: Any = {}
    rows = (
        Event.objects.filter(conversation=conversation, type__in=STATE_TYPES)
        .order_by("seq")
        .values_list("payload", flat=True)
    )
    for payload in rows:
        if payload.get("type") == "STATE_SNAPSHOT":
            state = payload.get("snapshot", {})
        elif payload.get("type") == "STATE_DELTA":
            state = apply_patch(state, payload.get("delta") or [])
    return state if state is not None else {}


def apply_patch(document: Any, operations: list[Any]) -> Any:
    """RFC 6902 JSON Patch, as AG-UI's `STATE_DELTA` carries it. A patch that does not
    apply leaves the state as it was (the agent's state is its own; chatui only
    carries it back)."""
    try:
        return jsonpatch.apply_patch(document, operations)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError):
        return document


# -- resuming an interrupted run ------------------------------------------------------


def interrupts_of(conversation: Conversation, run_id: str) -> list[dict[str, Any]] | None:
    """The interrupts a run ended with (its `RUN_FINISHED` outcome of type
    `interrupt`), or None when it did not end on one."""
    payload = (
        Event.objects.filter(conversation=conversation, run_id=run_id, type=RUN_FINISHED)
        .order_by("-seq")
        .values_list("payload", flat=True)
        .first()
    )
    outcome = (payload or {}).get("outcome") or {}
    if outcome.get("type") != "interrupt":
        return None
    return list(outcome.get("interrupts") or [])


def resume_entries(conversation: Conversation, run_id: str) -> list[dict[str, Any]] | None:
    """One `ResumeEntry` per interrupt of `run_id`, or None while a person has still to
    decide one. Interrupts chatui has no way to ask about (any reason but `tool_call`)
    are answered `cancelled`. `_tool_call_id` is for chatui only (not sent)."""
    interrupts = interrupts_of(conversation, run_id)
    if interrupts is None:
        return None
    entries: list[dict[str, Any]] = []
    for interrupt in interrupts:
        call_id = interrupt.get("toolCallId")
        entry: dict[str, Any] = {"interruptId": interrupt.get("id", "")}
        if interrupt.get("reason") != TOOL_CALL_REASON or not call_id:
            entries.append({**entry, "status": "cancelled"})
            continue
        decision = approvals.decision_for(conversation, call_id)
        if decision is None:
            return None
        payload: dict[str, Any] = {"approved": decision.decision == "approved"}
        if not payload["approved"]:
            payload["reason"] = decision.note or _DECIDED_NO.get(decision.decision, "denied")
        entries.append(
            {**entry, "status": "resolved", "payload": payload, "_tool_call_id": call_id}
        )
    return entries
