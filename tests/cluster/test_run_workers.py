"""Agent runs in run workers (docs/SCALING.md, docs/PERFORMANCE.md, docs/events.md#reliability): web
processes only enqueue; a run goes on whichever web process dies; Stop reaches it from any process;
a dead worker's run ends failed ("worker lost") within the bound, never "running" forever.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tests.support.cluster import (
    RUN_WORKER_ENV,
    Frame,
    RunWorkerProcess,
    last_seq,
    logged_in,
    post_form,
    read_until,
    run_row,
    viewer,
    wait_for,
)
from tests.support.live import LiveServer

SLOW = "run something slow"  # the demo's slow_task: a run of several seconds


@pytest.fixture(scope="module")
def web(tmp_path_factory) -> Iterator[tuple[LiveServer, LiveServer]]:
    """Two web processes that only enqueue runs, on one PostgreSQL and Redis."""
    first = LiveServer(tmp_path_factory.mktemp("web-a"), extra_env=RUN_WORKER_ENV)
    first.prepare()
    second = LiveServer(
        tmp_path_factory.mktemp("web-b"),
        database_url=first.database_url,
        extra_env=RUN_WORKER_ENV,
    )
    second.token = first.token
    first.start()
    second.start()
    yield first, second
    first.stop()
    second.stop()


@pytest.fixture
def worker(web, tmp_path) -> Iterator[RunWorkerProcess]:
    process = RunWorkerProcess(web[0].env, tmp_path / "run-worker.log")
    process.start()
    yield process
    process.stop()


def start_run(server: LiveServer, conversation: str, text: str = SLOW) -> None:
    with logged_in(server) as client:
        response = post_form(client, f"/c/{conversation}/messages", content=text)
    assert response.status_code == 302, response.text[:200]


def held_by_a_worker(server: LiveServer, conversation: str) -> dict:
    wait_for(
        lambda: (run_row(server.database_url, conversation) or {}).get("worker"),
        "a run worker to take the run",
    )
    return run_row(server.database_url, conversation)


def ended(server: LiveServer, conversation: str) -> dict:
    wait_for(
        lambda: run_row(server.database_url, conversation)["status"] != "running",
        "the run to end",
    )
    return run_row(server.database_url, conversation)


def tool_statuses(server: LiveServer, conversation: str) -> list[str]:
    with psycopg.connect(server.database_url, autocommit=True) as db:
        rows = db.execute(
            "SELECT tool_status FROM chatui_message"
            " WHERE conversation_id = %s AND role = 'tool' ORDER BY position",
            [conversation],
        ).fetchall()
    return [status for (status,) in rows]


def contiguous(frames: list[Frame], after: int) -> bool:
    """Each frame starts right after the one before: nothing missed, nothing twice."""
    previous = after
    for frame in frames:
        if frame.first_seq != previous + 1:
            return False
        previous = frame.last_seq
    return True


def test_stop_from_process_b_ends_a_run_a_worker_holds(web, worker):
    a, b = web
    conversation = a.new_conversation("stop across processes")
    start_run(a, conversation)
    run = held_by_a_worker(a, conversation)
    assert run["worker"].startswith("chatui.worker.")
    with logged_in(b) as client:
        assert post_form(client, f"/c/{conversation}/stop").status_code == 302
    run = ended(a, conversation)
    assert (run["status"], run["error_message"]) == ("cancelled", "")  # W5
    with a.api() as client:
        events = client.get(f"/conversations/{conversation}/events").json()["events"]
    # Written by the run's own context in the worker ({run}.e<n>), not by B's fallback.
    assert events[-1]["event_id"].startswith(f"{run['run_id']}.e")
    assert events[-1]["payload"] == {"status": "cancelled"}


def test_a_web_process_killed_mid_run_its_viewers_resume_and_the_run_goes_on(web, worker):
    a, b = web
    conversation = a.new_conversation("web process dies")
    with viewer(a, conversation) as on_a, viewer(b, conversation) as on_b:
        start_run(b, conversation)  # through the process about to die
        seen_on_a = read_until(on_a, 3)
        seen_on_b = read_until(on_b, 3)
        held_by_a_worker(a, conversation)
        b.kill()
        run = ended(a, conversation)
        final = last_seq(a.database_url, conversation)
        seen_on_a += read_until(on_a, final)
    b.start()
    resumed_at = seen_on_b[-1].last_seq
    with viewer(b, conversation, after=resumed_at) as again:
        replay = read_until(again, final)
    assert (run["status"], run["error_message"]) == ("completed", "") and run["worker"]
    assert contiguous(seen_on_a, 0) and seen_on_a[-1].last_seq == final
    assert contiguous(seen_on_b, 0) and contiguous(replay, resumed_at)
    assert replay[-1].last_seq == final
    assert any("All done" in f.html or "slow_task" in f.html for f in replay + seen_on_a)


def test_a_worker_killed_mid_run_leaves_its_run_failed_worker_lost(web, worker, tmp_path):
    a, _ = web
    conversation = a.new_conversation("worker dies")
    start_run(a, conversation)
    held_by_a_worker(a, conversation)
    wait_for(lambda: "running" in tool_statuses(a, conversation), "the slow tool to run")
    worker.kill()
    # The supervisor starts a new worker; its sweep finds the run's heartbeat stale.
    replacement = RunWorkerProcess(a.env, tmp_path / "replacement.log")
    replacement.start()
    try:
        run = ended(a, conversation)
    finally:
        replacement.stop()
    assert (run["status"], run["error_message"]) == ("failed", "worker lost")
    with a.api() as client:
        events = client.get(f"/conversations/{conversation}/events").json()["events"]
    assert events[-1]["event_id"] == f"{run['run_id']}.lost.{events[-1]['event_id'][-1]}"
    assert tool_statuses(a, conversation) == ["error"]  # closed "worker lost": no endless ⏳


def test_a_run_no_worker_takes_ends_failed_when_a_viewer_looks(web):
    """No worker at all: the web process that renders the page reaps the run."""
    a, b = web
    conversation = a.new_conversation("nobody works")
    start_run(a, conversation)
    assert run_row(a.database_url, conversation)["status"] == "running"

    def looked_at_and_ended() -> bool:
        with logged_in(b) as client:
            client.get(f"/c/{conversation}/")
        return run_row(a.database_url, conversation)["status"] != "running"

    wait_for(looked_at_and_ended, "the page view to reap the run")
    run = run_row(a.database_url, conversation)
    assert (run["status"], run["error_message"]) == ("failed", "no run worker took the run")
    assert run["worker"] == ""
