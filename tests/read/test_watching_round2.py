"""Watching a run, round 2 — W1 calm batches, W2 the run strip, W3 waiting is not running
(docs/rendering.md#w1, #w2, #w3) and G22 the one-line result in the header
(docs/rendering.md#g22): the presenters' plain data, without HTML, then the page's and a
live frame's partials. Real events through ingest, no mocks."""

from __future__ import annotations

import re

import pytest

from chatui.ingest.service import ingest
from chatui.live import frames
from chatui.models import Conversation
from chatui.read import pages, selectors
from chatui.read.presenters import ToolBatchView, iter_entries, present_transcript
from chatui.read.run_strip import present_run_strip, run_of

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
RUN = "r1"


def started(call_id: str, name: str = "read_file", **extra) -> dict:
    return {
        "type": "agent.tool.started",
        "tool_call_id": call_id,
        "tool_name": name,
        "run_id": RUN,
        **extra,
    }


def completed(call_id: str, **extra) -> dict:
    return {"type": "agent.tool.completed", "tool_call_id": call_id, "run_id": RUN, **extra}


def going(conversation: Conversation, *events: dict) -> None:
    ingest(
        conversation,
        [
            {"type": "user.message", "content": "go", "run_id": RUN},
            {"type": "agent.status", "status": "running", "run_id": RUN},
            *events,
        ],
    )
    conversation.refresh_from_db()


def items_of(conversation: Conversation, *, run_going: bool) -> list:
    messages = list(conversation.messages.order_by("position"))
    return present_transcript(messages, run_going=run_going)


def batches(items) -> list[ToolBatchView]:
    return [item for item in items if isinstance(item, ToolBatchView)]


def entry(items, call_id: str):
    for batch in batches(items):
        for found in iter_entries(batch.entries):
            if found.tool_call_id == call_id:
                return found
    raise AssertionError(call_id)


# -- W1 calm batches ---------------------------------------------------------------------


def test_w1_the_batch_a_going_run_is_in_stays_open_between_its_tools(conversation):
    going(conversation, started("a"), completed("a", result="one"))  # a gap: nothing runs
    (batch,) = batches(items_of(conversation, run_going=True))
    assert batch.running_count == 0 and batch.open and batch.held
    # the same batch once the run ended: closed, as a fresh load after S3 shows it
    (ended,) = batches(items_of(conversation, run_going=False))
    assert not ended.open and not ended.held


def test_w1_a_batch_the_run_moved_past_closes(conversation):
    going(
        conversation,
        started("a"),
        completed("a", result="one"),
        {"type": "agent.step.completed", "content": "Found it.", "run_id": RUN},
    )
    (batch,) = batches(items_of(conversation, run_going=True))
    assert not batch.open and not batch.held


def test_w1_held_means_open_only_because_the_run_is_there(conversation):
    """A running or failed entry opens the batch by itself: `held` is false then, so the
    page never closes it when text follows while it still runs."""
    going(conversation, started("a"))
    (batch,) = batches(items_of(conversation, run_going=True))
    assert batch.open and not batch.held


def test_w1_a_live_frame_holds_the_batch_open_between_tools(conversation):
    going(conversation, started("a"))
    result = ingest(conversation, [completed("a", result="one")])
    conversation.refresh_from_db()
    html = frames.change_frame(conversation, result.last_seq, result.last_seq, result.changes).html
    assert 'data-batch-open="true"' in html and 'data-batch-held="true"' in html
    # A fresh load shows the same state, and after the run ends it is closed.
    page = frames.render_partial(
        "chatui/_transcript.html#transcript", pages.transcript_context(conversation)
    )
    assert re.search(r'<details id="b-\d+" class="tool-batch"[^>]* open', page)
    ingest(conversation, [{"type": "agent.status", "status": "completed", "run_id": RUN}])
    conversation.refresh_from_db()
    page = frames.full_frame(conversation).html
    assert 'data-batch-open="false"' in page and " open>" not in page


def test_w1_a_batch_slice_says_when_text_follows_it(conversation):
    going(
        conversation,
        started("a"),
        {"type": "agent.step.completed", "content": "Found it.", "run_id": RUN},
    )
    tool = conversation.messages.get(tool_call_id="a")
    assert selectors.batch_slice(tool).batch_ended
    (batch,) = batches(present_transcript(selectors.batch_slice(tool), run_going=True))
    assert batch.open and not batch.held  # open because `a` runs, not held


