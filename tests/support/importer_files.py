"""Hostile transcript files for every import format, and a spy on a format's parser."""

from __future__ import annotations

import pytest
from django.db import connection

from chatui import importers

#: One user message per format, its content and timestamp as JSON text.
HOSTILE_TEMPLATES = {
    "openai": '[{{"role": "user", "content": {value}, "timestamp": {ts}}}]',
    "anthropic": '{{"messages": [{{"role": "user", "content": {value}, "timestamp": {ts}}}]}}',
    "legacy": '[{{"role": "user", "content": {value}, "timestamp": {ts}}}]',
    "agentspine": (
        '{{"type": "agent_start"}}\n'
        '{{"type": "message_end", "role": "user", "content": {value}, "timestamp": {ts}}}\n'
    ),
    "chatui": '{{"type": "user.message", "content": {value}, "timestamp": {ts}}}\n',
    "agui": (
        '{{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}}\n'
        '{{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", '
        '"delta": {value}, "timestamp": {ts}}}\n'
    ),
}


FINE_TIME = '"2026-01-01T00:00:00Z"'


#: name: (content, timestamp, what the error says)
HOSTILE_VALUES = {
    "nesting-beyond-the-parser": ("[" * 50_000 + "]" * 50_000, FINE_TIME, "nested deeper than 64"),
    "nesting-beyond-the-api": ("[" * 70 + "]" * 70, FINE_TIME, "nested deeper than 64 levels"),
    "integer-of-5000-digits": ("1" * 5000, FINE_TIME, "a number has too many digits"),
    "nan": ("NaN", FINE_TIME, "NaN is not a JSON number"),
    "infinity": ('"hi"', "-Infinity", "-Infinity is not a JSON number"),
    "float-overflowing-to-infinity": ("1e999", FINE_TIME, "a number is too large to be finite"),
    "lone-surrogate": ('"half a \\udc00 pair"', FINE_TIME, "a lone surrogate (\\udc00)"),
    "time-before-year-1-utc": ('"hi"', '"0001-01-01T00:00:00+05:00"', "'timestamp' must be"),
    "time-past-year-9999-utc": ('"hi"', '"9999-12-31T23:59:59-05:00"', "'timestamp' must be"),
    "unix-time-overflow": ('"hi"', "1e300", "'timestamp' must be"),
}


#: format: (a file of the wrong shape, what the error says)
WRONG_SHAPES = {
    "openai": ('{"messages": {"0": "hi"}}', "expected a JSON list of messages"),
    "anthropic": ('"hello"', "expected a JSON list of messages"),
    "legacy": ('{"messages": [["user", "hi"]]}', "messages[0]: a message must be a JSON object"),
    "agentspine": ('[{"type": "agent_start"}]\n', "line 1: each line must be a JSON object"),
    "chatui": ('{"type": 7}\n', "line 1: 'type' must be a string"),
    "agui": (
        '{"type": "RUN_STARTED"}\n["RUN_FINISHED"]\n',
        "line 2: each line must be a JSON object",
    ),
}


def hostile_files() -> list[tuple[str, str, bytes, str]]:
    """(format, case, file, what the error says) for every format and hostile case."""
    cases = []
    for fmt, template in HOSTILE_TEMPLATES.items():
        for name, (value, ts, says) in HOSTILE_VALUES.items():
            cases.append((fmt, name, template.format(value=value, ts=ts).encode(), says))
        shape, says = WRONG_SHAPES[fmt]
        cases.append((fmt, "wrong-shape", shape.encode(), says))
    return cases


HOSTILE_FILES = [pytest.param(*case, id=f"{case[0]}-{case[1]}") for case in hostile_files()]


def spy_on_parser(monkeypatch, fmt: str) -> list[bool]:
    """Record, each time `fmt`'s real parser runs, whether a transaction is open."""
    seen: list[bool] = []
    real = importers.PARSERS[fmt]

    def parse(raw: bytes):
        seen.append(connection.in_atomic_block)
        return real(raw)

    monkeypatch.setitem(importers.PARSERS, fmt, parse)
    return seen
