import sys
from pathlib import Path

from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.urls import NoReverseMatch, reverse

from chatui import agents
from chatui.ingest import conversations as services
from chatui.ingest.service import ingest
from chatui.models import Conversation

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo-password"
FIRST_QUESTION = "What can you do? List the files in notes, then read notes/todo.txt."


def server_url(host: str, port: int) -> str:
    """The URL to open for a server bound to `host`:`port` (IPv6 hosts in brackets)."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}/"


def python_command() -> str:
    """This Python as the reader would type it: `.venv/bin/python` from the project."""
    path = Path(sys.executable)
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def admin_path() -> str:
    """Where the project mounts Django's admin, or "" without one."""
    try:
        return reverse("admin:index")
    except NoReverseMatch:
        return ""


class Command(BaseCommand):
    help = "Create the demo user and a first conversation with the demo agent, print the login."

    def add_arguments(self, parser) -> None:
        # Only for the message: `make run` passes the address daphne is about to serve.
        parser.add_argument("--host", default="127.0.0.1", help="the host the server binds")
        parser.add_argument("--port", type=int, default=8000, help="the port the server binds")

    def handle(self, *args, **options):
        users = get_user_model()
        user = users.objects.filter(username=DEMO_USERNAME).first()
        if user is None:
            user = users.objects.create_user(DEMO_USERNAME, password=DEMO_PASSWORD)
        if not Conversation.objects.filter(owner=user).exists():
            self._first_conversation(user)
        url = server_url(options["host"], options["port"])
        self.stdout.write(
            f"\n  chatui is starting on {url}\n  log in as  {DEMO_USERNAME} / {DEMO_PASSWORD}\n"
        )
        admin = admin_path()
        if admin:
            # The demo user is no staff member (it shows what an owner sees); the admin
            # needs one, with a password of the reader's choosing.
            self.stdout.write(
                f"  admin  {url.rstrip('/')}{admin} needs a staff user: "
                f"{python_command()} manage.py createsuperuser\n"
            )

    def _first_conversation(self, user) -> None:
        """A real run of the demo agent, so the first page already shows tool cards."""
        conversation = services.create_conversation(owner=user)
        ingest(conversation, {"type": "user.message", "content": FIRST_QUESTION})
        settings.CHATUI_DEMO_DELAY = 0  # no need to pace a run nobody is watching
        agents.start_run(conversation, FIRST_QUESTION, agent=agents.get_agent("demo"))
        async_to_sync(agents.wait_for_run)(conversation.pk, timeout=30)
