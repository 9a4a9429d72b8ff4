"""What the server stored, read back through the events API (REL1, REL2 checks)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable


def stored_events(server, conversation_id: str) -> list[dict]:
    """Every stored event of the conversation in seq order (all pages of the API)."""
    events: list[dict] = []
    after = 0
    with server.api() as api:
        while True:
            response = api.get(f"/conversations/{conversation_id}/events", params={"after": after})
            response.raise_for_status()
            page = response.json()
            events += page["events"]
            if not (page.get("has_more") and page["events"]):
                return events
            after = page["events"][-1]["seq"]


def assert_exactly_once(server, conversation_id: str, event_ids: Iterable[str]) -> list[dict]:
    """Seqs run 1..N without a gap, and the stored event_ids are `event_ids`, each once."""
    events = stored_events(server, conversation_id)
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    counts = Counter(event["event_id"] for event in events)
    assert counts == Counter(event_ids), "every event exactly once, nothing else"
    return events
