"""docs/auditing.md#erasing-content: `erase_content` replaces events' payloads with
tombstones, keeps their content hashes (the chain and the checkpoints still verify, in the
database and offline), records the erasure as an `audit.erasure` event, and the erased
text is gone from every place it was shown, indexed or exported. On SQLite and
(DATABASE_URL) PostgreSQL alike."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from chatui_client.verify import main as chatui_verify
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from chatui.ingest import signing
from chatui.ingest.erasure import erase_content
from chatui.ingest.service import events_ingested, ingest
from chatui.ingest.tombstones import ERASED_TEXT
from chatui.ingest.values import EventError
from chatui.live import frames
from chatui.models import Conversation, Event, Message, Note
from chatui.read.exporters import EXPORT_FORMATS, export_text
from chatui.read.search import search
from chatui.read.verify import verify

pytestmark = pytest.mark.django_db

# What is erased: a word nothing else holds, in hostile markup.
GONE = "Zanzibar7781"
HOSTILE = f"<script>alert('{GONE}')</script>"
RUN = [
    {"type": "user.message", "content": f"Ship {GONE} {HOSTILE}", "run_id": "r1", "event_id": "u1"},
    {
        "type": "agent.tool.started",
        "tool_call_id": "c1",
        "tool_name": "deploy",
        "run_id": "r1",
        "args": {"target": GONE, "note": HOSTILE},
    },
    {
        "type": "agent.tool.completed",
        "tool_call_id": "c1",
        "result": f"{GONE} shipped",
        "run_id": "r1",
    },
    {"type": "agent.step.completed", "message_id": "a1", "content": "Done, kept.", "run_id": "r1"},
    {"type": "agent.status", "status": "completed", "run_id": "r1"},
]
ERASED_SEQS = [1, 2, 3]


@pytest.fixture
def eraser(db):
    person = get_user_model().objects.create_user(
        "eve", password="eve-password-1", is_staff=True, is_superuser=False
    )
    person.groups.add(Group.objects.get(name="auditor"))
    person.user_permissions.add(
        Permission.objects.get(codename="erase_content"),
        Permission.objects.get(codename="view_secrets"),
    )
    return get_user_model().objects.get(pk=person.pk)  # permissions not cached


@pytest.fixture
def logged(user) -> Conversation:
    conversation = Conversation.objects.create(owner=user)  # its title from the first message
    ingest(conversation, RUN[:2])
    ingest(conversation, RUN[2:])  # the run's end signs a checkpoint through seq 5
    conversation.refresh_from_db()
    assert GONE in conversation.title
    return conversation


def texts_shown(conversation: Conversation, client, eraser) -> dict[str, str]:
    """Every place the transcript is shown, indexed or exported, as text."""
    conversation.refresh_from_db()
    client.force_login(eraser)
    shown = {
        "page": client.get(f"/c/{conversation.pk}/").content.decode(),
        "at 3": client.get(f"/c/{conversation.pk}/?at=3").content.decode(),
        "admin": client.get(
            f"/admin/chatui/conversation/{conversation.pk}/change/"
        ).content.decode(),
        "admin events": "".join(
            client.get(f"/admin/chatui/event/{pk}/change/").content.decode()
            for pk in Event.objects.filter(conversation=conversation).values_list("pk", flat=True)
        ),
        "admin messages": client.get(
            f"/admin/chatui/message/?conversation={conversation.pk}"
        ).content.decode(),
        "title": conversation.title,
        "messages": json.dumps(
            list(Message.objects.filter(conversation=conversation).values()), default=str
        ),
        "notes": json.dumps(list(Note.objects.filter(conversation=conversation).values("text"))),
        "search": repr(search(eraser, GONE).groups),
    }
    with connection.cursor() as cursor:
        cursor.execute("SELECT CAST(document AS TEXT) FROM chatui_message_search")
        shown["index rows"] = " ".join(row[0] for row in cursor.fetchall()).casefold()
    for format in EXPORT_FORMATS:
        for reveal in (False, True):
            shown[f"{format} export, reveal={reveal}"] = export_text(
                conversation, format, reveal=reveal
            )
    return shown


def test_v5_the_erased_text_was_everywhere_before(logged, client, eraser):
    # The check below can fail: before the erasure the text is in every place it looks.
    ingest(logged, {"type": "audit.note", "target": {"tool_call_id": "c1"}, "text": GONE})
    shown = texts_shown(logged, client, eraser)
    missing = [place for place, text in shown.items() if GONE.casefold() not in text.casefold()]
    assert missing == []


def test_v5_erased_text_appears_nowhere_it_was_shown_indexed_or_exported(
    logged, client, eraser, django_capture_on_commit_callbacks
):
    ingest(logged, {"type": "audit.note", "target": {"tool_call_id": "c1"}, "text": GONE})
    texts_shown(logged, client, eraser)  # kept states (?at=, memos) made first, with the text
    frames_sent = []

    def keep(sender, **kwargs):
        frames_sent.append(kwargs)

    events_ingested.connect(keep)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            erasure = erase_content(logged, eraser, [*ERASED_SEQS, 6], "GDPR request #12")
    finally:
        events_ingested.disconnect(keep)
    assert erasure.erased == [*ERASED_SEQS, 6] and erasure.seq == 7
    shown = texts_shown(logged, client, eraser)
    assert [place for place, text in shown.items() if GONE.casefold() in text.casefold()] == []
    # the live frame open pages get: the whole transcript, re-projected
    full = [sent for sent in frames_sent if sent["changes"].full_refresh]
    assert full
    html = frames.change_frame(
        logged, full[0]["first_seq"], full[0]["last_seq"], full[0]["changes"]
    ).html
    assert '<section id="transcript"' in html and GONE not in html
    # what is not erased stays, and the page says where the text was
    assert "Done, kept." in shown["page"] and ERASED_TEXT in shown["page"]
    assert "<script>alert" not in shown["page"]


def test_v5_erasure_keeps_verify_log_and_offline_chatui_verify_passing(
    logged, eraser, tmp_path, capsys
):
    erase_content(logged, eraser, ERASED_SEQS, "personal data")
    logged.refresh_from_db()
    verdict = verify(logged)
    assert verdict.ok and verdict.through == 6, verdict
    out = StringIO()
    call_command("verify_log", str(logged.pk), stdout=out)
    assert "ok through seq 6" in out.getvalue()
    for reveal in (True, False):
        path = tmp_path / f"events-{reveal}.jsonl"
        path.write_text(export_text(logged, "events", reveal=reveal))
        status = chatui_verify([str(path), "--key", signing.verifier_key()])
        captured = capsys.readouterr()
        assert status == 0, captured.err
        assert "ok: 6 events, chain holds" in captured.out
    proofs = [json.loads(line).get("chatui_proof", {}) for line in path.read_text().splitlines()]
    assert [p["seq"] for p in proofs if p.get("erased")] == ERASED_SEQS


def test_v5_the_erasure_is_an_audit_erasure_event_saying_who_when_which_and_why(logged, eraser):
    hashes = dict(Event.objects.filter(conversation=logged).values_list("seq", "content_hash"))
    erase_content(logged, eraser, [3], "a secret in the result")
    record = Event.objects.get(conversation=logged, seq=6)
    assert record.type == "audit.erasure" and record.received_at is not None
    assert record.payload == {
        "erased": [{"seq": 3, "content_hash": hashes[3]}],
        "reason": "a secret in the result",
        "by": "eve",
    }
    erased = Event.objects.get(conversation=logged, seq=3)
    assert erased.content_hash == hashes[3]  # kept
    assert erased.payload["erased"]["reason"] == "a secret in the result"
    assert erased.payload["erased"]["by"] == "eve" and erased.payload["erased"]["erasure_seq"] == 6
    assert erased.payload["tool_call_id"] == "c1" and erased.payload["result"] == ERASED_TEXT


def test_v5_a_tombstone_without_its_erasure_fails_verify_at_its_seq(logged, eraser):
    erase_content(logged, eraser, [2], "personal data")
    tombstone = Event.objects.get(conversation=logged, seq=2).payload
    # An intruder hides an edit behind a tombstone no erasure recorded…
    Event.objects.filter(conversation=logged, seq=3).update(payload=tombstone)
    verdict = verify(logged)
    assert (verdict.failed_at, verdict.reason) == (
        3,
        "its content does not match its content hash",
    )
    # …or rewrites the erasure's record to cover it: the record's own hash fails.
    record = Event.objects.get(conversation=logged, seq=6)
    forged = {
        **record.payload,
        "erased": [*record.payload["erased"], {"seq": 3, "content_hash": "0" * 64}],
    }
    Event.objects.filter(pk=record.pk).update(payload=forged)
    verdict = verify(logged)
    assert (verdict.failed_at, verdict.reason) == (
        3,
        "its content does not match its content hash",
    )
    # …or claims the tombstone's own hash: the record no longer matches its content hash.
    forged = {
        **record.payload,
        "erased": [
            *record.payload["erased"],
            {"seq": 3, "content_hash": Event.objects.get(conversation=logged, seq=3).content_hash},
        ],
    }
    Event.objects.filter(pk=record.pk).update(payload=forged)
    verdict = verify(logged)
    # (what holds ends before seq 2: its erasure, seq 6, does not hold)
    assert verdict.failed_at == 6 and verdict.through == 1, verdict


def test_v5_bad_input_or_no_permission_is_refused_and_changes_nothing(
    logged, eraser, user, other_user
):
    before = list(Event.objects.filter(conversation=logged).values_list("seq", "payload"))
    cases = [
        (other_user, [1], "why", 404, "conversation not found"),
        (user, [1], "why", 403, "chatui.erase_content"),
        (eraser, [99], "why", 400, "no event at seq 99"),
        (eraser, [0], "why", 400, "not a seq"),
        (eraser, ["1; DROP"], "why", 400, "not a seq"),
        (eraser, [1], "  ", 400, "reason"),
        (eraser, [1], "x" * 501, 400, "at most 500"),
        (eraser, [], "why", 400, "name the seqs"),
    ]
    for who, seqs, reason, status, said in cases:
        with pytest.raises(EventError) as refused:
            erase_content(logged, who, seqs, reason)
        assert refused.value.status == status and said in refused.value.message
    erase_content(logged, eraser, [1], "why")
    for seqs, said in (([1], "erased already"), ([6], "an erasure's record")):
        with pytest.raises(EventError, match=said):
            erase_content(logged, eraser, seqs, "again")
    after = list(Event.objects.filter(conversation=logged).values_list("seq", "payload"))
    assert after[1:5] == before[1:5] and len(after) == 6


def test_v5_a_runtime_cannot_post_an_erasure(logged, api):
    answer = api.post(
        f"/api/v1/conversations/{logged.pk}/events",
        {"type": "audit.erasure", "erased": [{"seq": 1, "content_hash": "0" * 64}], "reason": "x"},
    )
    assert answer.status_code == 400 and "audit.erasure" in answer.json()["error"]
    assert Event.objects.filter(conversation=logged).count() == 5


def test_v5_the_command_erases_and_refuses_clearly(logged, eraser, user):
    out = StringIO()
    call_command(
        "erase_content", str(logged.pk), "--seq", "3", "--reason", "leak", "--by", "eve", stdout=out
    )
    assert f"{logged.pk}: erased seq 3; recorded as seq 6 (audit.erasure)" in out.getvalue()
    for args, said in (
        (["--seq", "42", "--by", "eve"], "no event at seq 42"),
        (["--seq", "1", "--by", "alice"], "chatui.erase_content"),
        (["--seq", "1", "--by", "nobody"], "no user"),
    ):
        with pytest.raises(CommandError, match=said):
            call_command("erase_content", str(logged.pk), "--reason", "x", *args)
    with pytest.raises(CommandError, match="no conversation"):
        call_command("erase_content", "<b>", "--reason", "x", "--by", "eve")
    assert Event.objects.filter(conversation=logged).count() == 6
    # without --seq: every event (the erasure records are not erased)
    call_command(
        "erase_content", str(logged.pk), "--reason", "all of it", "--by", "eve", stdout=out
    )
    record = Event.objects.get(conversation=logged, seq=7)
    assert [item["seq"] for item in record.payload["erased"]] == [1, 2, 4, 5]
    assert verify(Conversation.objects.get(pk=logged.pk)).ok


def test_v5_the_admin_action_needs_the_permission_and_asks_why(logged, client, eraser, user):
    auditor = get_user_model().objects.create_user("ann", password="ann-password-1", is_staff=True)
    auditor.user_permissions.add(Permission.objects.get(codename="view_event"))
    url = f"/admin/chatui/event/?conversation={logged.pk}"
    pk = Event.objects.get(conversation=logged, seq=1).pk
    client.force_login(auditor)
    assert "erase_selected" not in client.get(url).content.decode()
    client.post(url, {"action": "erase_selected", "_selected_action": [pk]})
    assert not Event.objects.filter(conversation=logged, type="audit.erasure").exists()
    client.force_login(eraser)
    assert "erase_selected" in client.get(url).content.decode()
    asked = client.post(url, {"action": "erase_selected", "_selected_action": [pk]})
    assert asked.status_code == 200 and 'name="reason"' in asked.content.decode()
    refused = client.post(
        url,
        {"action": "erase_selected", "_selected_action": [pk], "confirmed": "1", "reason": " "},
    )
    assert "give the reason" in refused.content.decode()
    assert not Event.objects.filter(conversation=logged, type="audit.erasure").exists()
    done = client.post(
        url,
        {
            "action": "erase_selected",
            "_selected_action": [pk],
            "confirmed": "1",
            "reason": "<b>PII</b>",
        },
    )
    assert done.status_code == 302
    record = Event.objects.get(conversation=logged, type="audit.erasure")
    assert record.payload["by"] == "eve" and record.payload["reason"] == "<b>PII</b>"
    # the reason is untrusted text: escaped where the admin shows it
    for shown in (f"/admin/chatui/event/{record.pk}/change/", f"/admin/chatui/event/{pk}/change/"):
        page = client.get(shown).content.decode()
        assert "PII" in page and "<b>PII</b>" not in page


def test_v5_erasing_a_foreign_dialects_events_keeps_the_page_and_the_proof(user, eraser, client):
    conversation = Conversation.objects.create(owner=user, title="spine")
    ingest(
        conversation,
        [
            {"type": "agent_start"},
            {"type": "message_start", "role": "user"},
            {"type": "message_update", "role": "user", "delta": f"hello {GONE}"},
            {"type": "message_end", "role": "user", "text_preview": f"hello {GONE}"},
            {"type": "message_start", "role": "assistant"},
            {"type": "message_update", "role": "assistant", "delta": f"{GONE} noted"},
            {"type": "message_end", "role": "assistant", "text_preview": f"{GONE} noted"},
            {"type": "agent_end", "final_text": f"{GONE} noted"},
        ],
    )
    client.force_login(user)
    assert GONE in client.get(f"/c/{conversation.pk}/").content.decode()
    erase_content(conversation, eraser, None, "all of it")  # every event
    conversation.refresh_from_db()
    assert verify(conversation).ok
    client.force_login(eraser)
    page = client.get(f"/c/{conversation.pk}/")
    assert page.status_code == 200 and GONE not in page.content.decode()
    for format in EXPORT_FORMATS:
        assert GONE not in export_text(conversation, format, reveal=True)


def test_v5_an_export_with_erasures_imports_into_a_log_that_verifies(logged, eraser, user):
    from chatui.importers import import_transcript

    erase_content(logged, eraser, ERASED_SEQS, "personal data")
    text = export_text(logged, "events", reveal=True)
    imported = Conversation.objects.create(owner=user, title="imported")
    import_transcript(text, "chatui", imported)
    imported.refresh_from_db()
    assert imported.last_seq == 6 and verify(imported).ok
    assert GONE not in json.dumps(
        list(Message.objects.filter(conversation=imported).values("content", "metadata"))
    )
