"""chatui.ingest.writer_threads.WriterThreads: the writer threads' own queue, in place of a
ThreadPoolExecutor (docs/PERFORMANCE.md#p2: less of the event loop's time per write)."""

from __future__ import annotations

import threading

import pytest

from chatui.ingest import writer_threads as writer
from chatui.ingest.writer_threads import WriterThreads


def test_p2_calls_run_on_the_named_threads_in_the_order_they_were_handed_over():
    threads = WriterThreads(1, name="test-writer")
    ran: list[tuple[int, str]] = []
    done = threading.Event()
    for number in range(50):
        threads.submit(lambda n: ran.append((n, threading.current_thread().name)), number)
    threads.submit(done.set)
    assert done.wait(5)
    threads.shutdown()
    assert ran == [(number, "test-writer_0") for number in range(50)]


def test_p2_shutdown_runs_what_is_queued_then_refuses_more():
    threads = WriterThreads(2, name="test-writer")
    release, ran = threading.Event(), []
    threads.submit(release.wait, 5)
    threads.submit(release.wait, 5)
    threads.submit(ran.append, "queued")
    release.set()
    threads.shutdown()
    assert ran == ["queued"]
    with pytest.raises(RuntimeError):
        threads.submit(ran.append, "late")
    assert ran == ["queued"]


def test_p2_a_call_that_raises_does_not_cost_the_writer_its_thread(caplog):
    threads = WriterThreads(1, name="test-writer")
    done = threading.Event()
    threads.submit(lambda: 1 / 0)
    threads.submit(done.set)
    assert done.wait(5)
    threads.shutdown()
    assert "a writer call failed" in caplog.text


def test_p2_the_threads_are_joined_at_exit_so_what_is_queued_runs():
    threads = WriterThreads(1, name="test-writer")
    done = threading.Event()
    threads.submit(done.set)
    assert done.wait(5)
    assert not threads._threads[0].daemon  # the interpreter waits for them at exit
    threads.shutdown()


def test_p2_without_cpythons_exit_hook_the_threads_are_daemons_and_still_run(monkeypatch):
    """`threading._register_atexit` is private: without it, exiting must not hang on
    threads blocked on their queue."""
    monkeypatch.setattr(writer, "_JOIN_BEFORE_EXIT", None)
    threads = WriterThreads(1, name="test-writer")
    done = threading.Event()
    threads.submit(done.set)
    assert done.wait(5)
    assert threads._threads[0].daemon
    threads.shutdown()
    assert not threads._threads[0].is_alive()
