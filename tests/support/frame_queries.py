"""The SQL a live frame runs: shared by the tests of what frames keep between them."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatui.ingest.service import ingest
from chatui.live import frames
from chatui.models import Conversation


def frame_queries(conversation: Conversation, events: list[dict]) -> tuple[list[str], str]:
    """Ingest `events`; the SQL of their live frame, and the frame."""
    result = ingest(conversation, events)
    assert result.accepted
    conversation.refresh_from_db()
    first = result.last_seq - result.accepted + 1
    with CaptureQueriesContext(connection) as captured:
        html = frames.change_frame(conversation, first, result.last_seq, result.changes).html
    return [query["sql"] for query in captured.captured_queries], html
