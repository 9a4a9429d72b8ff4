"""manage.py import_transcript FILE --format F --owner USERNAME [--title T] [--conversation UUID]

Creates a conversation (or appends to `--conversation`) from a transcript file
and prints the conversation's id as the last line of its output. FILE `-`
reads standard input. See `chatui.importers` for the formats.
"""

from __future__ import annotations

import sys
import uuid

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from chatui.importers import IMPORT_FORMATS, TranscriptError, import_draft, parse_transcript
from chatui.ingest.conversations import create_conversation
from chatui.ingest.dialects.files import max_import_bytes
from chatui.models import Conversation


class Command(BaseCommand):
    help = "Import a transcript file as a conversation; prints the conversation id last."

    def add_arguments(self, parser):
        parser.add_argument("file", help="the transcript file, or - for standard input")
        parser.add_argument("--format", required=True, choices=IMPORT_FORMATS)
        parser.add_argument("--owner", help="username of the new conversation's owner")
        parser.add_argument(
            "--title",
            default="",
            help="a new conversation's title (default: its first user message)",
        )
        parser.add_argument("--conversation", help="append to this conversation instead")

    def handle(self, *args, file: str, format: str, owner, title: str, conversation, **options):
        raw = self._read(file)
        try:
            # Parsed before the transaction: a bad file fails before anything is
            # created, and a big one never holds the database's write lock.
            draft = parse_transcript(raw, format)
            with transaction.atomic():
                target = self._conversation(conversation, owner, title)
                result = import_draft(draft, format, target)
        except TranscriptError as error:
            raise CommandError(f"{file}: {error}") from error
        self.stderr.write(result.summary())
        self.stdout.write(str(result.conversation.pk))

    def _read(self, file: str) -> bytes:
        """The file's bytes, one past the size limit at most (parse_transcript says
        when a file is too large)."""
        limit = max_import_bytes() + 1
        if file == "-":
            return sys.stdin.buffer.read(limit)
        try:
            with open(file, "rb") as handle:
                return handle.read(limit)
        except OSError as error:
            raise CommandError(f"cannot read {file}: {error.strerror}") from error

    def _conversation(self, conversation_id, owner, title: str) -> Conversation:
        users = get_user_model().objects
        user = None
        if owner:
            user = users.filter(username=owner).first()
            if user is None:
                raise CommandError(f"no user named {owner!r}")
        if conversation_id:
            try:
                pk = uuid.UUID(conversation_id)
            except ValueError:
                raise CommandError(f"{conversation_id!r} is not a conversation id") from None
            found = Conversation.objects.filter(pk=pk).first()
            if found is None:
                raise CommandError(f"no conversation {conversation_id}")
            if user is not None and found.owner_id != user.pk:
                raise CommandError(f"conversation {conversation_id} is not owned by {owner!r}")
            return found
        if user is None:
            raise CommandError("--owner is required to create a conversation")
        return create_conversation(owner=user, title=title)
