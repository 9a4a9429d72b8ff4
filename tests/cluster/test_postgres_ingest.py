"""`ingest` on PostgreSQL: row locks instead of a process lock, retried deadlocks, and
storage that keeps what SQLite keeps (docs/events.md#architecture, docs/events.md#reliability,
docs/SCALING.md)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from chatui.ingest.service import ingest
from chatui.models import Conversation, Event, Message
from tests.support.cluster import PATIENCE, backends_waiting_for_a_lock, row_locked, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def database_url() -> str:
    params = connection.settings_dict
    return f"postgres://{params['USER']}@{params['HOST']}:{params['PORT']}/{params['NAME']}"


class Writer(threading.Thread):
    """`ingest` in a thread of its own, so with its own database connection."""

    def __init__(self, call: Callable[[], Any]):
        super().__init__(daemon=True)
        self.call, self.result, self.error = call, None, None

    def run(self) -> None:
        try:
            self.result = self.call()
        except Exception as problem:  # handed to the test, which asserts on it
            self.error = problem
        finally:
            connection.close()


def test_writers_of_different_conversations_do_not_wait_for_each_other(user):
    """On PostgreSQL the conversation's row lock orders writers; the process-wide lock
    (SQLite's) would make a writer of `other` wait behind one stuck on `busy`."""
    busy = Conversation.objects.create(owner=user, title="busy")
    other = Conversation.objects.create(owner=user, title="other")
    with row_locked(database_url(), "chatui_conversation", busy.pk):
        stuck = Writer(lambda: ingest(busy, {"type": "user.message", "content": "waits"}))
        stuck.start()
        wait_for(lambda: backends_waiting_for_a_lock(database_url()) == 1, "the stuck writer")
        free = Writer(lambda: ingest(other, {"type": "user.message", "content": "goes"}))
        free.start()
        free.join(PATIENCE)  # a hang detector: it waits for nobody, or forever
        assert not free.is_alive(), "a writer of another conversation waited"
        assert free.error is None and free.result.accepted == 1
    stuck.join()
    assert stuck.error is None and stuck.result.accepted == 1


def test_deadlock_while_ingesting_is_retried_not_raised(user, caplog):
    """A real deadlock: ingest holds the conversation's row and wants a message's row,
    which another transaction holds while it asks for the conversation's. PostgreSQL
    aborts ingest's transaction (40P01); ingest runs it again and succeeds."""
    caplog.set_level(logging.WARNING, logger="chatui.ingest.service")
    conversation = Conversation.objects.create(owner=user, title="deadlock")
    ingest(
        conversation,
        {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "sleep", "args": {}},
    )
    tool = Message.objects.get(conversation=conversation, tool_call_id="c1")
    completed = {"type": "agent.tool.completed", "tool_call_id": "c1", "result": "done"}
    with row_locked(database_url(), "chatui_message", tool.pk) as other:
        # Ingest's session finds the deadlock (after its 1 s deadlock_timeout): it is
        # the one aborted, not this one.
        other.execute("SET LOCAL deadlock_timeout = '60s'")
        writer = Writer(lambda: ingest(conversation, completed))
        writer.start()
        wait_for(lambda: backends_waiting_for_a_lock(database_url()) == 1, "ingest to wait")
        other.execute(
            "SELECT 1 FROM chatui_conversation WHERE id = %s FOR UPDATE", [conversation.pk]
        )
    writer.join()
    assert writer.error is None
    assert writer.result.accepted == 1
    assert "deadlock detected" in caplog.text  # it happened, and was run again
    tool.refresh_from_db()
    assert tool.tool_status == "success"


def test_sec6_nul_is_refused_before_postgresql_sees_it(api, conversation):
    """PostgreSQL text cannot hold U+0000: the contract refuses it (400 naming the field)
    before any SQL runs, so it is never a 500 and nothing is stored."""
    event = {"type": "user.message", "content": "a\x00b", "event_id": "nul"}
    response = api.post_events(conversation, event)
    assert response.status_code == 400 and response.json()["field"] == "content"
    assert not Message.objects.filter(conversation=conversation).exists()


def test_payload_and_metadata_keep_key_order(conversation):
    """jsonb would sort keys (shortest first): G3 shows args in the agent's order, and
    a re-projection must equal the live one."""
    args = {"zeta_long_name": 1, "alpha": 2, "mid": {"z": 1, "a": 2}}
    ingest(
        conversation,
        {"type": "agent.tool.started", "tool_call_id": "k", "tool_name": "t", "args": args},
    )
    event = Event.objects.get(conversation=conversation)
    message = Message.objects.get(conversation=conversation)
    assert list(event.payload["args"]) == ["zeta_long_name", "alpha", "mid"]
    assert list(event.payload["args"]["mid"]) == ["z", "a"]
    assert list(message.metadata["args"]) == ["zeta_long_name", "alpha", "mid"]
    # Queries into the json column still work (read as jsonb).
    assert Event.objects.filter(payload__args__mid__a=2, payload__tool_name="t").exists()
