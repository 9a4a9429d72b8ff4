"""manage.py erase_content ID [--seq N …] --reason TEXT --by USERNAME: events' content
erased, the log's proof kept (docs/auditing.md#erasing-content).

The events at the seqs given (every event, without --seq) get tombstones in place of their
payloads; an `audit.erasure` event records who, why and which seqs with their content
hashes; the transcript, its search index and every export then show "content erased".
USERNAME must hold chatui.erase_content.
"""

from __future__ import annotations

import uuid

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from chatui.ingest.erasure import erase_content
from chatui.ingest.values import EventError
from chatui.models import Conversation


class Command(BaseCommand):
    help = "Erase events' content, keeping the log verifiable (recorded as an audit.erasure event)."

    def add_arguments(self, parser):
        parser.add_argument("conversation_id", metavar="ID")
        parser.add_argument(
            "--seq", type=int, action="append", dest="seqs", help="an event's seq (repeatable)"
        )
        parser.add_argument("--reason", required=True, help="why (kept in the log)")
        parser.add_argument(
            "--by", required=True, help="the user erasing (needs chatui.erase_content)"
        )

    def handle(self, *args, conversation_id: str, seqs, reason: str, by: str, **options):
        try:
            conversation = Conversation.objects.get(pk=uuid.UUID(conversation_id))
        except (ValueError, Conversation.DoesNotExist):
            raise CommandError(f"no conversation {conversation_id[:80]!r}") from None
        user = get_user_model().objects.filter(username=by).first()
        if user is None:
            raise CommandError(f"no user {by[:80]!r}")
        try:
            erasure = erase_content(conversation, user, seqs, reason)
        except EventError as error:
            raise CommandError(error.message) from None
        erased = ", ".join(map(str, erasure.erased))
        self.stdout.write(
            f"{conversation.pk}: erased seq {erased}; recorded as seq {erasure.seq} (audit.erasure)"
        )
