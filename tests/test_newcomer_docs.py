"""A newcomer's first `make run` (issue 28): what it prints is true and complete — the
address, the demo login, how to reach the admin — and the README says how to change the
address and what `make run` does, in words that are true."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from chatui.models import Conversation
from tests.support.live import ROOT


@pytest.mark.django_db
def test_setup_demo_says_how_to_reach_the_admin():
    demo = get_user_model().objects.create_user("demo", password="demo-password")
    Conversation.objects.create(owner=demo, title="already set up")  # skips the demo run
    out = StringIO()
    call_command("setup_demo", "--port", "8123", stdout=out)
    printed = out.getvalue()
    assert "log in as  demo / demo-password" in printed
    # The demo user is no staff member: the admin needs one, made by the command shown.
    assert not get_user_model().objects.get(username="demo").is_staff
    assert "admin  http://127.0.0.1:8123/admin/" in printed
    assert "manage.py createsuperuser" in printed


def test_readme_says_what_make_run_does_and_how_to_change_its_address():
    readme = (ROOT / "README.md").read_text()
    assert "logs you in" not in readme  # it prints the login; the reader logs in
    assert "make run PORT=" in readme and "HOST=" in readme
    assert "manage.py createsuperuser" in readme
