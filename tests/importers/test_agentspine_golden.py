"""[001] Golden tests: each real AgentSpine capture, posted unchanged, renders as recorded.

For every capture in tests/fixtures/agentspine/*.jsonl (copied unchanged from
../shared/fixtures/agentspine/), posted one event per request and as one batch:

- the whole stream is accepted (every event, the run completed);
- the seed-000 messages out equal golden/<capture>.messages.json (timestamps left
  out: they are the time the server received each event);
- the rendered transcript equals golden/<capture>.txt, a readable text form of the
  page (tests/support/golden.py): the run's text, every tool with its args, errors
  as errors (G15), the preview notes, the kind rows (G9). Posted one event per
  request, the file also records each running tool's entry after every
  `tool_execution_start` / `tool_execution_update` (the progress lines while the
  build runs); the one-batch post must give the same final transcript.

To rewrite the golden files after an intended change of rendering:

    CHATUI_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/importers/test_agentspine_golden.py -q

then read the diff by eye (`git diff tests/fixtures/agentspine/golden/`): a golden
file is only as good as its last review. tests/browser/test_agentspine_replay.py
holds the live page to the same running snapshots.
"""

from __future__ import annotations

import pytest

from chatui.models import Conversation
from tests.support.agentspine import (
    CAPTURES,
    FINAL_HEADER,
    RUNNING_HEADER,
    final_part,
    golden_path,
    snapshot_key,
)
from tests.support.fixtures import load_fixture
from tests.support.golden import check_golden, dump_json, entry_text, transcript_text

RUNNING_TYPES = ("tool_execution_start", "tool_execution_update")


def golden_header(name: str) -> str:
    return (
        f"# {name}: the rendered transcript of this AgentSpine capture, posted unchanged.\n"
        "# Written by tests/importers/test_agentspine_golden.py with CHATUI_UPDATE_GOLDEN=1; "
        "review by eye.\n\n"
    )


@pytest.fixture
def page_of(client, user):
    client.force_login(user)

    def render(conversation: Conversation) -> str:
        response = client.get(conversation.get_absolute_url())
        assert response.status_code == 200
        return response.content.decode()

    return render


def accepted_whole(api, conversation: Conversation, events: list[dict]) -> list[dict]:
    body = api.get(f"/api/v1/conversations/{conversation.pk}").json()
    assert body["last_seq"] == len(events)
    assert body["conversation"]["status"] == "completed"
    return [{k: v for k, v in m.items() if k != "timestamp"} for m in body["messages"]]


@pytest.mark.parametrize("name", CAPTURES)
def test_agentspine_golden_one_event_per_request(api, conversation, page_of, name):
    events = load_fixture(f"agentspine/{name}.jsonl")
    running = []
    for seq, event in enumerate(events, start=1):
        answer = api.post_events(conversation, event)
        assert answer.status_code == 200, (seq, answer.content)
        if event["type"] in RUNNING_TYPES:
            shown = entry_text(page_of(conversation), event["tool_call_id"])
            running.append(f"{snapshot_key(seq, event)}\n{shown}\n")
    messages = accepted_whole(api, conversation, events)
    check_golden(golden_path(name, ".messages.json"), dump_json(messages))
    final = transcript_text(page_of(conversation)) + "\n"
    text = golden_header(name) + RUNNING_HEADER + "\n".join(running) + "\n" + FINAL_HEADER + final
    check_golden(golden_path(name, ".txt"), text)


@pytest.mark.parametrize("name", CAPTURES)
def test_agentspine_golden_one_batch_gives_the_same_messages_and_transcript(
    api, conversation, page_of, name
):
    events = load_fixture(f"agentspine/{name}.jsonl")
    answer = api.post_events(conversation, events)
    assert answer.status_code == 200, answer.content
    messages = accepted_whole(api, conversation, events)
    assert dump_json(messages) == golden_path(name, ".messages.json").read_text()
    final = transcript_text(page_of(conversation)) + "\n"
    assert final == final_part(golden_path(name, ".txt").read_text())


def test_agentspine_golden_files_hold_what_the_issue_asks():
    """Read by eye once, pinned here: the things issue 11 says a capture must show."""
    as1 = golden_path("as1_builtin_tools", ".txt").read_text()
    assert "assistant: notes.txt has 15 lines; the build failed with exit code 3." in as1
    assert "call: run_cmd(command=echo building; echo oops >&2; exit 3)" in as1
    assert "- [error] Read File" in final_part(as1)  # W7: the icon is an SVG, no text
    as3 = golden_path("as3_progress_long_result", ".txt").read_text()
    assert "progress line: compiling 3 modules" in as3 and "progress: 50%" in as3
    assert "preview: preview — the runtime sent 200 characters" in as3
    as2 = final_part(golden_path("as2_details_kinds", ".txt").read_text())
    assert "fetch: HTTP status: 404 ✖" in as2 and "command: Exit code: 1 ✖" in as2
    assert "subagent: Child session: sess_9" in as2 and "file: Type: text/x-python" in as2
