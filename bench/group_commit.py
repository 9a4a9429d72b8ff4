"""An experiment, not the app: would group commit make single events cheaper on SQLite?

    .venv/bin/python bench/group_commit.py [--events 800] [--rounds 2]

Group commit: the writer thread would take the requests waiting for it into one
transaction, each in a savepoint, and answer them after the one COMMIT (issue 12 lists
it; docs/performance-history.md measured it). This plays the P2 event stream
(`common.EventStream`, four conversations taking turns) through
`chatui.ingest.service.ingest` in process, on one kept
connection as the writer thread has, with the broadcast switched off (only the
transaction is measured), four ways: each event alone (as shipped), and groups of 2 or 4
events per transaction, with and without a savepoint per event. It reports CPU and wall
time per event; if COMMIT (SQLite's WAL write) were a large share of a single event, the
groups would be cheaper.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import EventStream, loadavg, machine_line, table
from profile_ingest import setup_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    setup_django(Path(tempfile.mkdtemp(prefix="chatui-group-commit-")))

    from django.contrib.auth import get_user_model
    from django.db import transaction

    from chatui.ingest import service as ingest_module
    from chatui.ingest.service import ingest
    from chatui.models import Conversation

    # The transaction only: no frame, no row (nobody watches these anyway).
    ingest_module.events_ingested.receivers = []
    ingest_module.events_ingested.sender_receivers_cache.clear()
    user = get_user_model().objects.create(username="group-commit")

    def workload() -> list[tuple[Conversation, dict]]:
        conversations = [Conversation.objects.create(owner=user, title="g") for _ in range(4)]
        streams = [EventStream(f"g{n}") for n in range(4)]
        return [(conversations[n % 4], streams[n % 4].take(1)[0]) for n in range(args.events)]

    def alone(items: list[tuple[Conversation, dict]]) -> None:
        for conversation, event in items:
            ingest(conversation, event)

    def grouped(size: int, savepoint: bool) -> Callable[[list], None]:
        def run(items: list[tuple[Conversation, dict]]) -> None:
            for start in range(0, len(items), size):
                with transaction.atomic():  # one thread here: no turn to take
                    for conversation, event in items[start : start + size]:
                        if savepoint:
                            with transaction.atomic():
                                ingest(conversation, event)
                        else:
                            ingest(conversation, event)

        return run

    ways = [
        ("each event alone (shipped)", alone),
        ("groups of 2, a savepoint each", grouped(2, True)),
        ("groups of 2, no savepoint", grouped(2, False)),
        ("groups of 4, a savepoint each", grouped(4, True)),
    ]
    rows = []
    for round_ in range(1, args.rounds + 1):
        for name, way in ways:
            items = workload()
            cpu, wall = time.process_time(), time.perf_counter()
            way(items)
            cpu = (time.process_time() - cpu) * 1000 / len(items)
            wall = (time.perf_counter() - wall) * 1000 / len(items)
            rows.append([round_, name, cpu, wall])
    print("group commit (experiment) ·", machine_line())
    print(table(["round", "transactions", "CPU ms/event", "wall ms/event"], rows))
    print(f"{args.events} events per way and round; load {loadavg()}")


if __name__ == "__main__":
    sys.exit(main())
