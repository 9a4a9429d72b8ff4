"""chatui.fields.OrderedJSONField: `json` on PostgreSQL (key order kept), yet every
JSONField lookup the code uses answers as on jsonb — and as on SQLite."""

from __future__ import annotations

import pytest
from django.utils import timezone

from chatui.models import Conversation, Message

pytestmark = pytest.mark.django_db


@pytest.fixture
def messages(user):
    conversation = Conversation.objects.create(owner=user)
    shapes = [{"reasoning": "why", "b": 1, "a": 2}, {"reasoning": None}, {"other": 1}, {}]
    for position, metadata in enumerate(shapes):
        Message.objects.create(
            conversation=conversation,
            message_id=f"m{position}",
            role="assistant",
            position=position,
            metadata=metadata,
            timestamp=timezone.now(),
        )
    return Message.objects.filter(conversation=conversation)


def ids(rows) -> list[str]:
    return sorted(rows.values_list("message_id", flat=True))


def test_json_key_lookups_answer_on_both_databases(messages):
    assert ids(messages.filter(metadata__has_key="reasoning")) == ["m0", "m1"]
    assert ids(messages.exclude(metadata__has_key="reasoning")) == ["m2", "m3"]
    assert ids(messages.filter(metadata__has_keys=["reasoning", "a"])) == ["m0"]
    assert ids(messages.filter(metadata__has_any_keys=["a", "other"])) == ["m0", "m2"]
    assert ids(messages.filter(metadata__reasoning="why")) == ["m0"]

    assert list(messages.get(message_id="m0").metadata) == ["reasoning", "b", "a"]
