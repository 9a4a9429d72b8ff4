"""docs/PERFORMANCE.md#p1, #p2: what the live frame of a tool event costs, and that making it
cheaper changes no frame.

The frame-equality check replays scenarios (the showcase, the recorded run, hostile
input, AgentSpine progress, a P1 stream, nested sub-agents, retries, a giant batch
with updates inside and outside its window, several events per ingest) through
ingest one ingest at a time, and compares every frame's HTML with golden files
written by the code before the frame was made cheaper (tests/fixtures/frames/).
DOM ids are primary keys: they are numbered in order of first appearance, so the
files do not depend on which rows the database handed out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from chatui.ingest.service import ingest
from chatui.live import frames
from chatui.models import Conversation
from chatui.read import selectors
from tests.support.batch_events import call_events
from tests.support.fixtures import load_fixture
from tests.support.golden import check_golden
from tests.support.hostile import hostile_events
from tests.support.showcase import showcase_events
from tests.support.tool_steps import RUN, done, status, timed, tool

GOLDEN = Path(__file__).parent.parent / "fixtures" / "frames"

#: DOM ids and URLs built from a primary key: "m-12", "b-12-summary", "#m-12",
#: "/calls/12/earlier".
PK_IN_ID = re.compile(r'(?<=["#])([mb])-(\d+)(?=["\- ])')
PK_IN_URL = re.compile(r"/calls/(\d+)/")


def normalised(html: str, conversation: Conversation, numbers: dict[str, int]) -> str:
    """Primary keys renumbered by first appearance across the scenario's frames (so the
    same message keeps its number from frame to frame); elapsed timers blanked."""
    html = html.replace(str(conversation.pk), "<conversation>")
    html = html.replace(conversation.pk.hex, "<conversation>")

    def number(pk: str) -> int:
        return numbers.setdefault(pk, len(numbers))

    html = PK_IN_ID.sub(lambda m: f"{m[1]}-#{number(m[2])}", html)
    html = PK_IN_URL.sub(lambda m: f"/calls/#{number(m[1])}/", html)
    return re.sub(r"(<time data-elapsed[^>]*>)[^<]*(</time>)", r"\1\2", html)


def one_at_a_time(events: list[dict]) -> list[list[dict]]:
    return [[event] for event in timed(events)]


def in_threes(events: list[dict]) -> list[list[dict]]:
    events = timed(events)
    return [events[n : n + 3] for n in range(0, len(events), 3)]


def p1_events(tools: int = 23) -> list[dict]:
    """What bench/profile_ingest.py --mode p1 posts: started, completed, a text every 5."""
    events = [{"type": "user.message", "run_id": RUN, "content": "Run the checks."}]
    events.append(status("running"))
    for n in range(tools):
        events += [
            tool(f"p{n}", args={"path": f"src/m{n}.py"}),
            done(f"p{n}", result=f"ok: {n} lines read", duration_ms=20),
        ]
        if (n + 1) % 5 == 0:
            events.append(
                {
                    "type": "agent.step.completed",
                    "run_id": RUN,
                    "message_id": f"text-{n}",
                    "content": "Checked some files; continuing.",
                }
            )
    return events


def nested_events() -> list[dict]:
    """Sub-agents three deep, a child announced before its parent, progress on a
    grandchild, a sibling batch after a text, and the run's end."""
    return [
        {"type": "user.message", "run_id": RUN, "content": "Audit it."},
        status("running"),
        status("thinking", message="Planning"),
        tool("s1", "sessions_spawn", args={"task": "audit"}),
        tool("s1a", parent_tool_call_id="s1"),
        tool("s1a-x", "search_text", parent_tool_call_id="s1a"),
        {"type": "agent.tool.progress", "run_id": RUN, "tool_call_id": "s1a-x", "output": "a\n"},
        done("s1a-x", result="2 matches"),
        tool("orphan-child", parent_tool_call_id="late-parent"),
        tool("late-parent", "sessions_spawn"),
        done("s1a", result="alpha"),
        tool("s1b", "run_cmd", parent_tool_call_id="s1", args={"command": "make"}),
        done("s1b", error="make: Error 2"),
        done("orphan-child", result="found"),
        done("late-parent", result="ok"),
        done("s1", result={"text": "sub-agent finished", "details": {"kind": "subagent"}}),
        status("thinking", message="Next"),
        {"type": "agent.step.completed", "run_id": RUN, "message_id": "a1", "content": "Now:"},
        tool("t2"),
        tool("t2-child", parent_tool_call_id="t2"),
        done("t2-child", result="x"),
        done("t2", result="y"),
        status("completed"),
    ]


