"""What the browser tests share: events to post, waiting for the socket, and a `Watch`
on what a page did that it never should."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlparse

from playwright.sync_api import Page


def started(call_id: str, name: str = "run_cmd", **extra) -> dict:
    return {
        "type": "agent.tool.started",
        "tool_call_id": call_id,
        "tool_name": name,
        "run_id": "live",
        **extra,
    }


def completed(call_id: str, **extra) -> dict:
    return {"type": "agent.tool.completed", "tool_call_id": call_id, "run_id": "live", **extra}


def wait_connected(page) -> None:
    """The ws extension has opened its socket (a frame can now arrive)."""
    page.wait_for_function("() => window.__chatuiSocketOpen === true")


def post(chatui_server, conversation_id, *events) -> None:
    chatui_server.post_events(conversation_id, list(events))


def normalised(page) -> str:
    """The transcript's HTML, without what legitimately differs between renders:
    the open/closed state a reader toggled, client-added copy buttons, timers."""
    html = page.inner_html("#transcript")
    html = re.sub(r'<button type="button" class="copy-button"[^>]*>Copy</button>', "", html)
    html = re.sub(r' data-copy-ready=""', "", html)
    html = re.sub(r"(<time[^>]*>)[^<]*(</time>)", r"\1\2", html)
    html = re.sub(r"\s+", " ", html)
    return html.strip()


@dataclass
class Watch:
    """What a page did that it never should: dialogs, errors, foreign requests."""

    origin: str
    dialogs: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    foreign_requests: list[str] = field(default_factory=list)

    def attach(self, page: Page) -> None:
        page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        page.on("pageerror", lambda error: self.page_errors.append(str(error)))
        page.on("console", lambda msg: msg.type == "error" and self.console_errors.append(msg.text))
        page.on("request", self._request)

    def _request(self, request) -> None:
        url = urlparse(request.url)
        if url.scheme in ("http", "https", "ws", "wss") and (
            f"{url.hostname}:{url.port}" != self.origin
        ):
            self.foreign_requests.append(request.url)


AUDITOR = "auditor-e2e"
AUDITOR_PASSWORD = "auditor-e2e-password-1"
