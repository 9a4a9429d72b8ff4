from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from chatui.models import Conversation

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo-password"


class Command(BaseCommand):
    help = "Create the demo user (and a first conversation) if missing, and print the login."

    def handle(self, *args, **options):
        users = get_user_model()
        user = users.objects.filter(username=DEMO_USERNAME).first()
        if user is None:
            user = users.objects.create_user(DEMO_USERNAME, password=DEMO_PASSWORD)
        if not Conversation.objects.filter(owner=user).exists():
            Conversation.objects.create(owner=user, title="Welcome to chatui")
        self.stdout.write(
            "\n  chatui is starting on http://127.0.0.1:8000/\n"
            f"  log in as  {DEMO_USERNAME} / {DEMO_PASSWORD}\n"
        )
