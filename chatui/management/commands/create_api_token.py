from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from chatui.models import ApiToken


class Command(BaseCommand):
    help = "Create an API bearer token for USERNAME and print it (the last line of output)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="a label to recognise the token by")

    def handle(self, *args, username: str, name: str, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        token, raw = ApiToken.issue(user, name=name)
        self.stderr.write(f"Token {token.prefix}… for {username}; it is shown only once:")
        self.stdout.write(raw)
