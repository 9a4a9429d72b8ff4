"""`make run`'s setup step: the demo user, and a first conversation run by the demo agent."""

from __future__ import annotations

import subprocess
from io import StringIO

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command

from chatui.models import Conversation
from tests.support.live import ROOT


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


@pytest.mark.django_db
def test_setup_demo_prints_the_address_it_is_given():
    demo = get_user_model().objects.create_user("demo", password="demo-password")
    Conversation.objects.create(owner=demo, title="already set up")  # skips the demo run
    out = StringIO()
    call_command("setup_demo", "--host", "0.0.0.0", "--port", "8123", stdout=out)
    assert "chatui is starting on http://0.0.0.0:8123/" in out.getvalue()
    out = StringIO()
    call_command("setup_demo", "--host", "::1", "--port", "9000", stdout=out)
    assert "chatui is starting on http://[::1]:9000/" in out.getvalue()


def test_make_run_tells_setup_demo_the_port_daphne_serves():
    done = subprocess.run(
        ["make", "-n", "run", "PORT=8123"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "manage.py setup_demo --host 127.0.0.1 --port 8123" in done.stdout
    assert "daphne -b 127.0.0.1 -p 8123 " in done.stdout