# -- W3 waiting is not running --------------------------------------------------------


def test_w3_a_queued_entry_waits_and_a_running_one_runs(conversation):
    going(
        conversation,
        {"type": "agent.step.completed", "content": "", "run_id": RUN,
         "tool_calls": [{"id": "q", "name": "later"}]},
        started("r"),
    )  # fmt: skip
    items = items_of(conversation, run_going=True)
    queued, running = entry(items, "q"), entry(items, "r")
    assert (queued.status, queued.pending_word, queued.icon) == (
        "queued",
        "waiting",
        "circle-dashed",
    )
    assert (running.pending_word, running.icon) == ("running", "loader-circle")
    (batch,) = batches(items)
    assert (batch.running_text, batch.queued_text) == ("1 running", "1 waiting")
    html = frames.render_partial(
        "chatui/_transcript.html#transcript", pages.transcript_context(conversation)
    )
    waiting = re.search(r'data-status="queued".*?</li>', html, re.S).group(0)
    assert "data-tool-waiting" in waiting and "data-elapsed" not in waiting
    assert "icon--circle-dashed" in waiting and "spinner" not in waiting
    running_html = re.search(r'data-status="running".*?</li>', html, re.S).group(0)
    assert "data-tool-running" in running_html and "data-elapsed" in running_html


# -- G22 one line in the header ----------------------------------------------------------


def test_g22_the_header_previews_the_result_error_or_progress(conversation):
    going(
        conversation,
        started("ok"),
        completed("ok", result=f"\n\n  {HOSTILE} first line\nsecond line", duration_ms=1200),
        started("bad"),
        completed("bad", error="boom: no such file\ntraceback…"),
        started("ansi"),
        completed("ansi", result="\x1b[32mPASSED\x1b[0m 3 tests"),
        started("busy"),
        {"type": "agent.tool.progress", "tool_call_id": "busy", "message": f"→ {HOSTILE}",
         "run_id": RUN},
    )  # fmt: skip
    items = items_of(conversation, run_going=True)
    assert entry(items, "ok").preview_line == f"{HOSTILE} first line"
    assert entry(items, "ok").duration_text == "1.2 s"
    assert entry(items, "bad").preview_line == "boom: no such file"
    assert entry(items, "ansi").preview_line == "PASSED 3 tests"  # no escape code left
    assert entry(items, "busy").preview_line == f"→ {HOSTILE}"  # its progress line
    html = frames.render_partial(
        "chatui/_transcript.html#transcript", pages.transcript_context(conversation)
    )
    assert HOSTILE not in html and "&lt;script&gt;" in html  # escaped (T1)
    heads = re.findall(r'<div class="tool-head">(.*?)</div>', html, re.S)
    assert all("data-tool-preview-line" in head for head in heads)
    assert "\x1b" not in html


def test_g22_a_failed_command_previews_its_red_error_line_not_its_first_output(conversation):
    """G17 marks the line that says why a command failed; the header previews that line
    (its output's first is most often the command's banner), escaped and neutralised."""
    output = (
        "\x1b[1m===== test session starts =====\x1b[0m\n"
        "tests/test_a.py \x1b[32m.\x1b[0m\x1b[31mF\x1b[0m\n"
        f"\x1b[31mFAILED tests/test_a.py::test_b - {HOSTILE} @ada\x1b[0m\n"
    )
    going(
        conversation,
        started("own", name="run_command", details={"kind": "command"}),
        completed("own", error=output, details={"kind": "command", "exit_code": 1}),
        started("apart", name="run_command"),
        completed("apart", result=output, error="exit status 2",
                  details={"kind": "command", "exit_code": 2}),
    )  # fmt: skip
    items = items_of(conversation, run_going=True)
    own = entry(items, "own")
    assert own.status == "error"
    assert own.preview_line == f"FAILED tests/test_a.py::test_b - {HOSTILE} @\u200bada"
    assert entry(items, "apart").preview_line == "exit status 2"
    # Neutralised once (T1), as every text: a U+200B the runtime sent after "@" stays.
    ingest(conversation, [
        started("zw", name="run_command"),
        completed("zw", error="banner\nuser@\u200bhost denied", details={"exit_code": 1}),
    ])  # fmt: skip
    shown = entry(items_of(conversation, run_going=True), "zw").preview_line
    assert shown == "user@\u200b\u200bhost denied"
    html = frames.render_partial(
        "chatui/_transcript.html#transcript", pages.transcript_context(conversation)
    )
    assert HOSTILE not in html and "\x1b" not in html


