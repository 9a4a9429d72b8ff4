"""docs/PERFORMANCE.md tool steps: a finished tool entry is presented once, and a kept entry is
never shown where its message changed, for another display, or while it runs.

(That the memo changes no live frame at all is proven by the golden frames of
tests/live/test_tool_frame_cost.py; these tests pin down when an entry is reused.)
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import F

from chatui.db.lru import BoundedLRU
from chatui.models import Message, Role
from chatui.read import presenters
from chatui.read.display import Display

RUN = "r"


def _tool(conversation, call_id: str) -> Message:
    return Message.objects.get(conversation=conversation, role=Role.TOOL, tool_call_id=call_id)


def _started(call_id: str, **extra) -> dict:
    return {
        "type": "agent.tool.started",
        "run_id": RUN,
        "tool_call_id": call_id,
        "tool_name": "read_file",
        "args": {"path": f"src/{call_id}.py"},
        **extra,
    }


def _completed(call_id: str, result: str = "ok") -> dict:
    return {
        "type": "agent.tool.completed",
        "run_id": RUN,
        "tool_call_id": call_id,
        "result": result,
    }


@pytest.fixture(autouse=True)
def empty_memo():
    presenters._FINISHED.clear()
    yield
    presenters._FINISHED.clear()


def test_finished_entry_is_presented_once(conversation, feed):
    feed(_started("t1"), _completed("t1"))
    first = presenters.present_tool_entry(_tool(conversation, "t1"))
    again = presenters.present_tool_entry(_tool(conversation, "t1"))  # a fresh row read
    assert again is first


def test_changed_message_is_presented_anew(conversation, feed):
    """Every change the projection writes stamps the event's seq on the message."""
    feed(_started("t1"), _completed("t1", "first result"))
    before = presenters.present_tool_entry(_tool(conversation, "t1"))
    Message.objects.filter(pk=before.pk).update(
        content="corrected result", updated_seq=F("updated_seq") + 1
    )
    after = presenters.present_tool_entry(_tool(conversation, "t1"))
    assert after.updated_seq == before.updated_seq + 1
    assert after.result.text == "corrected result"
    assert before.result.text == "first result"


def test_running_entry_is_never_kept(conversation, feed):
    """G5: a running entry's elapsed time moves with the clock."""
    feed(_started("t1"))
    tool = _tool(conversation, "t1")
    soon = presenters.present_tool_entry(tool, now=tool.timestamp + timedelta(seconds=3))
    later = presenters.present_tool_entry(tool, now=tool.timestamp + timedelta(seconds=95))
    assert soon.elapsed_text != later.elapsed_text


def test_masked_and_revealed_entries_are_kept_apart(conversation, feed):
    """T3: an entry presented masked is never handed to a reveal, nor the reverse."""
    secret = "sk-live-" + "a1B2c3D4e5F6g7H8i9J0k1L2"
    feed(_started("t1"), _completed("t1", f"token={secret}"))
    masked = presenters.present_tool_entry(_tool(conversation, "t1"))
    revealed = presenters.present_tool_entry(
        _tool(conversation, "t1"), display=Display(mask_secrets=False)
    )
    masked_again = presenters.present_tool_entry(_tool(conversation, "t1"))
    assert secret not in masked.result.text
    assert secret in revealed.result.text
    assert secret not in masked_again.result.text


def test_same_ids_in_another_conversation_are_not_shared(conversation, feed, user):
    from chatui.ingest.service import ingest
    from chatui.models import Conversation

    feed(_started("t1"), _completed("t1", "mine"))
    other = Conversation.objects.create(owner=user, title="Other")
    ingest(other, [_started("t1"), _completed("t1", "theirs")])
    mine = presenters.present_tool_entry(_tool(conversation, "t1"))
    theirs = presenters.present_tool_entry(_tool(other, "t1"))
    assert "mine" in mine.result.text
    assert "theirs" in theirs.result.text


def test_large_entry_is_not_kept(conversation, feed):
    """The memo is bounded in bytes too: an entry with much text is presented each time."""
    big_args = {"path": "x" * (presenters.MEMO_ENTRY_CHARS + 1)}
    feed(_started("t1", args=big_args), _completed("t1"))
    first = presenters.present_tool_entry(_tool(conversation, "t1"))
    again = presenters.present_tool_entry(_tool(conversation, "t1"))
    assert again == first
    assert again is not first


def test_memo_is_bounded():
    memo = BoundedLRU(2)  # as presenters._FINISHED and batch_cache.BATCHES are
    memo.put(("a",), "A")
    memo.put(("b",), "B")
    assert memo.get(("a",)) == "A"  # now the most recently used
    memo.put(("c",), "C")
    assert memo.get(("b",)) is None
    assert memo.get(("a",)) == "A"
    assert memo.get(("c",)) == "C"
