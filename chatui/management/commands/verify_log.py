"""manage.py verify_log [ID …|--all]: each conversation's log checked
(docs/auditing.md#checking-a-log).

Recomputes every event's content and chain hash and checks every checkpoint's signature
with this deployment's key (`CHATUI_SIGNING_KEY_FILE`): one line per conversation, "ok
through seq N" or the first bad seq and why; exit status 1 when any log fails.
"""

from __future__ import annotations

import uuid

from django.core.management.base import BaseCommand, CommandError

from chatui.models import Conversation
from chatui.read.verify import verify


class Command(BaseCommand):
    help = "Check conversations' event logs against their hash chain and signed checkpoints."

    def add_arguments(self, parser):
        parser.add_argument("conversation_ids", nargs="*", metavar="ID")
        parser.add_argument("--all", action="store_true", help="every conversation")

    def handle(self, *args, conversation_ids: list[str], all: bool, **options):
        if bool(conversation_ids) == all:
            raise CommandError("name conversation ids, or --all (not both)")
        conversations = Conversation.objects.order_by("created_at")
        if conversation_ids:
            try:
                wanted = {uuid.UUID(text) for text in conversation_ids}
            except ValueError:
                raise CommandError("a conversation id is not a UUID") from None
            conversations = conversations.filter(pk__in=wanted)
            missing = wanted - set(conversations.values_list("pk", flat=True))
            if missing:
                raise CommandError(f"no conversation {', '.join(sorted(map(str, missing)))}")
        failed = 0
        for conversation in conversations.iterator():
            verdict = verify(conversation)
            failed += not verdict.ok
            line = f"{conversation.pk}: {verdict}"
            self.stdout.write(self.style.SUCCESS(line) if verdict.ok else self.style.ERROR(line))
        if failed:
            raise CommandError(f"{failed} log(s) failed verification", returncode=1)
