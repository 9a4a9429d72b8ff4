"""REL2 under repeated crashes: a real daphne killed with SIGKILL mid-burst, three times.

Posters in threads send batches with deterministic event_ids through `chatui.client`,
which retries with the same body on dropped connections. The server restarts each
time on the same port and data folder. A request may be committed and never answered;
its retry must then count as a duplicate. In the end every event is stored exactly
once, with seqs 1..N and no gap. (tests/web/test_client.py kills the session's server once
under a single runtime; this one repeats it under concurrent writers.)
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import httpx
import pytest

from chatui.client import ChatuiClient, PostResult, RetryPolicy, make_event
from tests.support.delivery import assert_exactly_once
from tests.support.live import LiveServer

POSTERS = 3
BATCHES = 24  # per poster: enough left after the last kill (ingest got faster; 12 could end first)
BATCH_SIZE = 20
KILLS = 3
# Patient enough to outlast a restart (daphne and Django start in a few seconds).
PATIENT = RetryPolicy(max_attempts=1000, base_delay=0.05, max_delay=0.3, total=180)


class CountingTransport(httpx.HTTPTransport):
    """The real HTTP transport, counting the attempts that failed on the wire."""

    def __init__(self) -> None:
        super().__init__()
        self.failures = 0
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return super().handle_request(request)
        except httpx.TransportError:
            with self._lock:
                self.failures += 1
            raise


@dataclass
class Posters:
    server: LiveServer
    conversation_id: str
    transports: list[CountingTransport] = field(default_factory=list)
    results: list[PostResult] = field(default_factory=list)
    problems: list[BaseException] = field(default_factory=list)
    finished: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def acknowledged(self) -> int:
        with self.lock:
            return len(self.results)

    def running(self) -> bool:
        with self.lock:
            return self.finished < POSTERS and not self.problems

    def failures(self) -> int:
        return sum(transport.failures for transport in self.transports)

    def post_all(self, poster: int) -> None:
        transport = CountingTransport()  # one each: a client closes its transport when done
        with self.lock:
            self.transports.append(transport)
        try:
            client = ChatuiClient(
                self.server.url, self.server.token, retry=PATIENT, timeout=5, transport=transport
            )
            with client:
                for number in range(BATCHES):
                    result = client.post_events(self.conversation_id, batch(poster, number))
                    with self.lock:
                        self.results.append(result)
        except BaseException as problem:  # reported by the test
            with self.lock:
                self.problems.append(problem)
        finally:
            with self.lock:
                self.finished += 1


def all_event_ids() -> list[str]:
    return [e["event_id"] for p in range(POSTERS) for n in range(BATCHES) for e in batch(p, n)]


def batch(poster: int, number: int) -> list[dict]:
    return [
        make_event(
            "user.message",
            event_id=f"p{poster}-b{number:02d}-e{index:02d}",
            content=f"poster {poster}, batch {number}, event {index}",
        )
        for index in range(BATCH_SIZE)
    ]


@pytest.fixture
def server(tmp_path):
    """Its own server: the session's shared one is not killed three times."""
    with LiveServer(tmp_path / "fault").serving() as live:
        yield live


def wait_until(condition, what: str, limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.005)


def test_rel2_server_killed_three_times_mid_burst_keeps_every_event_exactly_once(server):
    conversation_id = server.new_conversation("crashes")
    posters = Posters(server, conversation_id)
    threads = [threading.Thread(target=posters.post_all, args=(n,)) for n in range(POSTERS)]
    for thread in threads:
        thread.start()
    try:
        for kill in range(1, KILLS + 1):
            # Spread the kills over the burst: after a quarter, a half, three quarters.
            target = kill * POSTERS * BATCHES // (KILLS + 1)
            wait_until(
                lambda target=target: posters.acknowledged() >= target or not posters.running(),
                f"{target} acknowledged batches",
            )
            assert posters.running(), posters.problems or "the burst ended before the kill"
            server.kill()  # mid-burst: some requests are in flight, maybe committed
            server.start()  # same port, same data folder
        for thread in threads:
            thread.join(timeout=300)
    finally:
        if server.process is None:
            server.start()
    assert not posters.problems
    assert posters.failures() >= KILLS  # each outage was felt by a poster
    sent = all_event_ids()
    acknowledged = [event_id for result in posters.results for event_id in result.event_ids]
    assert sorted(acknowledged) == sorted(sent)
    assert_exactly_once(server, conversation_id, sent)
    retried = sum(result.duplicates for result in posters.results)
    print(f"{posters.failures()} failed attempts; {retried} events committed, answer lost")
