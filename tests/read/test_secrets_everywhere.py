"""T3 beyond the page: live frames, exports, the admin, search snippets; one entry
revealed to holders of chatui.view_secrets, and each reveal recorded."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from chatui.ingest.projection import ChangeSet
from chatui.ingest.service import ingest
from chatui.live import frames
from chatui.models import Conversation, Message, SecretReveal
from chatui.read import search
from chatui.read.exporters import export_text

KEY = "sk-live-abcdefghijklmnop9876"
GHP = "ghp_abcdefghijklmnopqrstuvwxyz"
PASSWORD = "hunter2-very-secret"
SECRETS = (KEY, GHP, PASSWORD)
EVENTS = [
    {"type": "agent.status", "status": "running", "run_id": "r1"},
    {
        "type": "agent.tool.started",
        "run_id": "r1",
        "tool_call_id": "k",
        "tool_name": "deploy",
        "args": {"api_key": KEY, "target": "prod"},
    },
    {
        "type": "agent.tool.completed",
        "run_id": "r1",
        "tool_call_id": "k",
        "result": f"deployed with {GHP}",
        "details": {"kind": "command", "command": f"login --password={PASSWORD}", "exit_code": 0},
    },
    {"type": "agent.status", "status": "completed", "run_id": "r1"},
]


@pytest.fixture
def leaky(user) -> Conversation:
    conversation = Conversation.objects.create(owner=user, title="Deploy")
    ingest(conversation, EVENTS)
    return conversation


def staff(name: str, *perms: str) -> Client:
    person = User.objects.create_user(name, password=f"{name}-password-1", is_staff=True)
    for perm in ("view_conversation", "view_message", "view_event", *perms):
        person.user_permissions.add(Permission.objects.get(codename=perm))
    client = Client()
    client.force_login(person)
    return client


def assert_masked(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text
    assert "••••9876" in text


def tool_of(conversation: Conversation) -> Message:
    return Message.objects.get(conversation=conversation, role="tool")


def test_t3_secrets_masked_in_live_frames(leaky):
    # Frames render the presenters' view objects, so they mask as the page does.
    assert_masked(frames.full_frame(leaky).html)
    tool = tool_of(leaky)
    changes = ChangeSet(changed={tool.pk: leaky.last_seq})
    assert_masked(frames.change_frame(leaky, leaky.last_seq, leaky.last_seq, changes).html)


@pytest.mark.parametrize("fmt", ["messages", "events", "otlp"])
def test_t3_secrets_masked_in_each_export(leaky, fmt):
    assert_masked(export_text(leaky, fmt))
    revealed = export_text(leaky, fmt, reveal=True)
    assert KEY in revealed and GHP in revealed


def test_t3_masked_events_export_keeps_token_counts_and_the_log_unchanged(leaky):
    ingest(leaky, [{"type": "agent.step.completed", "content": "ok", "tokens": 650}])
    lines = [json.loads(line) for line in export_text(leaky, "events").splitlines()]
    events = [line for line in lines if "chatui_proof" in line]  # then the checkpoints
    assert events[-1]["tokens"] == 650
    assert leaky.events.get(type="agent.tool.started").payload["args"]["api_key"] == KEY


def test_t3_export_command_masks_unless_reveal_secrets(leaky, capsys):
    call_command("export_transcript", str(leaky.pk), "--format", "messages")
    assert_masked(capsys.readouterr().out)
    call_command("export_transcript", str(leaky.pk), "--format", "messages", "--reveal-secrets")
    assert KEY in capsys.readouterr().out


def test_t3_admin_exports_reveal_only_to_view_secrets_holders(leaky):
    url = reverse("admin:chatui_conversation_changelist")
    body = {"action": "export_messages", "_selected_action": [str(leaky.pk)]}
    assert_masked(staff("ann").post(url, body).content.decode())
    assert KEY in staff("sam", "view_secrets").post(url, body).content.decode()


def test_t3_secrets_masked_in_the_admin(leaky):
    client = staff("ann")
    page = client.get(reverse("admin:chatui_conversation_change", args=[leaky.pk]))
    assert_masked(page.content.decode())
    assert b"data-reveal-secrets" not in page.content
    tool = tool_of(leaky)
    assert_masked(
        client.get(reverse("admin:chatui_message_change", args=[tool.pk])).content.decode()
    )
    listing = client.get(reverse("admin:chatui_message_changelist")).content.decode()
    assert GHP not in listing and "••••wxyz" in listing
    event = leaky.events.get(type="agent.tool.started")
    assert_masked(
        client.get(reverse("admin:chatui_event_change", args=[event.pk])).content.decode()
    )


def test_t3_reveal_of_one_entry_is_recorded(leaky):
    client = staff("sam", "view_secrets", "view_secretreveal")
    page = client.get(reverse("admin:chatui_conversation_change", args=[leaky.pk]))
    assert b"data-reveal-secrets" in page.content
    tool = tool_of(leaky)
    url = reverse("admin:chatui_conversation_reveal", args=[leaky.pk, tool.pk])
    assert client.get(url).status_code == 405  # a link or a prefetch never reveals
    revealed = client.post(url)
    assert revealed.status_code == 200
    body = revealed.content.decode()
    assert KEY in body and GHP in body and PASSWORD in body
    (record,) = SecretReveal.objects.all()
    assert (record.user.username, record.message, record.conversation) == ("sam", tool, leaky)
    listing = client.get(reverse("admin:chatui_secretreveal_changelist"))
    assert listing.status_code == 200 and tool.message_id in listing.content.decode()
    change = client.get(reverse("admin:chatui_secretreveal_change", args=[record.pk]))
    assert b'name="_save"' not in change.content
    assert client.get(reverse("admin:chatui_secretreveal_add")).status_code == 403


def test_t3_reveal_refused_without_the_permission(leaky):
    client = staff("ann")
    tool = tool_of(leaky)
    url = reverse("admin:chatui_conversation_reveal", args=[leaky.pk, tool.pk])
    assert client.post(url).status_code == 403
    assert not SecretReveal.objects.exists()


def test_t3_reveal_needs_the_csrf_token(leaky):
    client = staff("sam", "view_secrets")
    client.handler.enforce_csrf_checks = True
    tool = tool_of(leaky)
    url = reverse("admin:chatui_conversation_reveal", args=[leaky.pk, tool.pk])
    assert client.post(url).status_code == 403
    assert not SecretReveal.objects.exists()


def test_t3_search_snippets_mask_first_then_mark(leaky):
    query = search.parse_query("deployed")
    parts = search.snippet_parts(f"deployed with {GHP} today", query)
    text = "".join(part for part, _ in parts)
    assert GHP not in text and "••••wxyz" in text
    assert [part for part, marked in parts if marked] == ["deployed"]


def test_t3_a_text_masked_again_comes_from_the_cache_and_long_texts_are_masked_too():
    """Frames present a batch's entries at every event: their texts are masked once."""
    from chatui.secrets import CACHED_MASK_CHARS, _mask_short, mask_text

    short = "curl -H 'Authorization: Bearer sk-live-0123456789abcdef0123' https://x"
    first = mask_text(short)
    hits = _mask_short.cache_info().hits
    assert mask_text(short) == first and "0123456789abcdef" not in first
    assert _mask_short.cache_info().hits == hits + 1
    long = "x" * CACHED_MASK_CHARS + " token=sk-live-0123456789abcdef0123"
    assert "0123456789abcdef" not in mask_text(long)
    assert mask_text(long).startswith("x" * CACHED_MASK_CHARS)


def test_t3_token_counts_are_shown_and_tokens_stay_masked():
    """`max_tokens`, `input_tokens`, … count a model's tokens: a whole number under them
    is shown, in decoded JSON and in text alike; a string under them, or any value under
    a singular `token`, is still masked."""
    from chatui.secrets import mask_text, mask_value

    usage = {"max_tokens": 4096, "usage": {"input_tokens": 1234, "total_tokens": 99999}}
    assert mask_value(usage) == usage
    assert mask_text(json.dumps(usage)) == json.dumps(usage)
    assert mask_text("max_tokens=4096 output_tokens: 8192") == "max_tokens=4096 output_tokens: 8192"
    masked = mask_value({"tokens": "abcdefghijkl", "token": 1234567890, "max_tokens": True})
    assert masked == {"tokens": "••••ijkl", "token": "••••7890", "max_tokens": "••••"}
    assert mask_text('{"token": 1234567890}') == '{"token": ••••7890}'
    assert mask_text('max_tokens="abcdefghijkl"') == 'max_tokens="••••ijkl"'
    assert mask_text("max_tokens=²²²²") == "max_tokens=••••"  # digits, but not a count
