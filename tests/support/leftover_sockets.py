"""Every WebSocket a test opened through channels' communicator ends inside the test's
event loop, as a real server ends it: with `websocket.disconnect`.

Why: a consumer the server closed (4403, 4404, a refused origin) still waits for that
disconnect, and so does its channel layer's `receive`. A test that stops there leaves
both tasks to the event loop's teardown, which cancels them together; channels-redis's
`receive` then, now and again, never finishes, and the run hangs in asyncio's
`_cancel_all_tasks` (seen in `make test-cluster`: once in five full runs, and on the
third of a loop of tests/test_consumer.py). Sent the disconnect, the consumer leaves
the way it does in production, and nothing is pending when the loop closes.
"""

from __future__ import annotations

import contextlib

import pytest_asyncio
from asgiref.testing import ApplicationCommunicator
from channels.testing import WebsocketCommunicator

# Strong references: a communicator garbage-collected when the test returns cancels its
# application in `__del__` without waiting, which leaves exactly the cancellation above
# to the loop's teardown.
_opened: list[ApplicationCommunicator] = []
_init = ApplicationCommunicator.__init__


def _registered_init(self: ApplicationCommunicator, *args, **kwargs) -> None:
    _init(self, *args, **kwargs)
    _opened.append(self)


def track_communicators() -> None:
    """Note every communicator from now on (called once, by tests/conftest.py)."""
    ApplicationCommunicator.__init__ = _registered_init


async def end(communicator: WebsocketCommunicator) -> None:
    if communicator.future.done():
        return
    await communicator.send_input({"type": "websocket.disconnect", "code": 1000})
    with contextlib.suppress(Exception):  # the test has its verdict; this only tidies up
        await communicator.wait(timeout=2)


@pytest_asyncio.fixture
async def leftover_sockets_ended():
    """Added to every asyncio test by tests/conftest.py."""
    _opened.clear()
    yield
    try:
        for communicator in _opened:
            if isinstance(communicator, WebsocketCommunicator):
                await end(communicator)
    finally:
        _opened.clear()
