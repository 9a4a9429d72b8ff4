"""docs/PERFORMANCE.md#p2: what one ingest costs, and that the shortcuts taken for it keep the
invariants (gap-free seqs, each event once, nothing remembered from a rolled-back
transaction)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from chatui.ingest.projection import known_runs
from chatui.ingest.service import ingest
from chatui.live import frames
from chatui.models import Conversation, Event, Run
from tests.support.ingest_events import progress, queued, started, tool_output

RUN = "r1"


def started_run(conversation: Conversation) -> None:
    ingest(
        conversation,
        [
            {"type": "user.message", "content": "Go", "run_id": RUN},
            {"type": "agent.status", "status": "running", "run_id": RUN},
            {"type": "agent.message.delta", "message_id": "a1", "delta": "Hel", "run_id": RUN},
            {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "ls", "run_id": RUN},
        ],
    )


# The queries of ingest itself (the broadcast's frame is rendered after commit and
# counted by the frame's own tests): savepoint, conversation, event insert, the rows
# the event touches, the message update, the conversation update, release.
SINGLE_EVENT_BUDGET = {
    "agent.message.delta": (
        {"type": "agent.message.delta", "message_id": "a1", "delta": "lo", "run_id": RUN},
        8,
    ),
    "agent.tool.progress": (
        {"type": "agent.tool.progress", "tool_call_id": "c1", "output": "x\n", "run_id": RUN},
        8,
    ),
    "agent.tool.completed": (
        {"type": "agent.tool.completed", "tool_call_id": "c1", "result": "ok", "run_id": RUN},
        9,
    ),
    "agent.tool.started": (
        {"type": "agent.tool.started", "tool_call_id": "c2", "tool_name": "ls", "run_id": RUN},
        10,
    ),
}


@pytest.mark.parametrize("event_type", sorted(SINGLE_EVENT_BUDGET))
def test_p2_single_event_ingest_stays_within_its_query_budget(
    conversation, event_type, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        started_run(conversation)  # commits: the run is now known to this process
    event, budget = SINGLE_EVENT_BUDGET[event_type]
    with django_assert_max_num_queries(budget):
        result = ingest(conversation, event)
    assert result.accepted == 1


def test_p2_a_committed_run_is_known_to_the_process(
    conversation, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        started_run(conversation)
    assert known_runs.among(conversation.pk, {RUN, "other"}) == {RUN}


def test_p2_a_run_created_in_a_rolled_back_ingest_is_not_remembered(conversation):
    class Abort(Exception):
        pass

    with pytest.raises(Abort), transaction.atomic():
        ingest(conversation, {"type": "agent.status", "status": "running", "run_id": "gone"})
        raise Abort
    assert not Run.objects.filter(run_id="gone").exists()
    assert known_runs.among(conversation.pk, {"gone"}) == set()
    # And ingesting into it again creates the run.
    ingest(conversation, {"type": "agent.status", "status": "running", "run_id": "gone"})
    assert Run.objects.filter(conversation=conversation, run_id="gone").exists()


THREADS = 4
EVENTS_PER_THREAD = 25


@pytest.mark.django_db(transaction=True)
def test_rel3_concurrent_writers_in_one_process_get_gap_free_seqs_and_each_event_once(user):
    """Threads of one process (each with its own connection, as daphne's request
    threads have) post the same events twice, interleaved."""
    conversation = Conversation.objects.create(owner=user)
    failures: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            for n in range(EVENTS_PER_THREAD):
                event = {
                    "type": "agent.tool.started",
                    "event_id": f"{name}-{n}",
                    "tool_call_id": f"{name}-{n}",
                    "tool_name": "ls",
                    "run_id": name,
                }
                ingest(Conversation.objects.get(pk=conversation.pk), event)
        except BaseException as problem:  # reported below, in the test's thread
            failures.append(problem)
        finally:
            connection.close()

    names = [f"w{n // 2}" for n in range(THREADS)]  # each name twice: duplicates
    threads = [threading.Thread(target=writer, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    seqs = list(Event.objects.filter(conversation=conversation).values_list("seq", flat=True))
    unique_writers = THREADS // 2
    assert sorted(seqs) == list(range(1, unique_writers * EVENTS_PER_THREAD + 1))
    ids = list(Event.objects.filter(conversation=conversation).values_list("event_id", flat=True))
    assert len(ids) == len(set(ids)) == unique_writers * EVENTS_PER_THREAD
    conversation.refresh_from_db()
    assert conversation.last_seq == unique_writers * EVENTS_PER_THREAD


def test_progress_logged_before_its_tool_is_applied_when_it_starts(conversation):
    ingest(conversation, progress("c1", "early\n"))
    ingest(conversation, started("c1"))
    assert tool_output(conversation, "c1") == "early\n"


def test_progress_before_its_tool_in_the_same_batch_is_applied(conversation):
    ingest(conversation, [progress("c1", "a\n"), started("c1"), progress("c1", "b\n")])
    assert tool_output(conversation, "c1") == "a\nb\n"


@pytest.mark.parametrize("together", [False, True], ids=["one by one", "one batch"])
def test_g12_progress_for_a_queued_call_before_its_start_is_applied_once(conversation, together):
    """The queued entry exists: its progress is applied as it comes, and its start
    does not apply it again as if it had come before the entry ("early")."""
    events = [progress("c1", "before queued\n"), queued("c1"), progress("c1", "queued\n")]
    events += [started("c1"), progress("c1", "running\n")]
    for batch in [events] if together else [[event] for event in events]:
        ingest(conversation, batch)
    assert tool_output(conversation, "c1") == "before queued\nqueued\nrunning\n"


def test_g12_a_second_start_applies_no_progress_again(conversation):
    ingest(conversation, [started("c1"), progress("c1", "x\n")])
    ingest(conversation, started("c1"))
    assert tool_output(conversation, "c1") == "x\n"


def test_p2_progress_after_the_start_in_one_batch_is_applied_once_and_costs_no_lookup(
    conversation, django_assert_max_num_queries
):
    ingest(conversation, {"type": "user.message", "content": "Go"})  # indexes the title
    with django_assert_max_num_queries(10):
        ingest(conversation, [started("c1"), progress("c1", "x\n"), progress("c1", "y\n")])
    assert tool_output(conversation, "c1") == "x\ny\n"


def test_p2_a_frame_reads_each_tool_batch_once(conversation, django_assert_max_num_queries):
    """Ten entries of one batch changed by one ingest: the batch is read and rendered
    once, not once per entry."""
    ingest(conversation, {"type": "user.message", "content": "Go"})
    result = ingest(conversation, [started(f"c{n}") for n in range(10)])
    conversation.refresh_from_db()
    with django_assert_max_num_queries(4):
        html = frames.change_frame(
            conversation, result.last_seq - 9, result.last_seq, result.changes
        ).html
    assert html.count("data-tool-batch") == 1 and 'data-count="10"' in html


# -- P7: an AG-UI event costs no more than the native event that says the same -------------

AGUI_RUN = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "ag1"},
    {"type": "TOOL_CALL_START", "toolCallId": "t1", "toolCallName": "run_cmd"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hel"},
]
# Each AG-UI event (run-less, as AG-UI sends them) and the native one that does the same.
AGUI_AND_NATIVE = {
    "TOOL_CALL_ARGS": (
        {"type": "TOOL_CALL_ARGS", "toolCallId": "t1", "delta": '{"cmd": "ls'},
        SINGLE_EVENT_BUDGET["agent.message.delta"],  # a streamed delta, as native text
    ),
    "TEXT_MESSAGE_CONTENT": (
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "lo"},
        SINGLE_EVENT_BUDGET["agent.message.delta"],
    ),
    "TOOL_CALL_RESULT": (
        {"type": "TOOL_CALL_RESULT", "toolCallId": "t1", "messageId": "r1", "content": "ok"},
        SINGLE_EVENT_BUDGET["agent.tool.completed"],
    ),
}


@pytest.mark.parametrize("agui_type", sorted(AGUI_AND_NATIVE))
def test_p7_a_runless_agui_event_costs_no_more_queries_than_its_native_twin(
    conversation, agui_type, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    """AG-UI's content events name no run: the conversation's latest run is known to the
    process as of its last seq (`latest_runs`), and an args delta is not re-indexed for
    search (TOOL_CALL_END indexes the arguments once)."""
    with django_capture_on_commit_callbacks(execute=True):
        ingest(conversation, AGUI_RUN)  # commits: the run and the latest run are known
    event, (_native, budget) = AGUI_AND_NATIVE[agui_type]
    with django_assert_max_num_queries(budget):
        result = ingest(conversation, event)
    assert result.accepted == 1


def test_p7_the_latest_run_known_at_a_seq_is_not_used_after_another_write(
    conversation, django_capture_on_commit_callbacks
):
    """Another writer (here: a second run started through another ingest the process did
    not record) moves the conversation's seq: the latest run is read again."""
    with django_capture_on_commit_callbacks(execute=True):
        ingest(conversation, AGUI_RUN)
    # A second run, written inside a caller's transaction whose on-commit is not run:
    # as if by another process.
    ingest(conversation, {"type": "RUN_STARTED", "threadId": "t", "runId": "ag2"})
    ingest(conversation, {"type": "TOOL_CALL_START", "toolCallId": "t2", "toolCallName": "ls"})
    ingest(conversation, {"type": "TOOL_CALL_ARGS", "toolCallId": "t2", "delta": "{}"})
    tool = conversation.messages.get(tool_call_id="t2")
    assert tool.run_id == "ag2"
