"""A separate OS process that ingests events into one conversation (REL3 test)."""

from __future__ import annotations

import os
import sys

import django


def main(conversation_id: str, worker: str, count: int) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from chatui.ingest.service import ingest
    from chatui.models import Conversation

    conversation = Conversation.objects.get(pk=conversation_id)
    for index in range(count):
        event = {
            "type": "user.message",
            "content": f"{worker}-{index}",
            "event_id": f"{worker}-{index}",
        }
        if index % 5 == 0:  # mix batches in with single events
            ingest(conversation, [event, {**event, "event_id": f"{worker}-{index}b"}])
        else:
            ingest(conversation, event)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