def test_g22_a_structured_result_previews_what_it_holds_not_its_json(conversation):
    going(
        conversation,
        started("rows", "query_db"),
        completed("rows", result=[{"id": 1, HOSTILE: "a"}, {"id": 2, HOSTILE: "b"}]),
        started("object", "lookup_user"),
        completed("object", result={"id": 7, "name": "Ada", "bio": f"{HOSTILE}\nmore"}),
        started("mcp", "chart"),
        completed("mcp", result={"content": [{"type": "text", "text": "Three cities."}],
                                 "isError": False}),
    )  # fmt: skip
    items = items_of(conversation, run_going=False)
    assert entry(items, "rows").preview_line == f"2 rows: id, {HOSTILE}"
    assert entry(items, "object").preview_line.startswith("id: 7 · name: Ada · bio: ")
    assert entry(items, "mcp").preview_line == "Three cities."
    for call_id in ("rows", "object", "mcp"):
        assert "{" not in entry(items, call_id).preview_line  # never its JSON
    html = frames.render_partial(
        "chatui/_transcript.html#transcript", pages.transcript_context(conversation)
    )
    assert HOSTILE not in html  # escaped (T1)


def test_g22_a_single_card_shows_outcome_preview_and_duration_in_its_summary(conversation):
    going(conversation, started("one"), completed("one", error=HOSTILE, duration_ms=250))
    (batch,) = batches(items_of(conversation, run_going=True))
    assert batch.single is not None and batch.single.is_error
    html = frames.render_partial(
        "chatui/_transcript.html#transcript", pages.transcript_context(conversation)
    )
    summary = re.search(r"<summary.*?</summary>", html, re.S).group(0)
    assert "icon--circle-x" in summary and 'visually-hidden">failed' in summary
    assert "data-batch-preview" in summary and "&lt;script&gt;" in summary
    assert "250 ms" in summary and HOSTILE not in summary


# -- W2 the run strip ---------------------------------------------------------------------


def strip_of(conversation: Conversation):
    messages = list(conversation.messages.order_by("position"))
    return present_run_strip(run_of(messages), going=conversation.status == "running")


def test_w2_strip_shows_the_running_tool_and_counts(conversation):
    going(
        conversation,
        started("a"),
        completed("a", result="x"),
        started("b"),
        completed("b", error="boom"),
        {"type": "agent.step.completed", "content": "", "run_id": RUN,
         "tool_calls": [{"id": "q1", "name": "later"}, {"id": "q2", "name": "later"}]},
        started("c", name=HOSTILE),
        {"type": "agent.tool.progress", "tool_call_id": "c", "message": "page 2", "run_id": RUN},
    )  # fmt: skip
    strip = strip_of(conversation)
    assert (
        strip.now_kind == "tool"
        and strip.now_target == conversation.messages.get(tool_call_id="c").dom_id
    )
    assert strip.now_progress == "page 2" and strip.now_elapsed is not None
    assert strip.counts_text == "1 done · 1 failed · 2 waiting · 1 running"
    failed = conversation.messages.get(tool_call_id="b")
    assert strip.first_failure == failed.dom_id
    assert strip.title_mark == "running"
    html = frames.render_run_strip(conversation)
    assert "data-run-strip-now" in html and "data-run-strip-counts" in html
    assert "data-stop-run" in html and HOSTILE not in html and "&lt;script&gt;" in html
    assert f'href="#{failed.dom_id}"' in html


def test_w2_an_approval_waiting_shows_first_and_marks_the_title(conversation):
    going(
        conversation,
        started("a"),
        {"type": "agent.tool.approval_requested", "tool_call_id": "d1",
         "tool_name": "delete_file", "run_id": RUN},
    )  # fmt: skip
    strip = strip_of(conversation)
    assert (strip.now_kind, strip.now_text) == ("approval", "Approval needed: Delete File")
    assert strip.now_target == conversation.messages.get(tool_call_id="d1").dom_id
    assert strip.title_mark == "approval"


