"""Tests that run code on chatui.writer's threads (which outlive a test)."""

from __future__ import annotations

from django.db import connection


def close_connection() -> None:
    """Close the calling thread's connection: run it with `on_writer` at a test's end,
    so the writer thread holds no test database open (PostgreSQL refuses to drop it)."""
    connection.close()