def retry_events() -> list[dict]:
    """G14: attempts of one call replace each other; a retry inside a nested entry."""
    return [
        {"type": "user.message", "run_id": RUN, "content": "Try it."},
        status("running"),
        tool("f1", "flaky", attempt=1, max_attempts=3),
        done("f1", error="timeout"),
        tool("f2", "flaky", attempt=2, max_attempts=3),
        {"type": "agent.tool.progress", "run_id": RUN, "tool_call_id": "f2", "progress": 0.5},
        done("f2", error="timeout again"),
        tool("f3", "flaky", attempt=3, max_attempts=3),
        done("f3", result="ok on retry"),
        tool("p", "sessions_spawn"),
        tool("p-c1", "flaky", parent_tool_call_id="p", attempt=1, max_attempts=2),
        done("p-c1", error="nope"),
        tool("p-c2", "flaky", parent_tool_call_id="p", attempt=2, max_attempts=2),
        done("p-c2", result="yes"),
        done("p", result="done"),
    ]


GIANT_CALLS = 230


def giant_setup() -> list[dict]:
    """A batch past BATCH_WINDOW, built in one ingest (its frame is the whole page)."""
    events = [{"type": "user.message", "run_id": RUN, "content": "Read them all"}]
    return timed(events + call_events(0, GIANT_CALLS, failed={7}, running={5, 220}))


def giant_events() -> list[list[dict]]:
    """After giant_setup, live changes to the giant batch: a new call,
    calls outside the window (a running one completes, a failed one is retried in
    place), inside it, a thinking line, and a text that ends the batch."""
    live = [
        call_events(GIANT_CALLS, GIANT_CALLS + 1)[1:2],
        [done("call-5", result="ok")],
        [done("call-220", error="late")],
        [{"type": "agent.tool.progress", "run_id": RUN, "tool_call_id": "call-3", "output": "x"}],
        [status("thinking", message="More")],
        call_events(GIANT_CALLS + 1, GIANT_CALLS + 2),
        [done(f"call-{GIANT_CALLS}", result="late result")],
        [{"type": "agent.step.completed", "run_id": RUN, "message_id": "t", "content": "So:"}],
        [tool("after")],
        [done("call-2", result="after the break")],
    ]
    return [timed(ingest_) for ingest_ in live]


def long_batch_events(calls: int = 30) -> list[dict]:
    """One batch longer than a frame's first read (selectors.FRAME_TAIL), its calls
    started before any completes, with thinking lines and a nested call in it."""
    events = [{"type": "user.message", "run_id": RUN, "content": "Many."}, status("running")]
    for n in range(calls):
        if n % 10 == 0:
            events.append(status("thinking", message=f"Batch part {n}"))
        events.append(tool(f"l{n}", parent_tool_call_id="l0" if n == 15 else None))
    events += [done(f"l{n}", result=f"r{n}") for n in range(0, calls, 3)]
    events.append(tool("last"))
    return [{k: v for k, v in event.items() if v is not None} for event in events]


def agentspine_events() -> list[dict]:
    return load_fixture("agentspine/as3_progress_long_result.jsonl")


SCENARIOS: dict[str, Callable[[], list[list[dict]]]] = {
    "showcase": lambda: one_at_a_time(showcase_events()),
    "showcase_in_threes": lambda: in_threes(showcase_events()),
    "recorded_run": lambda: one_at_a_time(load_fixture("recorded_run.json")),
    "hostile": lambda: one_at_a_time(hostile_events()),
    "agentspine_as3": lambda: one_at_a_time(agentspine_events()),
    "p1_stream": lambda: one_at_a_time(p1_events()),
    "nested": lambda: one_at_a_time(nested_events()),
    "retries": lambda: one_at_a_time(retry_events()),
    "giant_batch": giant_events,
    "long_batch": lambda: one_at_a_time(long_batch_events()),
    "long_batch_in_threes": lambda: in_threes(long_batch_events()),
}
#: Scenarios that also record, every N ingests, what a page that missed the last 7
#: events gets on reconnecting (frames.replay_frame: messages read by pk, not only
#: the latest ones).
REPLAY_EVERY = {"showcase": 4, "nested": 3, "long_batch": 5}
REPLAY_GAP = 7


