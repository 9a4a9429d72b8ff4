"""Where a failed run's error ends up, and the check that no secret got there."""

from __future__ import annotations

import json
from collections.abc import Iterable

from chatui.models import Conversation, Event, Message, Run
from chatui.read.exporters import export_text


def assert_failure_leaks_nothing(
    conversation: Conversation, run: Run, secrets: Iterable[str], invisible: str
) -> None:
    """The run's error, its banner, the event log and both exports hold none of
    `secrets`; the error is one short line without the `invisible` character."""
    banner = Message.objects.get(conversation=conversation, status_type="error")
    stored = [
        run.error_message,
        banner.content,
        *(json.dumps(e.payload) for e in Event.objects.filter(conversation=conversation)),
        export_text(conversation, "events"),
        export_text(conversation, "messages"),
    ]
    for text in stored:
        for secret in secrets:
            assert secret not in text
    assert "\n" not in run.error_message and invisible not in run.error_message
    assert len(run.error_message) < 300
