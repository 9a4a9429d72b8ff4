"""docs/auditing.md#verifying-a-log: each event hashed and chained in ingest's transaction;
checkpoints signed with the key file's Ed25519 key, as C2SP signed notes."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from datetime import timedelta

import pytest
import rfc8785
from chatui_client.proof import Checkpoint as CheckpointText
from chatui_client.proof import Verifier, canonical, open_note
from django.test import Client
from hypothesis import given, settings
from hypothesis import strategies as st

from chatui.ingest import signing
from chatui.ingest.service import ingest
from chatui.models import Checkpoint, Conversation, Event
from chatui.read.serializers import event_to_dict

RUN = [
    {"type": "user.message", "content": "Is the build green?", "run_id": "r1", "event_id": "u1"},
    {
        "type": "agent.tool.started",
        "tool_call_id": "c1",
        "tool_name": "run_cmd",
        "run_id": "r1",
        "args": {"command": "make test", "ratio": 0.1},
    },
    {"type": "agent.tool.completed", "tool_call_id": "c1", "result": "ok ✓ 😀", "run_id": "r1"},
]


def expected_hashes(events: list[Event]) -> list[tuple[str, str]]:
    """The spec's arithmetic, written out with the reference implementation."""
    previous, hashes = bytes(32), []
    for event in events:
        served = json.loads(json.dumps(event_to_dict(event)))  # as the API serves it
        content = hashlib.sha256(rfc8785.dumps(served)).digest()
        previous = hashlib.sha256(previous + content).digest()
        hashes.append((content.hex(), previous.hex()))
    return hashes


def test_v1_every_event_is_hashed_and_chained_across_ingests(conversation):
    ingest(conversation, RUN[:2])
    ingest(conversation, RUN[2:])
    events = list(Event.objects.filter(conversation=conversation).order_by("seq"))
    assert [(e.content_hash, e.chain_hash) for e in events] == expected_hashes(events)
    # The first event chains onto 32 zero bytes; the conversation keeps the head.
    first = bytes.fromhex(events[0].content_hash)
    assert events[0].chain_hash == hashlib.sha256(bytes(32) + first).hexdigest()
    conversation.refresh_from_db()
    assert conversation.chain_hash == events[-1].chain_hash


def test_v1_content_hash_is_of_the_rfc8785_form_as_the_api_serves_it(conversation):
    ingest(conversation, [{"type": "user.message", "content": "<script>x</script>", "run_id": "r"}])
    event = Event.objects.get(conversation=conversation)
    served = event_to_dict(event)
    assert served["run_id"] == "r" and served["event_id"] is None
    assert event.content_hash == hashlib.sha256(rfc8785.dumps(served)).hexdigest()


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=["Cs"])),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.text(st.characters(exclude_categories=["Cs"]), max_size=4), children, max_size=4
        )
    ),
    max_leaves=12,
)


@settings(max_examples=600, deadline=None)
@given(json_values)
def test_v1_the_fast_canonical_form_is_rfc8785s(value):
    assert canonical(value) == rfc8785.dumps(value)


@pytest.mark.parametrize(
    "value",
    [
        {"\U0001f600": 1, "\uff01": 2, "a": 3},  # UTF-16 order differs from code points
        {"text": ":1.5,[2e3", "n": 7},  # looks like a fraction, in a string
        {"f": 1.0, "g": 1e21, "h": -0.0, "i": 5e-324, "j": [1e-7, 123456789012.5]},
        {"emoji": "😀 ✓ \u2028", "ctl": '\x01\x1f"\\<script>'},
    ],
)
def test_v1_canonical_form_matches_rfc8785_where_the_shortcut_would_differ(value):
    assert canonical(value) == rfc8785.dumps(value)


def test_v1_integers_beyond_rfc8785s_range_keep_their_digits():
    assert canonical({"n": 2**64, "f": 0.5}) == b'{"f":0.5,"n":18446744073709551616}'
    assert canonical({"n": 2**64}) == b'{"n":18446744073709551616}'
    assert canonical({"n": 2**64 + 1}) != canonical({"n": 2**64})