def test_w2_thinking_writing_and_no_strip_once_the_run_ended(conversation):
    going(conversation, {"type": "agent.status", "status": "thinking", "run_id": RUN})
    assert strip_of(conversation).now_text == "Thinking…"
    ingest(
        conversation,
        [{"type": "agent.message.delta", "message_id": "m1", "delta": "Hel", "run_id": RUN}],
    )
    assert strip_of(conversation).now_text == "Writing…"
    ingest(conversation, [{"type": "agent.status", "status": "completed", "run_id": RUN}])
    conversation.refresh_from_db()
    assert strip_of(conversation) is None
    html = frames.render_run_strip(conversation)
    assert re.search(r"<section id=\"run-strip\"[^>]*\bhidden\b", html)


def same(strip):
    """What a strip shows, its clock aside (it moves between two reads)."""
    return (strip.now_kind, strip.now_text, strip.now_target, strip.counts_text,
            strip.first_failure, strip.title_mark)  # fmt: skip


@pytest.mark.parametrize("tail", [1, 3, 10_000])
def test_w2_the_strip_reads_the_same_from_a_frames_tail_or_the_database(conversation, tail):
    going(
        conversation,
        *[e for n in range(6) for e in (started(f"t{n}"), completed(f"t{n}", result="ok"))],
        started("x1", args={"q": 1}, attempt=1, max_attempts=3),
        completed("x1", error="timeout"),
        started("x2", args={"q": 1}, attempt=2, max_attempts=3),
        completed("x2", result="ok"),  # a recovered retry: one call, done (W4)
        started("f1"),
        completed("f1", error="boom"),
        {"type": "agent.tool.approval_requested", "tool_call_id": "d1",
         "tool_name": "delete_file", "run_id": RUN},
        {"type": "tool.approval", "tool_call_id": "d1", "decision": "denied",
         "decided_by": "alice"},
        {"type": "agent.step.completed", "content": "", "run_id": RUN,
         "tool_calls": [{"id": "q1", "name": "later"}]},
        started("last"),
    )  # fmt: skip
    everything = present_run_strip(run_of(list(conversation.messages.order_by("position"))),
                                   going=True)  # fmt: skip
    assert everything.counts_text == "7 done · 1 failed · 1 denied · 1 waiting · 1 running"
    from_database = present_run_strip(
        *selectors.going_run_messages(conversation.pk)[:1],
        going=True,
        status_counts=selectors.going_run_messages(conversation.pk)[1],
    )
    rows, counts = selectors.going_run_messages(
        conversation.pk, selectors.latest_messages(conversation.pk, tail)
    )
    from_tail = present_run_strip(rows, going=True, status_counts=counts)
    assert same(from_database) == same(from_tail) == same(everything)


def test_w1_w2_a_past_moment_shows_the_strip_and_the_held_batch_read_only(
    client, user, conversation
):
    """`?at=` (and replay's steps, the same partials) shows the run as it stood then: its
    strip without Stop (a past moment acts on nothing), its batch held open between tools."""
    going(conversation, started("a", name=HOSTILE), completed("a", result="one"))
    gap = conversation.last_seq
    ingest(conversation, [{"type": "agent.status", "status": "completed", "run_id": RUN}])
    client.force_login(user)
    page = client.get(f"{conversation.get_absolute_url()}?at={gap}").content.decode()
    strip = re.search(r'<section id="run-strip".*?</section>', page, re.S).group(0)
    assert "data-run-strip-counts>1 done<" in strip and " hidden" not in strip.split(">")[0]
    assert "data-stop-run" not in strip and HOSTILE not in page
    assert re.search(r'<details id="b-\d+" class="tool-batch"[^>]* open', page)
    now = client.get(conversation.get_absolute_url()).content.decode()
    assert re.search(r'<section id="run-strip"[^>]*\bhidden\b', now)  # the run ended
    assert not re.search(r'<details id="b-\d+" class="tool-batch"[^>]* open', now)


def test_w2_a_run_just_started_shows_none_of_the_run_before_it(conversation):
    """A run whose start is all there is yet (no message names it) shows no count and
    no failure of the run before it: on the page and in the start's live frame."""
    going(conversation, started("a"), completed("a", error="boom"))
    ingest(conversation, [{"type": "agent.status", "status": "failed", "run_id": RUN}])
    result = ingest(conversation, [{"type": "agent.status", "status": "running", "run_id": "r2"}])
    conversation.refresh_from_db()
    strip = pages.run_strip(conversation)
    assert strip is not None
    assert (strip.counts_text, strip.first_failure, strip.failed) == ("", None, 0)
    frame = frames.change_frame(conversation, result.last_seq, result.last_seq, result.changes)
    assert "data-run-strip-failure" not in frame.html
    assert "1 failed" not in frame.html
