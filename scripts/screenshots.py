"""Screenshots of the showcase conversation for docs/, made with Playwright + Chromium.

    .venv/bin/python scripts/screenshots.py

Starts its own daphne on a temporary database, posts the showcase events through
the API, and writes docs/screenshot-{desktop,phone}.png and their dark-scheme twins
docs/screenshot-{desktop,phone}-dark.png; and the showcase's rich output
(docs/rendering.md#rich-output: chatui/agents/showcase_rich.py) as
docs/screenshot-rich.png and docs/screenshot-rich-dark.png.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from itertools import product
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import django  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser.conftest import CHROMIUM_ARGS  # noqa: E402
from tests.support.live import PASSWORD, USERNAME, LiveServer  # noqa: E402
from tests.support.showcase import showcase_events  # noqa: E402

SIZES = {"desktop": (1280, 900), "phone": (390, 844)}
SCHEMES = {"light": "", "dark": "-dark"}  # prefers-color-scheme → file name suffix


def main() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        server = LiveServer(Path(data_dir))
        server.prepare()
        server.start()
        try:
            conversation_id = server.new_conversation()
            server.post_events(conversation_id, recent(showcase_events()))
            shoot(server, conversation_id)
            rich_id = server.new_conversation("Rich output")
            server.post_events(rich_id, rich_events())
            shoot(server, rich_id, sizes={"rich": SIZES["desktop"]})
        finally:
            server.stop()


def recent(events: list[dict]) -> list[dict]:
    """The showcase with its clock moved to just now, so timers read like a live run."""
    stamps = [datetime.fromisoformat(event["timestamp"]) for event in events]
    shift = datetime.now(UTC) - timedelta(seconds=20) - max(stamps)
    return [
        {**event, "timestamp": (stamp + shift).isoformat()}
        for event, stamp in zip(events, stamps, strict=True)
    ]


def rich_events() -> list[dict]:
    """The showcase's rich calls (chatui/agents/showcase_rich.py) as events."""
    # chatui.agents needs Django set up (its package imports the models); nothing here
    # touches a database.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from chatui.agents.showcase_rich import INTRO, PLAYS, RICH_CSV, cities_chart, rows_of

    calls = [
        {"id": f"rich-{n}", "name": name, "args": args}
        for n, (name, args, _, _) in enumerate(PLAYS)
    ]
    events: list[dict] = [
        {"type": "user.message", "content": "Show me tool output as people read it."},
        {"type": "agent.step.completed", "content": INTRO, "tool_calls": calls},
    ]
    for call, (name, args, result, details) in zip(calls, PLAYS, strict=True):
        if result is None:  # G21: the MCP result, drawn as the showcase draws it when played
            result = cities_chart(rows_of(RICH_CSV))
        events.append(
            {
                "type": "agent.tool.started",
                "tool_call_id": call["id"],
                "tool_name": name,
                "args": args,
            }
        )
        completed = {"type": "agent.tool.completed", "tool_call_id": call["id"], "result": result}
        events.append(
            {**completed, "duration_ms": 120, **({"details": details} if details else {})}
        )
    return events


def shoot(server: LiveServer, conversation_id: str, sizes: dict | None = None) -> None:
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        chosen = sizes or SIZES
        for (name, (width, height)), (scheme, suffix) in product(chosen.items(), SCHEMES.items()):
            # bypass_csp only so this script may pin the sticky bars for a full-page shot.
            page = browser.new_page(
                viewport={"width": width, "height": height}, bypass_csp=True, color_scheme=scheme
            )
            page.goto(server.url + "/accounts/login/")
            page.fill("#id_username", USERNAME)
            page.fill("#id_password", PASSWORD)
            page.click("button[type=submit]")
            page.goto(f"{server.url}/c/{conversation_id}/")
            page.wait_for_selector("[data-tool-batch]")
            # Open the batches a reader would open, so the picture shows the entries.
            page.eval_on_selector_all("[data-tool-batch]", "els => els.forEach(e => e.open = true)")
            page.add_style_tag(content=".topbar, .composer-bar { position: static; }")
            page.evaluate("window.scrollTo(0, 0)")
            page.wait_for_timeout(300)
            path = ROOT / "docs" / f"screenshot-{name}{suffix}.png"
            page.screenshot(path=str(path), full_page=True)
            print(f"wrote {path.relative_to(ROOT)}")
            page.close()
        browser.close()


if __name__ == "__main__":
    main()
