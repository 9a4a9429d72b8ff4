from django.core.management.base import BaseCommand, CommandError

from chatui.ingest.service import reproject
from chatui.models import Conversation


class Command(BaseCommand):
    help = "Rebuild conversations' messages from their event logs."

    def add_arguments(self, parser):
        parser.add_argument("conversation_ids", nargs="*", help="default: every conversation")

    def handle(self, *args, conversation_ids: list[str], **options):
        conversations = Conversation.objects.all()
        if conversation_ids:
            conversations = conversations.filter(pk__in=conversation_ids)
            if conversations.count() != len(set(conversation_ids)):
                raise CommandError("some conversation ids were not found")
        for conversation in conversations.iterator():
            reproject(conversation)
            self.stdout.write(f"reprojected {conversation.pk} ({conversation.last_seq} events)")
