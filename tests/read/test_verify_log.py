"""docs/auditing.md#checking-a-log: `manage.py verify_log` and the admin's verdict. Tampering
is done as an intruder with write access to the database would: UPDATE and DELETE on the rows, on
SQLite and (make test-cluster) PostgreSQL alike."""

from __future__ import annotations

import hashlib
from io import StringIO

import pytest
from chatui_client.proof import chain_hash, content_hash
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from chatui.ingest.chain import event_content
from chatui.ingest.service import ingest
from chatui.models import Checkpoint, Conversation, Event
from chatui.read.verify import verify

pytestmark = pytest.mark.django_db

RUN = [
    {"type": "user.message", "content": "Deploy?", "run_id": "r1", "event_id": "u1"},
    {
        "type": "agent.tool.started",
        "tool_call_id": "c1",
        "tool_name": "deploy",
        "run_id": "r1",
        "args": {"env": "prod"},
    },
    {"type": "agent.tool.completed", "tool_call_id": "c1", "result": "deployed", "run_id": "r1"},
    {"type": "agent.step.completed", "message_id": "a1", "content": "Done.", "run_id": "r1"},
    {"type": "agent.status", "status": "completed", "run_id": "r1"},
]


@pytest.fixture
def logged(conversation) -> Conversation:
    ingest(conversation, RUN[:2])
    ingest(conversation, RUN[2:])  # the run's end signs a checkpoint through seq 5
    conversation.refresh_from_db()
    return conversation


def verify_log(*args: str) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("verify_log", *args, stdout=out)
    except CommandError as error:
        return error.returncode, out.getvalue()
    return 0, out.getvalue()


def test_v3_an_untouched_log_is_ok_through_its_last_seq_and_signed(logged):
    status, out = verify_log(str(logged.pk))
    assert status == 0
    assert f"{logged.pk}: ok through seq 5, signed through seq 5 at " in out


def test_v3_an_edited_payload_fails_at_its_seq(logged):
    event = Event.objects.get(conversation=logged, seq=3)
    Event.objects.filter(pk=event.pk).update(payload={**event.payload, "result": "failed"})
    status, out = verify_log(str(logged.pk))
    assert status == 1
    assert "fails at seq 3: its content does not match its content hash" in out


def test_v3_a_deleted_event_fails_at_its_seq(logged):
    Event.objects.filter(conversation=logged, seq=2).delete()
    status, out = verify_log("--all")
    assert status == 1 and "fails at seq 2: this event is missing" in out


def test_v3_a_deleted_last_event_fails_at_its_seq(logged):
    Event.objects.filter(conversation=logged, seq=5).delete()
    Conversation.objects.filter(pk=logged.pk).update(last_seq=4)  # the intruder covers up
    status, out = verify_log(str(logged.pk))
    assert status == 1 and "fails at seq 5: missing: a checkpoint was signed through seq 5" in out


def test_v3_reordered_seqs_fail_at_the_first_moved_seq(logged):
    rows = Event.objects.filter(conversation=logged)
    rows.filter(seq=2).update(seq=1000)
    rows.filter(seq=3).update(seq=2)
    rows.filter(seq=1000).update(seq=3)
    status, out = verify_log(str(logged.pk))
    assert status == 1 and "fails at seq 2: its content does not match" in out


def rehash_from(conversation: Conversation, seq: int) -> None:
    """What an intruder without the key can do: recompute every hash after an edit."""
    events = list(Event.objects.filter(conversation=conversation).order_by("seq"))
    previous = bytes.fromhex(events[seq - 2].chain_hash) if seq > 1 else bytes(32)
    for event in events[seq - 1 :]:
        content = content_hash(event_content(event))
        previous = chain_hash(previous, content)
        Event.objects.filter(pk=event.pk).update(
            content_hash=content.hex(), chain_hash=previous.hex()
        )
    Conversation.objects.filter(pk=conversation.pk).update(chain_hash=previous.hex())


def test_v3_hashes_recomputed_without_the_key_fail_at_the_signature(logged):
    event = Event.objects.get(conversation=logged, seq=3)
    Event.objects.filter(pk=event.pk).update(payload={**event.payload, "result": "failed"})
    rehash_from(logged, 3)
    verdict = verify(logged)
    assert (verdict.failed_at, verdict.through) == (5, 5)
    assert "differs from what was signed" in verdict.reason
    # …and the checkpoint's text rewritten to the new chain hash breaks its signature.
    checkpoint = Checkpoint.objects.filter(conversation=logged).latest("size")
    new_head = Event.objects.get(conversation=logged, seq=5).chain_hash
    Checkpoint.objects.filter(pk=checkpoint.pk).update(
        note=checkpoint.note.replace(checkpoint.chain_hash, new_head), chain_hash=new_head
    )
    status, out = verify_log(str(logged.pk))
    assert status == 1
    assert "fails at seq 5: the checkpoint through it is not signed" in out
    assert "does not hold" in out


