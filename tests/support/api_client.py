"""A test client that posts to the API as a runtime does, with a bearer token."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

from chatui.models import Conversation


class ApiClient:
    """Django's test client with a bearer token and JSON helpers."""

    def __init__(self, raw_token: str):
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {raw_token}"}

    def get(self, path: str, **params):
        return self.client.get(path, params, headers=self.headers)

    def post(self, path: str, body: Any = None, *, raw: bytes | None = None):
        data = raw if raw is not None else json.dumps(body)
        return self.client.post(
            path, data=data, content_type="application/json", headers=self.headers
        )

    def post_events(self, conversation: Conversation, body: Any = None, *, raw=None):
        return self.post(f"/api/v1/conversations/{conversation.pk}/events", body, raw=raw)
