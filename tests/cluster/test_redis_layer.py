"""The Redis channel layer keeps quiet sockets open (docs/SCALING.md,
docs/rendering.md#live-updates).

channels-redis waits for a process's messages with a blocking BZPOPMIN of
`RedisChannelLayer.brpop_timeout` (5 s) and loops. redis-py 8 reads with a 5 s socket
timeout by default: the read timed out just before Redis answered "nothing", the error
ended the consumer holding the layer's receive lock, and daphne closed its socket. So a
process with quiet viewers lost one every 5 s (a viewer of the flood test, a held socket
of the cap test). config/settings.py gives the layer a socket timeout longer than that wait.
"""

from __future__ import annotations

import time

import pytest
from channels_redis.core import RedisChannelLayer

from tests.support.cluster import read_frame, viewer
from tests.support.live import LiveServer


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with LiveServer(tmp_path_factory.mktemp("redis-layer")).serving() as live:
        yield live


def test_viewer_idle_longer_than_the_layers_blocking_receive_still_gets_frames(server):
    conversation = server.new_conversation("quiet")
    with viewer(server, conversation) as socket:
        # Not a speed claim: the socket must outlive a whole blocking receive and
        # the next one's start, with no message for this process meanwhile.
        time.sleep(RedisChannelLayer.brpop_timeout + 3)
        server.post_events(conversation, {"type": "user.message", "content": "after quiet"})
        frame = read_frame(socket)
    assert "after quiet" in frame.html