def frames_of(conversation: Conversation, ingests: list[list[dict]], replay_every: int = 0) -> str:
    """Every frame of the scenario, normalised, one after another."""
    numbers: dict[str, int] = {}
    out = []
    for n, events in enumerate(ingests):
        result = ingest(conversation, events)
        if not result.accepted:
            continue
        conversation.refresh_from_db()
        first = result.last_seq - result.accepted + 1
        html = frames.change_frame(conversation, first, result.last_seq, result.changes).html
        out.append(f"=== ingest {n} ===\n{normalised(html, conversation, numbers)}\n")
        if replay_every and n % replay_every == replay_every - 1:
            after = max(0, result.last_seq - REPLAY_GAP)
            replayed = frames.replay_frame(conversation.pk, after)
            html = replayed.html if replayed is not None else "(none)"
            out.append(f"=== replay after {after} ===\n{normalised(html, conversation, numbers)}\n")
    return "".join(out)


#: What a scenario's conversation holds before its frames are recorded.
SETUPS: dict[str, Callable[[], list[dict]]] = {"giant_batch": giant_setup}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_tool_frame_is_unchanged_from_the_golden_frames(user, scenario):
    check_scenario(user, scenario)


#: A frame's first read cut short (1, 3 messages: walks go on by query from every
#: place) or holding the whole conversation (no query after it).
@pytest.mark.parametrize("tail", [1, 3, 10_000])
@pytest.mark.parametrize("scenario", ["showcase_in_threes", "nested", "long_batch", "giant_batch"])
def test_frames_do_not_depend_on_how_many_latest_messages_a_frame_reads_first(
    user, scenario, tail, monkeypatch
):
    monkeypatch.setattr(selectors, "FRAME_TAIL", tail)
    check_scenario(user, scenario)


def check_scenario(user, scenario: str) -> None:
    conversation = Conversation.objects.create(owner=user, title="frames")
    if scenario in SETUPS:
        ingest(conversation, SETUPS[scenario]())
    ingests = SCENARIOS[scenario]()
    actual = frames_of(conversation, ingests, REPLAY_EVERY.get(scenario, 0))
    check_golden(GOLDEN / f"{scenario}.html", actual)


# -- what one tool event's frame reads ---------------------------------------------------


def frame_after(conversation: Conversation, *events: dict) -> tuple[int, int, object]:
    """Ingest `events`, then what change_frame needs for them."""
    result = ingest(conversation, list(events))
    conversation.refresh_from_db()
    return result.last_seq - result.accepted + 1, result.last_seq, result.changes


def p1_conversation(user, tools: int = 40) -> Conversation:
    """A P1 run far longer than a frame's first read: 40 tools, a text every 5."""
    conversation = Conversation.objects.create(owner=user, title="p1")
    ingest(conversation, timed(p1_events(tools)))
    return conversation


def test_p1_tool_started_frame_reads_at_most_4_queries(user, django_assert_max_num_queries):
    """The latest messages (the new entry, its batch back to the text that starts it),
    the run's thinking lines before them (this run has none), and for its strip (W2:
    the run is longer than the latest messages) its calls counted by status and its
    pending and failed ones."""
    conversation = p1_conversation(user)
    first, last, changes = frame_after(conversation, tool("new", args={"path": "x.py"}))
    with django_assert_max_num_queries(4):
        html = frames.change_frame(conversation, first, last, changes).html
    assert html.count('class="tool-entry"') == 1 and 'data-tool-call-id="new"' in html
    assert 'data-batch-count="1"' in html  # a text just ended the previous batch


def test_p1_tool_completed_frame_reads_3_queries(user, django_assert_max_num_queries):
    """The latest messages, and for the run's strip (W2: the run is longer than the
    latest messages) its calls counted by status and its pending and failed ones."""
    conversation = Conversation.objects.create(owner=user, title="p1")
    ingest(conversation, timed(p1_events(43))[:-1])  # the last batch: 3 calls, 1 running
    first, last, changes = frame_after(conversation, done("p42", result="changed"))
    with django_assert_max_num_queries(3):
        html = frames.change_frame(conversation, first, last, changes).html
    assert 'data-tool-call-id="p42"' in html and "changed" in html
    assert 'data-batch-count="3"' in html and html.count('class="tool-entry"') == 1


def test_p2_tool_started_frame_after_thinking_lines_reads_1_query(
    user, django_assert_max_num_queries
):
    """The run's two latest thinking lines are among the latest messages: the frame
    deletes them with no query of its own (docs/rendering.md#one-status-line one status line)."""
    conversation = Conversation.objects.create(owner=user, title="p2")
    events = [{"type": "user.message", "run_id": RUN, "content": "Go"}, status("running")]
    for step in range(3):
        events += [status("thinking", message=f"step {step}"), tool(f"t{step}")]
        events.append(done(f"t{step}", result="ok"))
    ingest(conversation, timed(events))
    spinners = list(conversation.messages.filter(status_type="thinking").order_by("-position"))
    first, last, changes = frame_after(conversation, tool("t3"))
    with django_assert_max_num_queries(1):
        html = frames.change_frame(conversation, first, last, changes).html
    for spinner in spinners[:2]:
        assert f'<div id="{spinner.dom_id}" hx-swap-oob="delete"></div>' in html
    assert spinners[2].dom_id not in html


