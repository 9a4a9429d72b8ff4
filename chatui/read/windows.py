"""The pieces both the queries and the renderer know of a transcript's windows: how
many entries of a tool batch a page loads, which tool statuses are pending, and how a
slice that opens inside a batch describes the part before it. They live below both, so
the selectors never import the renderer.
"""

from __future__ import annotations

from dataclasses import dataclass

from chatui.models import ToolStatus

PENDING = (ToolStatus.QUEUED, ToolStatus.RUNNING)

#: docs/rendering.md#long-transcripts: a batch renders at most its latest 200 top-level entries
#: (P3).
BATCH_WINDOW = 200


@dataclass(frozen=True)
class BatchHead:
    """The part of a tool batch before a slice that opens inside it, counted rather
    than loaded (chatui.read.selectors.transcript_window: a giant batch, P3)."""

    start_pk: int  # the batch's first top-level tool message
    start_position: int
    roots: int  # top-level entries in this part
    failed: int = 0
    skipped: int = 0
    running: int = 0
    updated_seq: int = 0


class MessageWindow(list):
    """A slice of messages (a list) that may open inside a tool batch: `batch_head`
    describes the batch's part before it."""

    batch_head: BatchHead | None = None
    #: Something shown comes after the slice's last batch (a breaker the slice stops
    #: before): that batch is not where a going run is (W1, docs/rendering.md#w1).
    batch_ended: bool = False
