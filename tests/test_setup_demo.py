"""`make run`'s setup step: the demo user, and a first conversation run by the demo agent."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from chatui.models import Conversation


@pytest.mark.django_db(transaction=True)
def test_setup_demo_creates_login_and_a_real_demo_run_once():
    out = StringIO()
    call_command("setup_demo", stdout=out)
    assert "log in as  demo / demo-password" in out.getvalue()
    assert authenticate(username="demo", password="demo-password") is not None
    conversation = Conversation.objects.get(owner__username="demo")
    assert conversation.status == "completed"
    tools = conversation.messages.filter(role="tool")
    assert set(tools.values_list("tool_name", flat=True)) == {"list_files", "read_file"}
    assert set(tools.values_list("tool_status", flat=True)) == {"success"}
    call_command("setup_demo", stdout=StringIO())  # a second `make run` adds nothing
    assert Conversation.objects.filter(owner__username="demo").count() == 1
