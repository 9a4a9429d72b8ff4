"""A tool entry's text as it stood at a past moment is projected like the moment's page,
under the same bound on moments projected at once: past it, the same 503 the page gives,
never a 500."""

from __future__ import annotations

import pytest
from django.test import Client

from chatui.ingest.service import ingest
from chatui.models import Conversation, Message, Role
from tests.support.moments import moment_slot_held

pytestmark = pytest.mark.django_db(transaction=True)


def test_g16_a_past_tool_text_while_time_travel_is_busy_is_503_not_500(user, settings):
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(
        conversation,
        [
            {
                "type": "agent.tool.started",
                "run_id": "r",
                "tool_call_id": "c1",
                "tool_name": "run_cmd",
                "args": {"cmd": "ls"},
            },
            {
                "type": "agent.tool.completed",
                "run_id": "r",
                "tool_call_id": "c1",
                "result": "a\nb\n",
            },
        ],
    )
    tool = Message.objects.get(conversation=conversation, role=Role.TOOL)
    client = Client()
    client.force_login(user)
    url = f"/c/{conversation.pk}/tools/{tool.pk}/output"
    with moment_slot_held(settings):
        response = client.get(url, {"at": 1})  # the entry changed after event 1
    assert response.status_code == 503
    assert response["Retry-After"]
    assert "time travel is busy" in response.json()["error"]
    assert client.get(url).status_code == 200  # the present needs no moment
