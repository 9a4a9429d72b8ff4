"""AgentSpine event JSONL [001] → chatui events: the stream, unchanged.

One AgentSpine event per line, exactly as its `Agent` emits them (see the real
captures in tests/fixtures/agentspine/): `agent_start`, per round `turn_start`,
`message_start`/`message_update`/`message_end`, `tool_execution_start`/
`tool_execution_update`/`tool_execution_end`, `turn_end`; then `agent_end`.

chatui's ingest speaks this dialect itself (SPEC §2 aliases, chatui.ingest.events and
chatui.ingest.projection), so a file is imported exactly as a live runtime posts it: the
same mapping, the same message naming, the same failure rules. The importer only
checks each line is an event with a type, stamps ids and times (base.py) and wraps
the file in one run; an event type chatui does not know is skipped and counted.
`where` = `line N`.
"""

from __future__ import annotations

from chatui.ingest.dialects.agentspine import ALIASES

from .base import Builder, Draft, TranscriptError, decode, jsonl_lines, source_time


def parse(raw: bytes) -> Draft:
    builder = Builder(raw)
    for number, event in jsonl_lines(decode(raw)):
        where = f"line {number}"
        kind = event.get("type")
        if not isinstance(kind, str) or not kind:
            raise TranscriptError("'type' must be a non-empty string", where=where)
        if kind not in ALIASES:  # a newer AgentSpine's event: counted, not shown
            builder.skip(f"{kind[:60]} event")
            continue
        at = source_time(event, where)
        builder.add({k: v for k, v in event.items() if k != "timestamp"}, where=where, at=at)
    return builder.finish()
