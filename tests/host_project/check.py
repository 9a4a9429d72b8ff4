"""Run in a subprocess by tests/test_host_project.py: check, migrate, then a page and
an API call through the app mounted at /agents/. Prints one JSON line of what it saw."""

import json

import django
from django.core.management import call_command

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402

from chatui.models import ApiToken, Conversation  # noqa: E402

call_command("check", fail_level="WARNING")
call_command("migrate", verbosity=0)
user = get_user_model().objects.create_user("host", password="pw")
_, key = ApiToken.issue(user)
api = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
created = api.post(
    "/agents/api/v1/conversations", {"title": "Mounted"}, content_type="application/json"
)
conversation = Conversation.objects.get()
posted = api.post(
    f"/agents/api/v1/conversations/{conversation.pk}/events",
    {"events": [{"type": "user.message", "content": "hello from the host"}]},
    content_type="application/json",
)
browser = Client()
anonymous = browser.get("/agents/")
browser.force_login(user)
page = browser.get(f"/agents/c/{conversation.pk}/")
listing = browser.get("/agents/")
print(
    json.dumps(
        {
            "created": created.status_code,
            "posted": posted.status_code,
            "anonymous": [anonymous.status_code, anonymous.headers.get("Location")],
            "page": page.status_code,
            "page_has_message": "hello from the host" in page.content.decode(),
            "listing": listing.status_code,
            "listing_links_under_prefix": f'href="/agents/c/{conversation.pk}/"'
            in listing.content.decode(),
            "conversation_url": reverse("chatui:conversation", args=[conversation.pk]),
            "default_max_event_bytes": settings.CHATUI_MAX_EVENT_BYTES,
        }
    )
)
