"""What W8's entry menu adds to a page, a tool frame and an entry's render
(docs/rendering.md#w8), in-process.

    .venv/bin/python bench/w8_menu_weight.py [--calls 100] [--repeat 30]

Runs Django in this process on a fresh SQLite file (as bench/profile_ingest.py does),
ingests the showcase and `--calls` finished tool calls, and measures the conversation
page's bytes (one GET through Django's test client), the bytes of one more finished
call's frame, and the time to render one tool entry (the `tool-entry` partial over every
entry of the page, `--repeat` rounds, the two cases in turn): with each finished entry's
menu, and with the menu left out (`ToolEntryView.has_actions` false: the menu is the
only thing it gates; before W8 the same entries carried Copy output / Copy args buttons).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import loadavg
from profile_ingest import ROOT, setup_django


def calls(prefix: str, count: int) -> list[dict]:
    events = []
    for n in range(count):
        events += [
            {"type": "agent.tool.started", "tool_call_id": f"{prefix}{n}",
             "tool_name": "read_file", "args": {"path": f"src/m{n}.py"}},
            {"type": "agent.tool.completed", "tool_call_id": f"{prefix}{n}",
             "result": f"content of m{n}", "duration_ms": 20},
        ]  # fmt: skip
    return events


def frame_bytes(conversation) -> int:
    """The bytes of the frame of one more finished call."""
    from chatui.ingest.service import ingest
    from chatui.live import frames

    result = ingest(conversation, calls(f"f{time.monotonic_ns()}-", 1))
    conversation.refresh_from_db()
    first = result.last_seq - result.accepted + 1
    frame = frames.change_frame(conversation, first, result.last_seq, result.changes).html
    return len(frame.encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="finished calls after the showcase")
    parser.add_argument("--repeat", type=int, default=30, help="rounds of entry renders")
    options = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="chatui-w8-"))
    try:
        setup_django(data)
        sys.path.insert(0, str(ROOT))
        from django.contrib.auth import get_user_model
        from django.test import Client

        from chatui.ingest.service import ingest
        from chatui.live import frames
        from chatui.models import Conversation, Message
        from chatui.read.presenters import ToolEntryView, present_tool_entry
        from tests.support.showcase import showcase_events

        owner = get_user_model().objects.create_user("bench", password="bench-password-1")
        client = Client()
        client.force_login(owner)
        print(f"load {loadavg()}")
        conversation = Conversation.objects.create(owner=owner, title="w8")
        ingest(conversation, showcase_events())
        ingest(conversation, calls("c", options.calls))
        url = conversation.get_absolute_url()
        entries = [
            present_tool_entry(message)
            for message in Message.objects.filter(conversation=conversation, role="tool")
        ]
        with_menu = ToolEntryView.has_actions
        without_menu = property(lambda self: False)
        pages: dict[bool, int] = {}
        frame: dict[bool, int] = {}
        spent: dict[bool, list[float]] = {True: [], False: []}
        try:
            for menu in (True, False):
                ToolEntryView.has_actions = with_menu if menu else without_menu
                pages[menu] = len(client.get(url).content)
                frame[menu] = frame_bytes(conversation)
            # The two cases in turn: the machine's load hits both alike.
            for _ in range(options.repeat):
                for menu in (True, False):
                    ToolEntryView.has_actions = with_menu if menu else without_menu
                    start = time.perf_counter()
                    for entry in entries:
                        frames.render_partial(frames.TEMPLATE + "#tool-entry", {"entry": entry})
                    spent[menu].append((time.perf_counter() - start) * 1e6 / len(entries))
        finally:
            ToolEntryView.has_actions = with_menu
        for menu in (True, False):
            print(
                f"showcase + {options.calls} calls, menu {'on ' if menu else 'off'}: "
                f"page {pages[menu]:,} bytes; a finished call's frame {frame[menu]:,} bytes; "
                f"an entry's render p50 {statistics.median(spent[menu]):.0f} µs"
            )
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
