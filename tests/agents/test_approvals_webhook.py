"""docs/events.md#approvals: a webhook runtime receives the decision on its approval request as a
callback POST (against the fake runtime of test_agents_webhook: a real HTTP server)."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.test import Client

from chatui.ingest import approvals
from chatui.models import ApiToken
from tests.support.webhook_runtime import agent_for, run_and_wait, runtime

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def user(db):
    return get_user_model().objects.create(username="alice")


def post_as_runtime(user, conversation, events) -> int:
    _, raw = ApiToken.issue(user, name="runtime-approval")
    response = Client().post(
        f"/api/v1/conversations/{conversation.pk}/events",
        data=json.dumps(events),
        content_type="application/json",
        headers={"Authorization": f"Bearer {raw}"},
    )
    return response.status_code


def test_sec13_webhook_runtime_gets_the_decision_as_a_callback(conversation, user):
    with runtime(user) as server:

        async def hold(run_id: str) -> None:
            while not server.deliveries:
                await asyncio.sleep(0.01)
            asked = {
                "type": "agent.tool.approval_requested",
                "tool_call_id": "wh-1",
                "tool_name": "drop_table",
                "reason": "destructive",
                "run_id": run_id,
            }
            assert await sync_to_async(post_as_runtime)(user, conversation, [asked]) == 200
            await sync_to_async(approvals.decide)(conversation, "wh-1", "denied", user, "no")
            while len(server.deliveries) < 2:
                await asyncio.sleep(0.01)
            end = {"type": "agent.status", "status": "completed", "run_id": run_id}
            assert await sync_to_async(post_as_runtime)(user, conversation, [end]) == 200

        run_id = run_and_wait(conversation, agent_for(server.url), hold=hold)

    callback = server.deliveries[1]
    body = callback["body"]
    assert body.pop("decided_at")
    assert body == {
        "type": "tool.approval",
        "conversation_id": str(conversation.pk),
        "run_id": run_id,
        "tool_call_id": "wh-1",
        "decision": "denied",
        "decided_by": "alice",
        "note": "no",
    }
    headers = {key.lower(): value for key, value in callback["headers"].items()}
    assert headers["authorization"] == "Bearer hook-secret"
    assert headers["idempotency-key"].startswith(f"{run_id}:")
