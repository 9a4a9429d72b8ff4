"""T3 (issue 28, finding 2): one masking for every shown text. A JSON result, an error
or details holding `{"access_token": "…"}` is masked by its key as args are, and a
failed run's `error_message` ("crash token=tok_…") is masked in the red banner, at
`?at=`, in the admin and in every export, as the conversation list's row masks it."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from chatui.ingest.service import ingest
from chatui.live import frames
from chatui.models import Conversation, Event, Message, Run
from chatui.read.exporters import export_text
from chatui.secrets import mask_text, mask_value

RESULT_TOKEN = "tok_result_0123456789abcd"
ERROR_PASSWORD = "ErrorPassw0rdLEAK11"
DETAILS_SECRET = "DetailsSecretLEAK22"
SINGLE_QUOTED = "ReprSecretLEAK33"
CRASH_TOKEN = "tok_crashLEAK3456789"
SECRETS = (RESULT_TOKEN, ERROR_PASSWORD, DETAILS_SECRET, SINGLE_QUOTED, CRASH_TOKEN)
#: What is shown instead: `••••` and the last 4 characters.
MASKS = ("••••abcd", "••••AK11", "••••AK22", "••••6789")

EVENTS = [
    {"type": "agent.status", "status": "running", "run_id": "r1"},
    {"type": "agent.tool.started", "run_id": "r1", "tool_call_id": "t1", "tool_name": "login"},
    {
        "type": "agent.tool.completed",
        "run_id": "r1",
        "tool_call_id": "t1",
        "result": {"access_token": RESULT_TOKEN, "expires_in": 3600},
    },
    {"type": "agent.tool.started", "run_id": "r1", "tool_call_id": "t2", "tool_name": "fetch"},
    {
        "type": "agent.tool.completed",
        "run_id": "r1",
        "tool_call_id": "t2",
        "error": f'HTTP 401: {{"password": "{ERROR_PASSWORD}"}}',
    },
    {"type": "agent.tool.started", "run_id": "r1", "tool_call_id": "t3", "tool_name": "cat"},
    {
        "type": "agent.tool.completed",
        "run_id": "r1",
        "tool_call_id": "t3",
        "result": f"{{'client_secret': '{SINGLE_QUOTED}'}}",
        "details": {
            "kind": "command",
            "command": "cat creds.json",
            "exit_code": 0,
            "stdout": f'{{\n  "client_secret": "{DETAILS_SECRET}"\n}}',
        },
    },
    {
        "type": "agent.status",
        "status": "failed",
        "run_id": "r1",
        "error_message": f"crash token={CRASH_TOKEN}",
    },
]


def assert_masked(text: str, masks: tuple[str, ...] = MASKS) -> None:
    for secret in SECRETS:
        assert secret not in text, secret
    for mask in masks:
        assert mask in text, mask


@pytest.fixture
def leaky(user) -> Conversation:
    conversation = Conversation.objects.create(owner=user, title="Creds")
    ingest(conversation, EVENTS)
    return conversation


@pytest.fixture
def owner(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def staff(name: str, *perms: str) -> Client:
    person = User.objects.create_user(name, password=f"{name}-password-1", is_staff=True)
    for perm in ("view_conversation", "view_message", "view_event", "view_run", *perms):
        person.user_permissions.add(Permission.objects.get(codename=perm))
    client = Client()
    client.force_login(person)
    return client


def test_t3_mask_text_masks_secret_keys_in_json_text_as_mask_value_masks_them():
    """The one rule: a value under a secret-sounding key is a secret, whether the key
    is a decoded dict's or stands in text (JSON, a Python repr, `key: value` lines)."""
    assert mask_value({"access_token": RESULT_TOKEN}) == {"access_token": "••••abcd"}
    assert mask_text(json.dumps({"access_token": RESULT_TOKEN})) == '{"access_token": "••••abcd"}'
    assert mask_text(f'{{"access_token":"{RESULT_TOKEN}"}}') == '{"access_token":"••••abcd"}'
    assert mask_text(f"{{'client_secret': '{SINGLE_QUOTED}'}}") == "{'client_secret': '••••AK33'}"
    assert mask_text(f"password: {ERROR_PASSWORD}\nuser: bob") == "password: ••••AK11\nuser: bob"
    assert mask_text('{"password": "a \\" quote inside"}') == '{"password": "••••side"}'
    # Words that only look like keys are left alone; a mask is not masked again.
    assert mask_text("def login(token: str) -> None:") == "def login(token: str) -> None:"
    assert mask_text('{"password": null}') == '{"password": null}'
    assert mask_text(mask_text(f"token={CRASH_TOKEN}")) == "token=••••6789"


