"""chatui event JSONL → chatui events: what `export_transcript --format events` writes.

One event per line, exactly as a runtime would post it (docs/events.md#event-types). The events
are ingested as they are — their own `event_id`, `run_id` and `timestamp`
are kept, so an exported conversation imported into a fresh one gives equal
messages, and no extra run is wrapped around them (the runs are in the file).
An event without an `event_id` gets `import:<digest>:<n>`, and one without a
`timestamp` is stamped as the other formats are (files.py), so a re-import is
still all duplicates. Validation is `ingest`'s own; its errors name the line.
The export's proof (each line's `chatui_proof`, the `chatui_checkpoint` lines after the
events: docs/auditing.md#verifying-an-export) is the exported log's, not the new one's: it
is left out.
"""

from __future__ import annotations

from .files import Builder, Draft, TranscriptError, decode, jsonl_lines, source_time


def parse(raw: bytes) -> Draft:
    builder = Builder(raw, one_run=False)
    for number, line in jsonl_lines(decode(raw)):
        if "chatui_checkpoint" in line:
            continue
        event = {key: value for key, value in line.items() if key != "chatui_proof"}
        where = f"line {number}"
        if not isinstance(event.get("type"), str):
            raise TranscriptError("'type' must be a string", where=where)
        builder.add(event, where=where, at=_time(event, where))
    return builder.finish(keep_ids=True)


def _time(event: dict, where: str):
    # Only the contract's own `timestamp` (ISO 8601) dates a chatui event.
    if "timestamp" not in event:
        return None
    return source_time({"timestamp": event["timestamp"]}, where)
