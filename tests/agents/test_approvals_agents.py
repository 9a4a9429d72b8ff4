"""docs/events.md#approvals in the built-in agents: the demo agent asks before its one destructive
tool, and the showcase shows approved, denied and expired. Runs are driven for real
(`start_run` on an asyncio loop, events through ingest), as in test_agents_demo."""

from __future__ import annotations

import asyncio

import pytest
from django.contrib.auth import get_user_model

from chatui.agents import start_run, start_showcase, wait_for_run
from chatui.agents.demo import DemoAgent
from chatui.agents.runner import db
from chatui.ingest import approvals
from chatui.models import Conversation, Message, Role

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def user(db):
    return get_user_model().objects.create(username="alice")


@pytest.fixture
def conversation(user) -> Conversation:
    return Conversation.objects.create(owner=user, title="approvals")


def tool_entries(conversation) -> dict[str, Message]:
    found = Message.objects.filter(conversation=conversation, role=Role.TOOL)
    return {m.tool_name: m for m in found.order_by("position")}


def awaiting_call(conversation) -> str | None:
    found = Message.objects.filter(
        conversation=conversation, role=Role.TOOL, tool_status="awaiting_approval"
    ).first()
    return found.tool_call_id if found else None


def run_and_decide(conversation, user, text: str, decision: str, note: str = "") -> None:
    """Start the demo, wait until it asks, decide as `user`, wait for the run's end."""

    async def main() -> None:
        start_run(conversation, text, agent=DemoAgent(delay=0))
        while (call_id := await db(awaiting_call)(conversation)) is None:
            await asyncio.sleep(0.05)
        await db(approvals.decide)(conversation, call_id, decision, user, note)
        assert await wait_for_run(conversation.pk, timeout=30)

    asyncio.run(main())


def test_sec13_demo_asks_before_deleting_and_runs_it_when_approved(conversation, user):
    run_and_decide(conversation, user, "delete notes/todo.txt", "approved")
    entry = tool_entries(conversation)["delete_file"]
    assert entry.tool_status == "success"
    assert entry.metadata["approval"]["decided_by"] == "alice"
    answer = Message.objects.filter(conversation=conversation, role=Role.ASSISTANT).last()
    assert "as alice approved" in answer.content


def test_sec13_demo_leaves_the_file_alone_when_denied(conversation, user):
    run_and_decide(conversation, user, "remove notes/todo.txt", "denied", "keep it")
    entry = tool_entries(conversation)["delete_file"]
    assert entry.tool_status == "denied"
    assert "result" not in entry.metadata and "tool_result" not in entry.metadata
    answer = Message.objects.filter(conversation=conversation, role=Role.ASSISTANT).last()
    assert "alice denied it: keep it" in answer.content


def test_sec13_showcase_shows_approved_denied_and_expired(conversation):
    async def main() -> None:
        start_showcase(conversation, delay=0)
        assert await wait_for_run(conversation.pk, timeout=60)

    asyncio.run(main())
    entries = tool_entries(conversation)
    decided = {
        name: entries[name].metadata["approval"].get("decision")
        for name in ("delete_file", "run_command", "send_email")
        if "approval" in entries[name].metadata
    }
    assert decided == {"delete_file": "approved", "run_command": "denied", "send_email": "expired"}
    assert entries["delete_file"].tool_status == "success"
    assert entries["send_email"].metadata["approval"]["decided_by"] == "system"
    assert entries["run_command"].metadata["approval"]["decided_by"] == "showcase script"
