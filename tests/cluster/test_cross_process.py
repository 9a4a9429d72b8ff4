"""Two ASGI processes on one PostgreSQL + Redis behave as one server (docs/SCALING.md,
docs/rendering.md#live-updates, docs/events.md#reliability)."""

from __future__ import annotations

import threading
from collections import Counter

import httpx
import pytest

from tests.support.cluster import (
    backends_waiting_for_a_lock,
    read_frame,
    read_until,
    row_locked,
    viewer,
    wait_for,
)


def said(text: str, event_id: str) -> dict:
    return {"type": "user.message", "content": text, "event_id": event_id}


def all_events(server, conversation_id: str) -> list[dict]:
    events: list[dict] = []
    with server.api() as client:
        while True:
            page = client.get(
                f"/conversations/{conversation_id}/events",
                params={"after": events[-1]["seq"] if events else 0},
            ).json()
            events += page["events"]
            if not page["has_more"]:
                return events


def test_viewer_on_process_b_receives_frames_for_events_posted_to_process_a(pair):
    a, b = pair
    conversation = a.new_conversation("cross-process")
    with viewer(b, conversation) as socket:
        a.post_events(conversation, said("posted to A", "x1"))
        frame = read_frame(socket)
    assert (frame.first_seq, frame.last_seq) == (1, 1)
    assert "posted to A" in frame.html


def test_l3_resume_on_a_restarted_process_gets_exactly_what_it_missed(pair):
    a, b = pair
    conversation = a.new_conversation("resume")
    with viewer(b, conversation) as socket:
        a.post_events(conversation, [said("said-1", "r1"), said("said-2", "r2")])
        seen = read_until(socket, 2)[-1].last_seq
        b.kill()  # the viewer's process dies; the writer's goes on
        a.post_events(conversation, [said("said-3", "r3"), said("said-4", "r4")])
        b.start()
    with viewer(b, conversation, after=seen) as socket:
        replay = read_until(socket, 4)
        a.post_events(conversation, said("said-5", "r5"))
        live = read_frame(socket)
    missed = "".join(frame.html for frame in replay)
    assert replay[0].first_seq == seen + 1
    assert "said-3" in missed and "said-4" in missed
    assert "said-1" not in missed and "said-2" not in missed  # no duplicate entry
    assert (live.first_seq, live.last_seq) == (5, 5) and "said-5" in live.html


def test_rel3_concurrent_writers_on_both_processes_get_gap_free_seqs_exactly_once(pair):
    """Each event is posted twice at once, through A and through B (a client retrying
    on another process): every one is stored once, seqs run 1..N without a gap."""
    a, b = pair
    conversation = a.new_conversation("writers")
    per_writer, results, failures = 30, [], []

    def write(server, name: str) -> None:
        try:
            with server.api() as client:
                for n in range(per_writer):
                    batch = [said(f"{name} {n}", f"{name}-{n}")]
                    if n % 5 == 0:  # batches among single events
                        batch.append(said(f"{name} {n}b", f"{name}-{n}b"))
                    response = client.post(f"/conversations/{conversation}/events", json=batch)
                    results.append((response.status_code, response.json()))
        except Exception as problem:  # reported below, with the thread's name
            failures.append(f"{name}: {problem!r}")

    writers = [
        threading.Thread(target=write, args=(server, name))
        for name in ("left", "right")
        for server in (a, b)
    ]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()

    assert not failures
    assert {status for status, _ in results} == {200}
    expected = 2 * (per_writer + per_writer // 5)
    assert sum(body["accepted"] for _, body in results) == expected
    assert sum(body["duplicates"] for _, body in results) == expected
    events = all_events(a, conversation)
    assert [event["seq"] for event in events] == list(range(1, expected + 1))
    assert len({event["event_id"] for event in events}) == expected


@pytest.mark.parametrize("body_b", ["same", "other"])
def test_rel1_first_use_of_one_event_id_on_two_processes_at_once(pair, body_b):
    """Both requests wait on the conversation's row lock, then run one after the other:
    one is accepted; the other is a duplicate (same body) or a 409 (another body);
    never a 500 from the unique constraint."""
    a, b = pair
    conversation = a.new_conversation("race")
    answers: dict[str, httpx.Response] = {}

    def post(server, name: str, content: str) -> None:
        with server.api() as client:
            answers[name] = client.post(
                f"/conversations/{conversation}/events", json=said(content, "the-one")
            )

    posts = [
        threading.Thread(target=post, args=(a, "a", "hello")),
        threading.Thread(target=post, args=(b, "b", "hello" if body_b == "same" else "other")),
    ]
    with row_locked(a.database_url, "chatui_conversation", conversation):
        for thread in posts:
            thread.start()
        wait_for(
            lambda: backends_waiting_for_a_lock(a.database_url) == 2,
            "both processes to wait on the conversation's row lock",
        )
    for thread in posts:
        thread.join()

    outcomes = Counter(
        (response.status_code, response.json().get("accepted", response.json().get("error")))
        for response in answers.values()
    )
    if body_b == "same":
        assert outcomes == Counter({(200, 1): 1, (200, 0): 1})
    else:
        assert sorted(status for status, _ in outcomes) == [200, 409]
    assert [event["seq"] for event in all_events(a, conversation)] == [1]