@settings(max_examples=300, deadline=None)
@given(json_values, st.text(st.characters(exclude_categories=["Cs"]), max_size=8))
def test_v1_a_payloads_own_text_spliced_in_gives_the_same_canonical_form(payload, text):
    """An OTLP span's payload comes with its canonical text (chatui.ingest.chain): the
    event's form with that text spliced in is the form of the whole, RFC 8785's —
    whatever the strings around it hold, `"payload":null` included."""
    content = {
        "seq": 7,
        "type": "otel.span",
        "event_id": text or None,
        "run_id": '"payload":null',
        "timestamp": text,
        "payload": payload,
    }
    payload_text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical(content, payload_text=payload_text) == rfc8785.dumps(content)


@pytest.mark.parametrize(
    "value",
    [
        {"a": 2.0},
        [1e16],
        {"v": "1.0", "n": -0.0},
        {"x": [1.5e-07, "e+5]"]},
        {"s": "e+", "t": 1e22},
        {"version": "2.0", "count": 10, "ratio": 0.05, "tail": "ends e-1"},
    ],
)
def test_v1_floats_the_encoder_writes_otherwise_are_caught_however_they_sit(value):
    """The scan for floats written otherwise (`proof._writes_a_differing_float`) finds
    them at the end, before "]" or "}", beside strings that look like them."""
    assert canonical(value) == rfc8785.dumps(value)


def test_v2_a_run_end_signs_a_checkpoint_the_public_key_verifies(conversation):
    ingest(conversation, RUN)  # the first ingest of a conversation signs at once
    ingest(conversation, [{"type": "agent.status", "status": "completed", "run_id": "r1"}])
    conversation.refresh_from_db()
    checkpoints = list(Checkpoint.objects.filter(conversation=conversation).order_by("size"))
    assert [c.size for c in checkpoints] == [3, 4]
    answer = Client().get("/api/v1/keys")  # no token
    assert answer.status_code == 200
    (key,) = answer.json()["keys"]
    assert key["algorithm"] == "ed25519" and key["name"] == signing.signer().name
    text = CheckpointText.parse(open_note(checkpoints[-1].note, Verifier.parse(key["public_key"])))
    assert (text.conversation_id, text.size, text.chain_hash) == (
        str(conversation.pk),
        4,
        conversation.chain_hash,
    )
    assert text.origin == key["name"]
    # C2SP signed-note: the text, a blank line, "— name base64(key hash ‖ signature)".
    text_part, signature = checkpoints[-1].note.split("\n\n")
    assert signature.startswith(f"\u2014 {key['name']} ") and text_part + "\n" == text.text()


def test_v2_checkpoints_come_at_most_once_a_minute_while_events_arrive(conversation):
    ingest(conversation, RUN[:1])
    for n in range(5):
        ingest(
            conversation,
            [{"type": "agent.status", "status": "thinking", "run_id": "r1", "message": f"{n}"}],
        )
    assert Checkpoint.objects.filter(conversation=conversation).count() == 1
    Conversation.objects.filter(pk=conversation.pk).update(
        signed_at=conversation.signed_at - timedelta(seconds=61)
    )
    ingest(conversation, [{"type": "agent.status", "status": "thinking", "run_id": "r1"}])
    assert list(
        Checkpoint.objects.filter(conversation=conversation).values_list("size", flat=True)
    ) == [1, 7]


def test_v2_the_key_file_is_made_once_mode_0600_and_never_in_the_database(tmp_path, settings):
    settings.CHATUI_SIGNING_KEY_FILE = str(tmp_path / "keys" / "signing_key")
    signing.signer.cache_clear()
    try:
        made = signing.signer()
        path = tmp_path / "keys" / "signing_key"
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert path.read_text().startswith(f"PRIVATE+KEY+{made.name}+")
        signing.signer.cache_clear()
        assert signing.signer().verifier_key == made.verifier_key  # read back, not made again
    finally:
        signing.signer.cache_clear()


def test_v2_keys_refuses_other_methods():
    answer = Client().post("/api/v1/keys")
    assert answer.status_code == 405 and "GET" in answer.json()["error"]


pytestmark = pytest.mark.django_db
