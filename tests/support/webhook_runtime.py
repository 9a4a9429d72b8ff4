"""A real HTTP runtime behind the webhook agent, and running an agent to its end."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from django.db import connection
from django.test import Client

from chatui.agents import start_run, wait_for_run
from chatui.agents.webhook import WebhookAgent
from chatui.models import ApiToken


class Runtime(ThreadingHTTPServer):
    """Answers each delivery with the next of `statuses` (then 202); after a 2xx,
    waits for `go` and posts `events(run_id)` to the delivery's events_url."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, token: str, statuses=(), events=None, refusal: str | None = None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.token = token
        self.statuses = list(statuses)
        self.events = events
        #: The body of non-2xx answers (default: a small JSON object).
        self.refusal = refusal
        self.deliveries: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []
        self.go = threading.Event()
        self.posted = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"

    def post_back(self, delivery: dict[str, Any]) -> None:
        self.go.wait(10)
        try:
            response = Client().post(
                delivery["events_url"],
                data=json.dumps(self.events(delivery["run_id"])),
                content_type="application/json",
                headers={"Authorization": f"Bearer {self.token}"},
            )
            self.answers.append({"status": response.status_code, "body": response.json()})
        finally:
            connection.close()
            self.posted.set()


class _Handler(BaseHTTPRequestHandler):
    server: Runtime

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.deliveries.append({"headers": dict(self.headers), "body": body})
        status = self.server.statuses.pop(0) if self.server.statuses else 202
        answer = json.dumps({"accepted": status < 300}).encode()
        if status >= 300 and self.server.refusal is not None:
            answer = self.server.refusal.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)
        if status < 300 and self.server.events is not None:
            threading.Thread(target=self.server.post_back, args=(body,), daemon=True).start()

    def log_message(self, *args):
        pass


@contextmanager
def runtime(user, **options) -> Iterator[Runtime]:
    _, raw = ApiToken.issue(user, name="runtime")
    server = Runtime(raw, **options)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    try:
        yield server
    finally:
        server.go.set()
        server.shutdown()
        server.server_close()


def agent_for(url: str, **options) -> WebhookAgent:
    defaults = {
        "token": "hook-secret",
        "public_url": "https://chatui.example.com",
        "attempts": 3,
        "backoff": 0.01,
        "run_timeout": 10,
        "poll_interval": 0.2,
    }
    return WebhookAgent(url=url, **{**defaults, **options})


def run_and_wait(conversation, agent, text="find x", hold=None) -> str:
    async def main() -> str:
        run_id = start_run(conversation, text, agent=agent)
        if hold is not None:
            await hold(run_id)
        assert await wait_for_run(conversation.pk, timeout=20)
        return run_id

    return asyncio.run(main())
