"""docs/events.md#sessions: a session's raw records posted to `POST …/events` as
`{"dialect", "records", "state"}`, translated on the server by the importer's own
translator; bad bodies get a 4xx naming the problem and change nothing."""

from __future__ import annotations

import json

import pytest

from chatui.importers import parse_transcript
from chatui.models import Event
from tests.support.fixtures import FIXTURES

CLAUDE = FIXTURES / "claude_code" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
CODEX = (
    FIXTURES / "codex" / "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
)


def records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def post_in_batches(api, conversation, dialect: str, items: list[dict], size: int) -> dict:
    state = None
    answer: dict = {}
    for start in range(0, len(items), size):
        body = {"dialect": dialect, "records": items[start : start + size]}
        if state is not None:
            body["state"] = state
        response = api.post_events(conversation, body)
        assert response.status_code == 200, response.content
        answer = response.json()
        state = answer["state"]
    ended = api.post_events(
        conversation, {"dialect": dialect, "records": [], "state": state, "end": True}
    )
    assert ended.status_code == 200, ended.content
    return answer


@pytest.mark.parametrize(("path", "dialect"), [(CLAUDE, "claude-code"), (CODEX, "codex")])
def test_records_posted_in_batches_make_the_events_an_import_makes(
    api, conversation, path, dialect
):
    """One translator for live and import: posting the file 7 records at a time, the state
    handed back and forth, stores exactly the events importing it whole would."""
    post_in_batches(api, conversation, dialect, records(path), 7)
    stored = [
        {"type": e.type, "event_id": e.event_id, **e.payload}
        for e in Event.objects.filter(conversation=conversation).order_by("seq")
    ]
    draft = parse_transcript(path.read_bytes(), dialect)
    expected = [
        {k: v for k, v in event.items() if k not in ("run_id", "timestamp")}
        for event in draft.events
    ]
    assert stored == expected


def test_reposting_records_is_all_duplicates(api, conversation):
    items = records(CLAUDE)[:30]
    first = api.post_events(conversation, {"dialect": "claude-code", "records": items}).json()
    again = api.post_events(conversation, {"dialect": "claude-code", "records": items}).json()
    assert first["accepted"] > 0
    assert (again["accepted"], again["duplicates"]) == (0, first["accepted"])
    assert again["records"] == 30


def test_a_file_imported_after_it_was_followed_adds_nothing(api, conversation):
    from chatui.importers import import_transcript

    post_in_batches(api, conversation, "codex", records(CODEX), 50)
    result = import_transcript(CODEX.read_bytes(), "codex", conversation)
    assert result.accepted == 0
    assert result.duplicates == result.events


@pytest.mark.parametrize(
    ("body", "status", "field", "phrase"),
    [
        ({"dialect": "cursor", "records": []}, 400, "dialect", "unknown dialect"),
        ({"dialect": "codex", "records": {"a": 1}}, 400, "records", "array of records"),
        ({"dialect": "codex", "records": [1]}, 400, "records", "JSON object"),
        ({"dialect": "codex", "records": [], "state": []}, 400, "state", "last answer"),
        ({"dialect": "codex", "records": [], "extra": 1}, 400, "extra", "unknown field"),
        ({"dialect": "codex", "records": [{}] * 1001}, 413, "records", "at most 1000"),
    ],
)
def test_bad_session_bodies_are_refused_naming_the_problem(
    api, conversation, body, status, field, phrase
):
    response = api.post_events(conversation, body)
    assert response.status_code == status
    answer = response.json()
    assert answer["field"] == field
    assert phrase in answer["error"]
    assert not Event.objects.filter(conversation=conversation).exists()


def test_records_for_another_users_conversation_are_404(api, other_user):
    from chatui.models import Conversation

    theirs = Conversation.objects.create(owner=other_user, title="theirs")
    response = api.post_events(theirs, {"dialect": "codex", "records": records(CODEX)[:3]})
    assert response.status_code == 404
    empty = api.post_events(theirs, {"dialect": "codex", "records": [], "end": True})
    assert empty.status_code == 404
    assert not Event.objects.filter(conversation=theirs).exists()


def test_a_tampered_state_is_only_input(api, conversation):
    """The state comes back from the client: wrong shapes are dropped, never trusted."""
    state = {"run": ["not", "an", "id"], "calls": {"x": 5}, "chains": "?", "tasks": None}
    response = api.post_events(
        conversation,
        {"dialect": "claude-code", "records": records(CLAUDE)[:4], "state": state},
    )
    assert response.status_code == 200
    assert response.json()["state"]["calls"] == {"toolu_01NG5xcSvVWynFdbWxaW2SPc": "TodoWrite"}
