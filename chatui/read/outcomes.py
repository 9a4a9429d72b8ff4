"""W4 one count (docs/rendering.md#w4): a tool call's final outcome, decided here once,
and the counts every surface shows from it — the page's batch summaries, the list and
rail rows, the admin's columns and filters, the exports.

An outcome is read from the stored columns and metadata only, so SQL (`COUNTED_Q`, the
conversation's count columns) and Python (`outcome_of`) agree:

- `retried`: a failed attempt that a later attempt of the same call retried (G14). It is
  not a tool call of its own (its chain is one entry) and never a failure; whatever the
  last attempt ends with counts. The projection marks it (`metadata["retried"]`).
- `failed`: the tool's error, or details saying exit ≠ 0 / HTTP ≥ 400 (G15).
- `denied` and `expired`: a person said no, or nobody answered in time (an expired
  request is stored `denied` with `approval.decision` `expired`): their own counts.
- `cancelled`: its run was stopped by a person (W5): its own count, never a failure.
- `skipped`, `succeeded`, and `pending` (queued, running or awaiting approval).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from django.db.models import Q

from chatui.ingest.attachments import is_error_result
from chatui.ingest.projection import RETRIED_KEY
from chatui.ingest.values import details_failure
from chatui.models import Role, ToolStatus


class Outcome(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DENIED = "denied"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"
    PENDING = "pending"
    RETRIED = "retried"


def outcome_of(status: str | None, metadata: Mapping[str, Any] | None) -> Outcome:
    """The final outcome of one stored tool message (`tool_status`, `metadata`)."""
    meta = metadata if isinstance(metadata, Mapping) else {}
    if meta.get(RETRIED_KEY) is True:
        return Outcome.RETRIED
    if status == ToolStatus.ERROR:
        return Outcome.FAILED
    if status == ToolStatus.SUCCESS:
        # G15: an older row stored as a success whose details say it failed.
        # G21: an MCP result's `isError: true` the same way.
        failed = details_failure(meta.get("details")) or is_error_result(meta.get("tool_result"))
        return Outcome.FAILED if failed else Outcome.SUCCEEDED
    if status == ToolStatus.DENIED:
        approval = meta.get("approval")
        expired = isinstance(approval, Mapping) and approval.get("decision") == "expired"
        return Outcome.EXPIRED if expired else Outcome.DENIED
    if status == ToolStatus.CANCELLED:
        return Outcome.CANCELLED
    if status == ToolStatus.SKIPPED:
        return Outcome.SKIPPED
    return Outcome.PENDING


#: The words a count is shown with, in the order they are shown.
_SHOWN = (
    (Outcome.FAILED, "failed"),
    (Outcome.DENIED, "denied"),
    (Outcome.EXPIRED, "expired"),
    (Outcome.CANCELLED, "cancelled"),
)


@dataclass(frozen=True)
class OutcomeCounts:
    """A conversation's (or run's) tool calls by final outcome. `tools` counts calls,
    not attempts: a retried attempt is part of its call."""

    tools: int = 0
    failed: int = 0
    denied: int = 0
    expired: int = 0
    cancelled: int = 0

    @classmethod
    def of(cls, outcomes: Iterable[Outcome]) -> OutcomeCounts:
        tally = dict.fromkeys(Outcome, 0)
        for outcome in outcomes:
            tally[outcome] += 1
        return cls(
            tools=sum(tally.values()) - tally[Outcome.RETRIED],
            failed=tally[Outcome.FAILED],
            denied=tally[Outcome.DENIED],
            expired=tally[Outcome.EXPIRED],
            cancelled=tally[Outcome.CANCELLED],
        )

    @classmethod
    def of_messages(cls, tools: Iterable[Any]) -> OutcomeCounts:
        """Of tool `Message` rows (other roles are left out)."""
        return cls.of(
            outcome_of(tool.tool_status, tool.metadata) for tool in tools if tool.role == Role.TOOL
        )

    def parts(self) -> list[str]:
        """ "1 failed", "1 denied", … for each outcome counted, in a fixed order."""
        return [
            f"{getattr(self, outcome)} {word}" for outcome, word in _SHOWN if getattr(self, outcome)
        ]

    def text(self) -> str:
        """ "8 tools · 1 failed · 1 denied · 1 expired · 1 cancelled"; "" without tools."""
        if not self.tools:
            return ""
        tools = f"{self.tools} tool" + ("" if self.tools == 1 else "s")
        return " · ".join([tools, *self.parts()])


# -- the same outcomes in SQL --------------------------------------------------------
# A conversation's counts are its own columns (`tool_count`, `failed_tool_count`,
# `denied_tool_count`, `expired_tool_count`, `cancelled_tool_count`), kept by the
# projection with `outcome_of`'s rule (chatui.ingest.projection._apart, RETRIED_KEY).

#: An attempt a later one retried (G14): part of its call, counted nowhere.
RETRIED_Q = Q(**{f"metadata__{RETRIED_KEY}": True})


def row_counts(conversation: Any) -> OutcomeCounts:
    """The counts `selectors.with_outcome_counts` annotated onto a conversation."""
    return OutcomeCounts(
        tools=getattr(conversation, "n_tools", 0),
        failed=getattr(conversation, "n_failed", 0),
        denied=getattr(conversation, "n_denied", 0),
        expired=getattr(conversation, "n_expired", 0),
        cancelled=getattr(conversation, "n_cancelled", 0),
    )