def test_t3_results_errors_and_details_masked_on_first_load(owner, leaky):
    page = owner.get(leaky.get_absolute_url())
    assert page.status_code == 200
    assert_masked(page.content.decode())


def test_t3_results_errors_details_and_the_run_error_masked_in_live_frames(user):
    conversation = Conversation.objects.create(owner=user, title="Creds")
    html = []
    for event in EVENTS:
        result = ingest(conversation, [event])
        conversation.refresh_from_db()
        frame = frames.change_frame(conversation, result.last_seq, result.last_seq, result.changes)
        html.append(frame.html)
    assert_masked("".join(html))
    assert_masked(frames.full_frame(conversation).html)


def test_t3_run_error_masked_in_the_red_banner_and_at_a_past_moment(owner, leaky):
    page = owner.get(leaky.get_absolute_url()).content.decode()
    assert "data-run-error" in page and "crash token=••••6789" in page
    past = owner.get(leaky.get_absolute_url(), {"at": leaky.last_seq})
    assert past.status_code == 200
    assert_masked(past.content.decode())
    replayed = owner.get(reverse("chatui:replay", args=[leaky.pk]), {"at": leaky.last_seq})
    assert_masked(replayed.content.decode())


def test_t3_run_error_and_tool_text_masked_in_the_admin(leaky):
    client = staff("ann")
    audit = client.get(reverse("admin:chatui_conversation_change", args=[leaky.pk]))
    assert_masked(audit.content.decode())
    run = Run.objects.get(conversation=leaky, run_id="r1")
    shown = client.get(reverse("admin:chatui_run_change", args=[run.pk])).content.decode()
    assert CRASH_TOKEN not in shown and "••••6789" in shown
    runs = client.get(reverse("admin:chatui_run_changelist")).content.decode()
    assert CRASH_TOKEN not in runs and "••••6789" in runs
    status = Message.objects.get(conversation=leaky, role="status", status_type="error")
    for url in (
        reverse("admin:chatui_message_change", args=[status.pk]),
        reverse("admin:chatui_message_changelist"),
    ):
        shown = client.get(url).content.decode()
        assert CRASH_TOKEN not in shown and "••••6789" in shown, url
    failed = Event.objects.get(conversation=leaky, type="agent.status", seq=leaky.last_seq)
    shown = client.get(reverse("admin:chatui_event_change", args=[failed.pk])).content.decode()
    assert CRASH_TOKEN not in shown and "••••6789" in shown


def test_t3_admin_run_search_is_no_oracle_for_the_run_error(leaky):
    client = staff("ann")
    url = reverse("admin:chatui_run_changelist")
    assert list(client.get(url, {"q": "tok_crashLEAK"}).context["cl"].result_list) == []
    assert list(client.get(url, {"q": "crash"}).context["cl"].result_list) == [
        Run.objects.get(conversation=leaky, run_id="r1")
    ]


@pytest.mark.parametrize(
    ("action", "fmt"),
    [("export_messages", "messages"), ("export_events", "events"), ("export_otlp", "otlp")],
)
def test_t3_every_admin_export_masks_results_errors_details_and_the_run_error(leaky, action, fmt):
    url = reverse("admin:chatui_conversation_changelist")
    body = {"action": action, "_selected_action": [str(leaky.pk)]}
    exported = staff("ann").post(url, body).content.decode()
    # The events export keeps each result as its runtime sent it, a dict masked by
    # key; every format shows the run's error line masked.
    assert_masked(exported, ("••••6789",))
    assert_masked(export_text(leaky, fmt), ("••••6789",))
    revealed = staff("sam", "view_secrets").post(url, body).content.decode()
    assert CRASH_TOKEN in revealed
