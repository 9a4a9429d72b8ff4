"""A conversation with a run, a tool call holding a secret and a hostile result, and the
people around it: its owner, an auditor, and a stranger (docs/sharing.md)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from chatui.ingest.service import ingest
from chatui.models import ApiToken, Conversation
from tests.support.api_client import ApiClient

User = get_user_model()
SECRET = "sk-live-abcdefghijklmnop9876"
HOSTILE = "<script>alert('xss-note')</script><img src=x onerror=\"alert('xss-img')\">"


@pytest.fixture
def shared(user) -> Conversation:
    conversation = Conversation.objects.create(owner=user, title="Deploy")
    ingest(
        conversation,
        [
            {"type": "agent.status", "status": "running", "run_id": "r1"},
            {"type": "user.message", "message_id": "u1", "content": "Deploy it", "run_id": "r1"},
            {
                "type": "agent.tool.started",
                "tool_call_id": "c1",
                "tool_name": "run_cmd",
                "args": {"command": "deploy --token " + SECRET, "path": "/srv/args-only-text"},
                "run_id": "r1",
            },
            {
                "type": "agent.tool.completed",
                "tool_call_id": "c1",
                "result": "deployed with " + SECRET + " result-only-text",
                "run_id": "r1",
            },
            {"type": "agent.status", "status": "completed", "run_id": "r1"},
        ],
    )
    return conversation


@pytest.fixture
def auditor(db):
    person = User.objects.create_user("audra", password="audra-password-1", is_staff=True)
    person.groups.add(Group.objects.get(name="auditor"))
    return person


def client_for(person) -> Client:
    client = Client()
    client.force_login(person)
    return client


def api_for(person) -> ApiClient:
    _, raw = ApiToken.issue(person)
    return ApiClient(raw)
