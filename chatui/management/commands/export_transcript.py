"""manage.py export_transcript CONVERSATION_ID --format messages|events|otlp [--output FILE]
[--reveal-secrets]

Writes a conversation's export (see `chatui.read.exporters`) to standard output, or
to FILE. Reads only. Secrets in tool text are masked (T3) unless
`--reveal-secrets`: the command has no user whose `chatui.view_secrets` could
decide, so whoever can run manage.py (and read the database anyway) chooses.
"""

from __future__ import annotations

import uuid

from django.core.management.base import BaseCommand, CommandError

from chatui.models import Conversation
from chatui.read.exporters import EXPORT_FORMATS, iter_export


class Command(BaseCommand):
    help = "Export a conversation as messages JSON, raw events JSONL, or OTLP/JSON spans."

    def add_arguments(self, parser):
        parser.add_argument("conversation_id")
        parser.add_argument("--format", required=True, choices=tuple(EXPORT_FORMATS))
        parser.add_argument("--output", help="write to this file (default: standard output)")
        parser.add_argument(
            "--reveal-secrets",
            action="store_true",
            help="export secrets in tool text unmasked (default: masked, as on the page)",
        )

    def handle(
        self, *args, conversation_id: str, format: str, output, reveal_secrets: bool, **options
    ):
        try:
            pk = uuid.UUID(conversation_id)
        except ValueError:
            raise CommandError(f"{conversation_id!r} is not a conversation id") from None
        conversation = Conversation.objects.select_related("owner").filter(pk=pk).first()
        if conversation is None:
            raise CommandError(f"no conversation {conversation_id}")
        chunks = iter_export(conversation, format, reveal=reveal_secrets)
        if output is None:
            for chunk in chunks:
                self.stdout.write(chunk, ending="")
            return
        try:
            with open(output, "w", encoding="utf-8", newline="\n") as handle:
                for chunk in chunks:
                    handle.write(chunk)
        except OSError as error:
            raise CommandError(f"cannot write {output}: {error.strerror}") from error
        self.stderr.write(f"wrote the {format} export of {conversation_id} to {output}")
