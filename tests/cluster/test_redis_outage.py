"""Redis stopped and started under a serving process (docs/SCALING.md#cluster-under-fire, issue 28
"Cluster under fire").

Found by bench/cluster_faults.py (Redis shut down for 5 s under 100 viewers):
every WebSocket handshake answered a bare 500 while Redis was away (383 in 5 s); the
log took 1,864 tracebacks for the one outage; and Redis restarts empty, so a socket
that outlived the outage had lost its group memberships and would stay silent.

Each test runs a daphne of its own on a Redis of its own (so stopping it disturbs no
other test), sharing the tests' PostgreSQL.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from bench.cluster_faults import OwnRedis
from tests.support.cluster import FRAME_MARKER, viewer
from tests.support.live import LiveServer

#: Close codes the htmx ws extension reconnects on (its onclose).
RECONNECTED_ON = {1006, 1011, 1012, 1013}
PATIENCE = 30.0


@pytest.fixture
def redis(tmp_path) -> Iterator[OwnRedis]:
    own = OwnRedis(tmp_path)
    own.start()
    yield own
    own.stop()


@pytest.fixture
def server(tmp_path, redis) -> Iterator[LiveServer]:
    live = LiveServer(tmp_path / "daphne", extra_env={"REDIS_URL": redis.url})
    with live.serving():
        yield live


def log_of(server: LiveServer) -> str:
    return (server.data_dir / "daphne.log").read_text(errors="replace")


def handshake_answer(server: LiveServer, conversation: str) -> str:
    """What a page opening its socket gets: 'http <status>' or 'close <code>' or 'open'."""
    try:
        with viewer(server, conversation) as socket:
            try:
                socket.recv(timeout=5)
            except ConnectionClosed as closed:
                return f"close {closed.rcvd.code if closed.rcvd else 1006}"
            except TimeoutError:
                return "open"
            return "open"
    except InvalidStatus as refused:
        return f"http {refused.response.status_code}"


def test_handshake_while_redis_is_down_is_closed_with_1013_never_500(server, redis):
    conversation = server.new_conversation("outage")
    redis.stop()
    answers = [handshake_answer(server, conversation) for _ in range(3)]
    # Accepted and closed with 1013 ("try again later"): the htmx ws extension
    # reconnects on it, within a second (the accept resets its backoff).
    assert answers == ["close 1013"] * 3, answers


def test_one_log_line_per_redis_outage_and_one_at_its_end(server, redis):
    conversation = server.new_conversation("outage")
    with viewer(server, conversation) as socket:
        server.post_events(conversation, {"type": "user.message", "content": "before"})
        socket.recv(timeout=PATIENCE)
        redis.stop()
        for n in range(5):  # frames that cannot be sent, handshakes that cannot join
            server.post_events(conversation, {"type": "user.message", "content": f"down {n}"})
            handshake_answer(server, conversation)
        redis.start()
        deadline = time.monotonic() + PATIENCE
        while "reachable again" not in log_of(server):
            assert time.monotonic() < deadline, log_of(server)[-3000:]
            time.sleep(0.1)
    log = log_of(server)
    assert "Traceback" not in log, log[-3000:]
    assert log.count("channel layer unreachable") == 1, log[-3000:]
    assert log.count("channel layer reachable again") == 1, log[-3000:]


def fates_after(server: LiveServer, conversation: str, sockets: list) -> list[str]:
    """Post an event; what each socket then does: gets its frame, is closed with a code
    the page reconnects on (and resumes by seq), or neither."""
    last = server.post_events(conversation, {"type": "user.message", "content": "after"})
    fates = []
    for socket in sockets:
        try:
            found = FRAME_MARKER.match(socket.recv(timeout=10))
            fates.append("frame" if found and int(found[2]) >= last["last_seq"] else "other")
        except ConnectionClosed as closed:
            code = closed.rcvd.code if closed.rcvd else 1006
            fates.append("resumable" if code in RECONNECTED_ON else f"closed {code}")
        except TimeoutError:
            fates.append("silent")
    return fates


def open_viewers(stack: ExitStack, server: LiveServer, conversation: str, count: int) -> list:
    sockets = [stack.enter_context(viewer(server, conversation)) for _ in range(count)]
    server.post_events(conversation, {"type": "user.message", "content": "before"})
    for socket in sockets:
        socket.recv(timeout=PATIENCE)
    return sockets


def test_socket_whose_redis_came_back_empty_is_closed_for_resume_or_gets_frames(server, redis):
    """Redis restarts empty. A socket whose receive never failed across it (redis-py
    retried the read; here: Redis flushed, the same loss without a lost connection)
    is in no group any more: it must be closed with a code the page reconnects on,
    or still get the next frame — never stay silent."""
    conversation = server.new_conversation("empty")
    with ExitStack() as stack:
        sockets = open_viewers(stack, server, conversation, 3)
        subprocess.run(["redis-cli", "-p", str(redis.port), "flushall"], check=True)
        time.sleep(3)  # the process notices within its mark's period (1 s)
        fates = fates_after(server, conversation, sockets)
    assert set(fates) <= {"frame", "resumable"}, fates


def test_sockets_open_across_a_redis_restart_are_closed_for_resume(server, redis):
    conversation = server.new_conversation("restart")
    with ExitStack() as stack:
        sockets = open_viewers(stack, server, conversation, 6)
        redis.stop()
        redis.start()
        time.sleep(2)  # the sockets' receives meet the restart
        fates = fates_after(server, conversation, sockets)
    assert set(fates) <= {"frame", "resumable"}, fates
