"""docs/auditing.md#verifying-an-export: the events export carries each event's hashes and
the signed checkpoints, and `chatui-verify` (chatui_client.verify, no Django) checks it
offline. The fresh-venv run is tests/test_client_package.py's."""

from __future__ import annotations

import json

import pytest
from chatui_client.verify import main

from chatui.importers import import_transcript
from chatui.ingest import signing
from chatui.ingest.service import ingest
from chatui.models import Conversation
from chatui.read.exporters import export_text
from chatui.read.selectors import messages_of

pytestmark = pytest.mark.django_db

SECRET = "sk-live-abcdefghijklmnopqrstuvwx"
RUN = [
    {"type": "user.message", "content": "Deploy <b>now</b>?", "run_id": "r1", "event_id": "u1"},
    {
        "type": "agent.tool.started",
        "tool_call_id": "c1",
        "tool_name": "deploy",
        "run_id": "r1",
        "args": {"env": "prod", "token": SECRET, "ratio": 0.25},
    },
    {"type": "agent.tool.completed", "tool_call_id": "c1", "result": "deployed ✓", "run_id": "r1"},
    {"type": "agent.status", "status": "completed", "run_id": "r1"},
]


@pytest.fixture
def exported(conversation, tmp_path):
    ingest(conversation, RUN[:1])
    ingest(conversation, RUN[1:])
    path = tmp_path / "events.jsonl"
    path.write_text(export_text(conversation, "events", reveal=True))
    return path


def verify(path, capsys, key=None) -> tuple[int, str]:
    status = main([str(path), "--key", key or signing.verifier_key()])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_v4_the_export_carries_hashes_then_checkpoints(exported, conversation):
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    proofs = [line["chatui_proof"] for line in lines[:4]]
    assert [p["seq"] for p in proofs] == [1, 2, 3, 4]
    assert all(len(p["content_hash"]) == 64 and len(p["chain_hash"]) == 64 for p in proofs)
    assert [list(line) for line in lines[4:]] == [["chatui_checkpoint"], ["chatui_checkpoint"]]
    assert lines[-1]["chatui_checkpoint"]["size"] == 4


def test_v4_chatui_verify_passes_an_untouched_export(exported, capsys):
    status, out = verify(exported, capsys)
    assert status == 0, out
    assert "ok: 4 events, chain holds (4 of 4 content hashes recomputed" in out
    assert "signed through seq 4" in out


def test_v4_the_key_may_be_a_file_holding_the_keys_answer(exported, capsys, tmp_path, client):
    key_file = tmp_path / "keys.json"
    key_file.write_text(client.get("/api/v1/keys").content.decode())
    assert verify(exported, capsys, key=str(key_file))[0] == 0


def test_v4_a_one_byte_change_fails_at_its_seq(exported, capsys):
    text = exported.read_text()
    exported.write_text(text.replace("deployed", "deploved", 1))
    status, out = verify(exported, capsys)
    assert status == 1 and "fails at seq 3: its content does not match its content hash" in out


def test_v4_a_dropped_line_fails_at_its_seq(exported, capsys):
    lines = exported.read_text().splitlines(keepends=True)
    exported.write_text("".join(lines[:1] + lines[2:]))
    status, out = verify(exported, capsys)
    assert status == 1 and "fails at seq 2: event 2 is missing" in out


def test_v4_another_key_fails_at_the_signature(exported, capsys, tmp_path, settings):
    settings.CHATUI_SIGNING_KEY_FILE = str(tmp_path / "other_key")
    signing.signer.cache_clear()
    try:
        other = signing.verifier_key()
    finally:
        signing.signer.cache_clear()
    status, out = verify(exported, capsys, key=other)
    assert status == 1 and "its checkpoint is not signed by the key" in out


def test_v4_a_masked_export_verifies_through_its_kept_hashes(conversation, tmp_path, capsys):
    ingest(conversation, RUN)
    path = tmp_path / "masked.jsonl"
    path.write_text(export_text(conversation, "events"))
    assert SECRET not in path.read_text()
    status, out = verify(path, capsys)
    assert status == 0, out
    assert "3 of 4 content hashes recomputed" in out  # the masked tool start is taken as kept


def test_v4_an_export_with_its_proof_imports_as_before(exported, conversation, user):
    imported = Conversation.objects.create(owner=user, title="copy")
    import_transcript(exported.read_bytes(), "chatui", imported)
    original = conversation
    shown = [(m.role, m.content) for m in messages_of(imported)]
    assert shown == [(m.role, m.content) for m in messages_of(original)]


def test_v4_chatui_verify_refuses_a_file_that_is_no_export(tmp_path, capsys):
    path = tmp_path / "x.jsonl"
    path.write_text('{"type": "user.message", "content": "<script>"}\n')
    status = main([str(path), "--key", "name+00000000+AQ=="])
    assert status == 2
