"""docs/rendering.md#rich-output: every surface shows the same rich partials — the first
load, the transcript fragment, "load earlier", the admin's audit page, the socket replay
(a live frame's partials) and time travel (`?at=`) — and the admin's invisible-character
pass reaches rich text too."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from chatui.read import presenters
from tests.support.render import render_everything
from tests.support.rich import rich_events

HOOKS = (
    "data-terminal",
    "data-terminal-error",
    'data-diff-line="add"',
    "data-diff-stat>",
    'data-code data-language="python"',
    "data-records",
    "data-keyvalue",
    "data-json-text-block",
)


@pytest.fixture
def root_client() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="root-pass-1"))
    return client


def test_rich_partials_on_every_surface(conversation, feed, root_client):
    feed(*rich_events())
    shown = render_everything(root_client, conversation)
    for surface in ("page", "transcript", "earlier", "admin", "replay 0"):
        for hook in HOOKS:
            assert hook in shown[surface], (surface, hook)
        assert "<script>alert" not in shown[surface], surface
        assert "\x1b" not in shown[surface], surface
    conversation.refresh_from_db()
    at = root_client.get(f"/c/{conversation.pk}/?at={conversation.last_seq}").content.decode()
    for hook in HOOKS:
        assert hook in at, ("?at=", hook)


def test_rich_views_are_memoised_with_their_entry(conversation, feed):
    presenters._FINISHED.clear()
    feed(*rich_events())
    messages = list(conversation.messages.order_by("position"))
    first = presenters.present_transcript(messages)
    again = presenters.present_transcript(list(conversation.messages.order_by("position")))
    entries = [e for item in first if hasattr(item, "entries") for e in item.entries]
    kept = [e for item in again if hasattr(item, "entries") for e in item.entries]
    assert sum(entry.rich is not None for entry in entries) >= 7
    small = [
        (a, b)
        for a, b in zip(entries, kept, strict=True)
        if presenters._text_size(a) <= presenters.MEMO_ENTRY_CHARS  # the memo's own bound
    ]
    assert sum(a.rich is not None for a, _ in small) >= 6
    assert all(a is b for a, b in small)  # presented once


def test_admin_marks_invisible_characters_in_rich_text(conversation, feed, root_client):
    feed(
        {"type": "agent.tool.started", "tool_call_id": "z", "tool_name": "sh", "args": {}},
        {
            "type": "agent.tool.completed",
            "tool_call_id": "z",
            "result": "\x1b[31mev\u202eil\x1b[0m",
        },
    )
    shown = render_everything(root_client, conversation)
    assert "data-terminal" in shown["admin"]
    assert "U+202E" in shown["admin"] or "202e" in shown["admin"].lower()