def test_an_update_to_an_early_entry_of_a_long_batch_reads_at_most_6_queries(
    user, django_assert_max_num_queries
):
    """The entry lies before the latest messages: it is read by pk, its batch forward
    up to the latest messages and back to its start by query (as many as before
    the latest messages were read first), none of them twice; and the two reads of the
    run's strip (W2)."""
    conversation = Conversation.objects.create(owner=user, title="long")
    ingest(conversation, timed(long_batch_events(calls=2 * selectors.FRAME_TAIL)))
    first, last, changes = frame_after(conversation, done("l1", result="early"))
    with django_assert_max_num_queries(6):
        html = frames.change_frame(conversation, first, last, changes).html
    assert 'data-tool-call-id="l1"' in html and "early" in html


def test_g14_calls_without_an_attempt_number_are_not_compared_for_retries(user, monkeypatch):
    """Merging attempts compared each entry with every earlier one: quadratic in a
    giant batch's 200 shown entries, on every live frame and page load. An entry with
    no attempt number cannot be a retry, so it is compared with none."""
    from chatui.read import presenters

    compared = []
    real = presenters._retries
    monkeypatch.setattr(
        presenters, "_retries", lambda *args: compared.append(args[2].pk) or real(*args)
    )
    conversation = Conversation.objects.create(owner=user, title="many")
    ingest(conversation, [tool(f"c{n}") for n in range(60)])
    ingest(conversation, [tool("f1", "flaky", attempt=1), done("f1", error="x")])
    first, last, changes = frame_after(conversation, tool("f2", "flaky", attempt=2))
    html = frames.change_frame(conversation, first, last, changes).html
    first_attempt, retry = conversation.messages.filter(tool_name="flaky").order_by("position")
    # Only the numbered attempts looked for a chain to continue.
    assert set(compared) == {first_attempt.pk, retry.pk}
    assert f'<li id="{first_attempt.dom_id}"' in html and 'data-tool-call-id="f2"' in html


def test_p2_batched_ingest_frame_reads_its_batches_from_one_read(
    user, django_assert_max_num_queries
):
    """A batch of events touching several tool batches (P2's batches of 100): the first
    read holds every changed message and the batches around them, so no batch is
    walked to by a query of its own."""
    conversation = Conversation.objects.create(owner=user, title="batched")
    ingest(conversation, timed(p1_events(5)))
    events = []
    for n in range(24):  # 6 batches of 4 calls, each followed by a text
        events += [tool(f"b{n}"), done(f"b{n}", result="ok")]
        if n % 4 == 3:
            events.append(
                {
                    "type": "agent.step.completed",
                    "run_id": RUN,
                    "message_id": f"b-text-{n}",
                    "content": "Checked.",
                }
            )
    first, last, changes = frame_after(conversation, *timed(events))
    assert 20 < len(changes.changed) <= frames.PIECEMEAL_LIMIT  # a piecemeal frame
    with django_assert_max_num_queries(2):  # the latest messages; the run's steps
        html = frames.change_frame(conversation, first, last, changes).html
    assert html.count('class="tool-entry"') >= 20


@pytest.mark.parametrize(("changed", "size"), [(1, 16), (8, 16), (9, 32), (20, 32), (40, 64)])
def test_a_frame_first_read_grows_with_its_changes_in_few_sizes(changed, size):
    assert frames._tail_size(changed) == size


def test_s10_a_thinking_line_added_and_replaced_in_one_frame_is_not_sent(user):
    """docs/rendering.md#one-status-line one status line: a batched ingest adds a thinking line and
    the work that replaces it; the page never had it, so the frame neither renders nor deletes
    it."""
    conversation = Conversation.objects.create(owner=user, title="batched")
    ingest(conversation, timed([{"type": "user.message", "run_id": RUN, "content": "Go"}]))
    first, last, changes = frame_after(
        conversation, *timed([status("running"), status("thinking", message="Reading"), tool("t1")])
    )
    html = frames.change_frame(conversation, first, last, changes).html
    spinner = conversation.messages.get(status_type="thinking")  # kept until the run ends
    assert spinner.pk in changes.created
    assert spinner.dom_id not in html
    assert "Reading" not in html
    assert 'data-tool-call-id="t1"' in html
