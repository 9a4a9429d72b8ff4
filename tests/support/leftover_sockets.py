"""Every WebSocket a test opened through channels' communicator ends inside the test's
event loop, as a real server ends it, and no task outlives the test.

Why: a consumer the server closed (4403, 4404, a refused origin) still waits for the
`websocket.disconnect`, and so does its channel layer's `receive`. A test that stopped
there left both to the event loop's teardown, which cancels every task and waits for
them without a limit. channels-redis's `receive` sits in a blocking BZPOPMIN, and
redis-py now and again swallows the cancellation of such a read (the task is left
"cancelling" and reads again): the run then hung in asyncio's `_cancel_all_tasks`
(seen in `make test-cluster` once in five full runs; reproduced on the third run of
a loop of tests/live/test_consumer.py, and every time for a refused origin).

So each asyncio test sends its sockets the disconnect, then cancels what is still
running, again if a cancellation was swallowed (a BZPOPMIN returns within 5 s), and
fails naming the tasks if some never end, rather than hanging the run.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest_asyncio
from asgiref.testing import ApplicationCommunicator
from channels.testing import WebsocketCommunicator

# Strong references: a communicator garbage-collected when its test returns cancels its
# application in `__del__` without waiting for it, leaving that to the loop's teardown.
_opened: list[ApplicationCommunicator] = []
_init = ApplicationCommunicator.__init__
#: Rounds of cancel-and-wait for tasks left running, and how long each waits.
CANCEL_ROUNDS = 4
ROUND_SECONDS = 2.0


def _registered_init(self: ApplicationCommunicator, *args, **kwargs) -> None:
    _init(self, *args, **kwargs)
    _opened.append(self)


def track_communicators() -> None:
    """Note every communicator from now on (called once, by tests/conftest.py)."""
    ApplicationCommunicator.__init__ = _registered_init


async def _send_disconnect(communicator: WebsocketCommunicator) -> None:
    if communicator.future.done():
        return
    await communicator.send_input({"type": "websocket.disconnect", "code": 1000})
    with contextlib.suppress(Exception):  # the test has its verdict; this only tidies up
        await asyncio.wait({communicator.future}, timeout=ROUND_SECONDS)


async def _cancel_leftovers() -> None:
    """Cancel the loop's other tasks until they end (bounded; see the module docstring)."""
    current = asyncio.current_task()
    for _ in range(CANCEL_ROUNDS):
        left = [task for task in asyncio.all_tasks() if task is not current and not task.done()]
        if not left:
            return
        for task in left:
            task.cancel()
        await asyncio.wait(left, timeout=ROUND_SECONDS)
    left = [task for task in asyncio.all_tasks() if task is not current and not task.done()]
    if left:
        raise RuntimeError(f"tasks still running after {CANCEL_ROUNDS} cancellations: {left}")


@pytest_asyncio.fixture
async def leftover_sockets_ended():
    """Added to every asyncio test by tests/conftest.py."""
    _opened.clear()
    yield
    try:
        for communicator in _opened:
            if isinstance(communicator, WebsocketCommunicator):
                await _send_disconnect(communicator)
    finally:
        _opened.clear()
    await _cancel_leftovers()
