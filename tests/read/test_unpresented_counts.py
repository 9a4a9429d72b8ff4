"""docs/rendering.md#long-transcripts: a giant batch's summary counts the calls outside its window
from the columns, in SQL on first load (`selectors._batch_head`) and in Python when a kept
batch's entries leave the window (`presenters.count_unpresented`): both must count
every status the same way."""

from __future__ import annotations

from chatui.ingest.service import ingest
from chatui.models import Message, Role, ToolStatus
from chatui.read import selectors
from chatui.read.presenters import count_unpresented


def _started(run: str, call: str) -> dict:
    return {"type": "agent.tool.started", "run_id": run, "tool_call_id": call, "tool_name": "sh"}


def _completed(run: str, call: str, **outcome) -> dict:
    return {"type": "agent.tool.completed", "run_id": run, "tool_call_id": call, **outcome}


def test_s10_hidden_calls_are_counted_alike_in_sql_and_from_kept_rows(conversation):
    ended, going = "run-ended", "run-going"
    ingest(
        conversation,
        [
            # A step announcing two calls: one never starts (queued), one runs.
            {
                "type": "agent.step.completed",
                "run_id": ended,
                "content": "",
                "tool_calls": [{"id": "queued", "name": "sh"}, {"id": "running", "name": "sh"}],
            },
            _started(ended, "running"),
            _started(ended, "failed"),
            _completed(ended, "failed", error="boom"),
            _started(ended, "skipped"),
            _completed(ended, "skipped", skipped=True),
            _started(ended, "ok"),
            _completed(ended, "ok", result="fine"),
            {
                "type": "agent.tool.approval_requested",
                "run_id": ended,
                "tool_call_id": "asks",
                "tool_name": "sh",
            },
            # The run ends: its queued and running calls get no result (T2).
            {"type": "agent.status", "run_id": ended, "status": "completed"},
            _started(going, "still-running"),
        ],
    )
    rows = Message.objects.filter(conversation=conversation)
    tools = list(rows.filter(role=Role.TOOL))
    statuses = {tool.tool_call_id: tool.tool_status for tool in tools}
    assert statuses["failed"] == ToolStatus.ERROR and statuses["skipped"] == ToolStatus.SKIPPED
    unanswered = [tool for tool in tools if tool.metadata.get("no_result_recorded")]
    assert {tool.tool_call_id for tool in unanswered} == {"queued", "running"}

    head = selectors._batch_head(rows)
    assert head is not None
    counted = count_unpresented(tools)
    assert counted == (head.failed, head.skipped, head.running, head.updated_seq)
    assert counted[:3] == (1, 1, 1)  # only the call of the run still going is running
