"""examples/runtime.py, run as a real process against a real server, gives the committed
transcript (`examples/expected_transcript.json`, the `messages` of the conversation).

Regenerate it after an intended change with
`CHATUI_UPDATE_GOLDEN=1 pytest tests/test_example_runtime.py` and review the diff.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import httpx

from tests.support.live import ROOT

EXAMPLE = ROOT / "examples" / "runtime.py"
EXPECTED = ROOT / "examples" / "expected_transcript.json"
CONVERSATION_URL = re.compile(r"^(http://\S+)/c/([0-9a-f-]{36})/$")


def run_example(server, *args: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CHATUI_URL", "CHATUI_TOKEN")}
    env.pop("PYTHONPATH", None)  # the example must find chatui on its own, from a checkout
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--url", server.url, "--token", server.token, *args],
        cwd=ROOT / "examples",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()


def test_example_runtime_produces_the_expected_transcript(chatui_server):
    lines = run_example(chatui_server)
    match = CONVERSATION_URL.match(lines[-1])
    assert match, lines
    assert match.group(1) == chatui_server.url
    conversation_id = match.group(2)
    with chatui_server.api() as api:
        body = api.get(f"/conversations/{conversation_id}").json()
    if os.environ.get("CHATUI_UPDATE_GOLDEN"):
        EXPECTED.write_text(json.dumps(body["messages"], indent=2, ensure_ascii=False) + "\n")
    assert body["messages"] == json.loads(EXPECTED.read_text())
    assert body["conversation"]["status"] == "completed"
    assert body["conversation"]["title"] == "Example: release check"
    assert lines[0] == f"events in the conversation: {body['last_seq']} ({body['last_seq']} new)"

    # The conversation page it points at exists (login required: a redirect, not a 404).
    page = httpx.get(lines[-1])
    assert page.status_code in (200, 302)

    # Run again into the same conversation: deterministic event_ids, all duplicates (REL1).
    again = run_example(chatui_server, "--conversation", conversation_id)
    assert again[0] == f"events in the conversation: {body['last_seq']} (0 new)"
    with chatui_server.api() as api:
        assert api.get(f"/conversations/{conversation_id}").json() == body