def test_v1_the_migration_chains_every_existing_event(logged):
    before = list(Event.objects.filter(conversation=logged).values_list("chain_hash", flat=True))
    Event.objects.filter(conversation=logged).update(content_hash="", chain_hash="")
    Conversation.objects.filter(pk=logged.pk).update(chain_hash="")
    migration = __import__("chatui.migrations.0016_event_chain", fromlist=["chain_every_log"])
    migration.chain_every_log(apps, None)
    after = list(Event.objects.filter(conversation=logged).values_list("chain_hash", flat=True))
    assert after == before and all(len(h) == 64 for h in after)
    logged.refresh_from_db()
    assert logged.chain_hash == before[-1] and verify(logged).ok


def test_a4_the_admin_audit_page_opens_with_the_verdict(logged, client):
    admin = get_user_model().objects.create_superuser("root", password="root-password-1")
    client.force_login(admin)
    url = reverse("admin:chatui_conversation_change", args=[logged.pk])
    page = client.get(url).content.decode()
    assert "Log verified through event 5" in page and "signed" in page
    Event.objects.filter(conversation=logged, seq=4).update(type="<script>x</script>")
    # (Checked from where it last held unless asked for the whole log: below.)
    page = client.get(url + "?verify=all").content.decode()
    assert "Log fails at event 4" in page
    assert "<script>x</script>" not in page.split('id="audit-verdict"')[1].split("</section>")[0]


def test_v3_verify_log_refuses_no_ids_and_unknown_ids(logged):
    with pytest.raises(CommandError, match="--all"):
        call_command("verify_log")
    with pytest.raises(CommandError, match="no conversation"):
        call_command("verify_log", "00000000-0000-0000-0000-000000000000")
    with pytest.raises(CommandError, match="not a UUID"):
        call_command("verify_log", "<b>")


def test_v2_the_checkpoint_signs_the_head_hash(logged):
    checkpoint = Checkpoint.objects.get(conversation=logged, size=5)
    assert checkpoint.chain_hash == logged.chain_hash
    assert hashlib.sha256(b"").hexdigest() not in checkpoint.note


def test_v3_the_admin_verdict_checks_what_came_since_it_last_held_and_verify_log_all(
    logged, client
):
    admin = get_user_model().objects.create_superuser("root", password="root-password-1")
    client.force_login(admin)
    url = reverse("admin:chatui_conversation_change", args=[logged.pk])
    assert "Log verified through event 5" in client.get(url).content.decode()
    # A tamper before that point, without re-hashing: the incremental verdict does not
    # re-hash seq 1–5 again…
    event = Event.objects.get(conversation=logged, seq=3)
    Event.objects.filter(pk=event.pk).update(payload={**event.payload, "result": "failed"})
    ingest(logged, [{"type": "user.message", "content": "More?", "run_id": "r2"}])
    page = client.get(url).content.decode()
    assert "Log verified through event 6" in page and "check the whole log" in page
    # …the whole log's check does, on the page and in verify_log.
    assert "Log fails at event 3" in client.get(url + "?verify=all").content.decode()
    status, out = verify_log(str(logged.pk))
    assert status == 1 and "fails at seq 3: its content does not match" in out
    # A tamper after where it held is caught by the incremental verdict itself.
    Event.objects.filter(pk=event.pk).update(payload=event.payload)  # undone
    assert "Log verified through event 6" in client.get(url + "?verify=all").content.decode()
    ingest(logged, [{"type": "user.message", "content": "Again?", "run_id": "r2"}])
    seventh = Event.objects.filter(conversation=logged, seq=7)
    kept = seventh.get().payload
    seventh.update(payload={"content": "forged"})
    assert "Log fails at event 7" in client.get(url).content.decode()
    seventh.update(payload=kept)
    assert "Log verified through event 7" in client.get(url).content.decode()
    # Hashes re-computed from seq 3 on (no key): the chain where it held changed, so the
    # verdict starts again from seq 1 and fails at the checkpoint.
    Event.objects.filter(pk=event.pk).update(payload={**event.payload, "result": "failed"})
    rehash_from(logged, 3)
    assert "Log fails at event 5" in client.get(url).content.decode()
