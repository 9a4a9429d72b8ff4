"""Live frames in cluster mode: one message per process per group, fanned out in the
process (chatui.live.fanout, docs/SCALING.md#fan-out).

Found by bench/cluster_faults.py: with channels-redis's layer every frame went to every
socket's own Redis channel, all of a process's through one serial receive, and frames
reached 300 viewers 28 s late at p99 before any fault. Now a process subscribes once to
a group whatever its number of viewers, a frame is one PUBLISH per group, and after a cut
subscription (Redis stopped, restarted faster than anyone noticed, or the connection
alone dropped) the open sockets catch up from the event log instead of staying silent
or all handshaking again.

Each test runs a daphne of its own on a Redis of its own (pub/sub channels are
server-wide, and one test cuts connections), sharing the tests' PostgreSQL.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
import redis
from websockets.exceptions import ConnectionClosed

from bench.cluster_faults import OwnRedis
from chatui.live.broadcast import group_name
from chatui.live.fanout import CHANNEL_PREFIX, LINGER_SECONDS
from tests.support.cluster import FRAME_MARKER, PATIENCE, viewer
from tests.support.live import LiveServer

#: Close codes the htmx ws extension reconnects on (its onclose).
RECONNECTED_ON = {1006, 1011, 1012, 1013}
VIEWERS = 5


@pytest.fixture
def redis_server(tmp_path) -> Iterator[OwnRedis]:
    own = OwnRedis(tmp_path)
    own.start()
    yield own
    own.stop()


@pytest.fixture
def server(tmp_path, redis_server) -> Iterator[LiveServer]:
    live = LiveServer(tmp_path / "daphne", extra_env={"REDIS_URL": redis_server.url})
    with live.serving():
        yield live


def channel_of(conversation: str) -> str:
    return CHANNEL_PREFIX + group_name(conversation)


def subscribers(redis_server: OwnRedis, conversation: str) -> int:
    client = redis.Redis(port=redis_server.port)
    [(_, count)] = client.pubsub_numsub(channel_of(conversation))
    return count


def until(condition, what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def open_viewers(stack: ExitStack, server: LiveServer, conversation: str) -> list:
    sockets = [stack.enter_context(viewer(server, conversation)) for _ in range(VIEWERS)]
    server.post_events(conversation, {"type": "user.message", "content": "before"})
    for socket in sockets:
        socket.recv(timeout=PATIENCE)
    return sockets


def test_a_process_subscribes_once_per_group_whatever_its_number_of_viewers(server, redis_server):
    conversation = server.new_conversation("fan-out")
    with ExitStack() as stack:
        open_viewers(stack, server, conversation)
        assert subscribers(redis_server, conversation) == 1
    # The last viewer gone, the process leaves the group's channel (after a linger).
    time.sleep(LINGER_SECONDS)
    until(lambda: subscribers(redis_server, conversation) == 0, "still subscribed")


def test_a_frame_is_published_once_per_group_and_reaches_every_viewer(server, redis_server):
    conversation = server.new_conversation("fan-out")
    listener = redis.Redis(port=redis_server.port).pubsub()
    listener.subscribe(channel_of(conversation))
    listener.get_message(timeout=5)  # the confirmation
    with ExitStack() as stack:
        sockets = open_viewers(stack, server, conversation)
        published = []
        while (message := listener.get_message(timeout=1)) is not None:
            published.append(message)  # the frame of "before", as sent
        done = server.post_events(conversation, {"type": "user.message", "content": "after"})
        shown = [FRAME_MARKER.match(socket.recv(timeout=PATIENCE)) for socket in sockets]
        while (message := listener.get_message(timeout=1)) is not None:
            published.append(message)
    assert all(found and int(found[2]) == done["last_seq"] for found in shown), shown
    # Two events, two frames, each published once for all five viewers.
    assert len(published) == 2, [message["data"][:80] for message in published]


def test_sockets_whose_relay_connection_was_cut_are_never_left_silent(server, redis_server):
    """The relay's connection dropped while Redis stayed up (as after a restart quicker
    than anyone noticed): what was published meanwhile is lost for the process, so its
    sockets must catch up and get the next frame, or be closed with a code the page
    resumes on — never stay silent; and the process says so in one line, without a
    traceback."""
    conversation = server.new_conversation("cut")
    with ExitStack() as stack:
        sockets = open_viewers(stack, server, conversation)
        kill = ["redis-cli", "-p", str(redis_server.port), "client", "kill", "type", "pubsub"]
        subprocess.run(kill, check=True, capture_output=True)
        time.sleep(2)
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
    assert set(fates) <= {"frame", "resumable"}, fates
    log = (server.data_dir / "daphne.log").read_text(errors="replace")
    assert log.count("live relay's connection was cut") == 1, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
    # And a page opening now is served again, with frames.
    with viewer(server, conversation, after=last["last_seq"]) as socket:
        more = server.post_events(conversation, {"type": "user.message", "content": "again"})
        found = FRAME_MARKER.match(socket.recv(timeout=PATIENCE))
    assert found and int(found[2]) == more["last_seq"]


def test_viewers_open_across_a_redis_outage_catch_up_without_reconnecting(server, redis_server):
    """Redis stopped for a while, events written meanwhile, Redis started again (empty):
    each open socket gets what it missed from the event log once its process has
    subscribed again, without a new handshake — 300 sockets closed for resume had cost
    300 handshakes at once (bench/cluster_faults.py)."""
    conversation = server.new_conversation("outage")
    with ExitStack() as stack:
        sockets = open_viewers(stack, server, conversation)
        redis_server.stop()
        for n in range(3):
            done = server.post_events(conversation, {"type": "user.message", "content": f"{n}"})
        redis_server.start()
        shown = []
        for socket in sockets:
            last = 0
            while last < done["last_seq"]:
                found = FRAME_MARKER.match(socket.recv(timeout=PATIENCE))
                assert found, "a frame starts with its seq marker"
                last = int(found[2])
            shown.append(last)
    assert shown == [done["last_seq"]] * VIEWERS
