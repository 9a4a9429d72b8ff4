"""docs/events.md#ag-ui: AG-UI's state, activity, RAW and CUSTOM events are kept and shown in
the admin — each event as received (secrets masked), and the agent's state as of any event
(its latest STATE_SNAPSHOT with the STATE_DELTAs after it applied)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from chatui.ingest.service import ingest
from chatui.models import Conversation, Event
from chatui.read.exporters import export_text

SECRET = "sk-abcdefghijklmnopqrstuvwxyz123456"


@pytest.fixture
def super_client(db) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="root-pass-1"))
    return client


@pytest.fixture
def stateful(user) -> Conversation:
    conversation = Conversation.objects.create(owner=user, title="state")
    ingest(
        conversation,
        [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
            {"type": "STATE_SNAPSHOT", "snapshot": {"step": 1, "notes": ["<b>a</b>"]}},
            {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/step", "value": 2}]},
            {"type": "CUSTOM", "name": "progress", "value": {"api_key": SECRET}},
            {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/notes/-", "value": "c"}]},
            {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/missing"}]},
            {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "login"},
            {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "m", "content": SECRET},
        ],
    )
    return conversation


def event_page(client: Client, conversation: Conversation, seq: int) -> str:
    event = Event.objects.get(conversation=conversation, seq=seq)
    response = client.get(reverse("admin:chatui_event_change", args=[event.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_admin_shows_the_agents_state_as_of_each_event(super_client, stateful):
    assert "&quot;step&quot;: 1" in event_page(super_client, stateful, 2)
    as_of_custom = event_page(super_client, stateful, 4)
    assert "&quot;step&quot;: 2" in as_of_custom and "&quot;c&quot;" not in as_of_custom
    assert "&quot;step&quot;: 2" in event_page(super_client, stateful, 5)
    assert "&lt;b&gt;a&lt;/b&gt;" in event_page(super_client, stateful, 5)  # escaped
    broken = event_page(super_client, stateful, 6)
    assert "STATE_DELTA 3 after the snapshot does not apply" in broken
    assert "no STATE_SNAPSHOT yet" in event_page(super_client, stateful, 1)


def test_t3_agui_tool_text_custom_values_and_state_are_masked_in_admin_and_export(
    super_client, stateful
):
    for seq in (4, 8):
        assert SECRET not in event_page(super_client, stateful, seq)
    assert SECRET not in export_text(stateful, "events")
