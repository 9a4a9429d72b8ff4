"""Tests that run code on chatui.ingest.writer_threads's threads (which outlive a test)."""

from __future__ import annotations

import asyncio
import threading

from django.db import connection

from chatui.ingest.writer_threads import on_writer, writer_count


async def close_writer_connections() -> None:
    """Close every writer thread's connection at a test's end, so none holds the test
    database open (PostgreSQL refuses to drop a database someone is connected to).
    Each thread waits at a barrier for the others: one close lands on each thread."""
    count = writer_count()
    barrier = threading.Barrier(count)

    def close_then_wait() -> None:
        connection.close()
        barrier.wait(timeout=10)

    await asyncio.gather(*(on_writer(close_then_wait) for _ in range(count)))
