"""The app's settings and their defaults.

A host project sets only the `CHATUI_*` settings it wants to change: when the app
loads (`ChatuiConfig.ready`) every one it reads as `settings.CHATUI_…` and the
project left out gets its default here. The chatui project (config/settings.py)
reads each from the environment, with the same defaults. The agents' settings
(CHATUI_AGENT, CHATUI_WEBHOOK_*, OPENAI_*, …) have their defaults where they are
read (`chatui.agents.base.setting`).
"""

from __future__ import annotations

from typing import Any

MAX_EVENT_BYTES = 1024 * 1024
MAX_FORM_BYTES = 64 * 1024

DEFAULTS: dict[str, Any] = {
    # Ingest limits (SEC6).
    "CHATUI_MAX_EVENT_BYTES": MAX_EVENT_BYTES,
    "CHATUI_MAX_REQUEST_BYTES": 8 * 1024 * 1024,
    "CHATUI_MAX_JSON_DEPTH": 64,
    # docs/rendering.md#g21: the most bytes one MCP binary part is stored with.
    "CHATUI_MAX_ATTACHMENT_BYTES": 5 * 1024 * 1024,
    # Edge limits (chatui.server.edge). Form encoding at most triples a message (%XX per
    # non-ASCII byte, \n sent as %0D%0A), so the composer takes every message the
    # event limit takes.
    "CHATUI_MAX_FORM_BYTES": MAX_FORM_BYTES,
    "CHATUI_MAX_COMPOSER_BYTES": 3 * MAX_EVENT_BYTES + MAX_FORM_BYTES,
    "CHATUI_REQUEST_TIMEOUT": 30.0,
    # Bearer tokens found valid are trusted this long without a lookup (chatui.web.tokens).
    "CHATUI_TOKEN_CACHE_SECONDS": 5.0,
    # Sockets (chatui.live.consumers).
    "CHATUI_WS_RECHECK_SECONDS": 60.0,
    "CHATUI_MAX_SOCKETS_PER_USER": 50,
    # Threads that serve the sockets' handshakes' reads (chatui.live.handshakes).
    "CHATUI_HANDSHAKE_THREADS": 4,
    # The ingest channel (chatui.web.ingest_socket): bytes one socket holds unwritten, and
    # sockets one API token holds in a process.
    "CHATUI_INGEST_MAX_PENDING_BYTES": 8 * 1024 * 1024,
    "CHATUI_MAX_INGEST_SOCKETS_PER_TOKEN": 20,
    # Approval long polls one user may have waiting in a process (chatui.web.approval_views).
    "CHATUI_MAX_LONG_POLLS_PER_USER": 50,
    # Agents: where a webhook agent is told to post back, and the demo's pace.
    "CHATUI_PUBLIC_URL": "http://127.0.0.1:8000",
    "CHATUI_DEMO_DELAY": 0.35,
    # Run workers (docs/SCALING.md): off by default, runs then stay in the web process.
    "CHATUI_RUN_WORKERS": False,
    "CHATUI_RUN_HEARTBEAT_SECONDS": 5.0,
    "CHATUI_RUN_LOST_SECONDS": 30.0,
    "CHATUI_RUN_STOP_WAIT_SECONDS": 10.0,
    # Time travel (chatui.read.replay): moments projected at once per process, how long
    # another waits for one of them before a 503, and the memory kept for moments.
    "CHATUI_MOMENT_WORKERS": 1,
    "CHATUI_MOMENT_WAIT_SECONDS": 2.0,
    "CHATUI_MOMENT_CACHE_MB": 128,
    # docs/sharing.md: notes shown read-only on the owner's page; a share link's default life.
    "CHATUI_NOTES_VISIBLE_TO_OWNER": True,
    "CHATUI_SHARE_DEFAULT_DAYS": 7,
    # Transcript imports (docs/events.md#importers).
    "CHATUI_IMPORT_MAX_BYTES": 32 * 1024 * 1024,
    "CHATUI_IMPORT_MAX_EVENTS": 100_000,
    # Characters of full result text, Copy-args text and Details JSON one tool entry
    # carries in a page, together; the rest is fetched on demand (chatui.read.presenters
    # `_bounded`), so a page of a few hundred entries stays a few MB.
    "CHATUI_TOOL_TEXT_INLINE_CHARS": 16 * 1024,
    # The checkpoints' signing key (chatui.ingest.signing), made on first use
    # (docs/auditing.md#the-signing-key).
    "CHATUI_SIGNING_KEY_FILE": "var/signing_key",
    # S4 (chatui.read.cost): each model's US dollars per million tokens in and out,
    # {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}; none: no cost is shown.
    "CHATUI_PRICES": {},
}


def apply_defaults(settings: Any) -> None:
    """Give every app setting the project did not define its default."""
    for name, value in DEFAULTS.items():
        if not hasattr(settings, name):
            setattr(settings, name, value)
