"""P9: what the verifiable log (docs/auditing.md#verifying-a-log) costs ingest per event.

    .venv/bin/python bench/p9_chain_cost.py [--events 20000] [--repeat 5] [--ingest 6]

The chain's own work, in this process, on P2's events (`common.EventStream`, parsed and
made into log rows as ingest makes them): each event's canonical form, content hash and
chain hash (`chatui.ingest.chain.chain`), best CPU time of `--repeat` passes, per event;
the same events through `rfc8785` alone (what the fast path saves); and one checkpoint
signed (Ed25519, a C2SP note), which ingest pays at a run's end and at most once a minute.
Compare with P2's daphne CPU per event (`p2_ingest_throughput.py`, or counted in
instructions by `instructions.py`, before and after: docs/PERFORMANCE.md#p9).

`--ingest N`: the whole of `ingest` in this process (parse, sequence, insert, project,
index; no HTTP and no frames, so the chain's share comes out larger than of P2's CPU), in
batches of 100 of the same events into a fresh SQLite database, N rounds (after one to
warm up) alternating with the chain on and off (`chain.chain` and the checkpoints stubbed
out), so both see the same load: the median CPU per event of each, and the chain's share.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "clients" / "python")]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
if "--ingest" in sys.argv:  # a fresh database, before Django reads the setting
    import tempfile

    SCRATCH = Path(tempfile.mkdtemp(prefix="chatui-p9-"))
    os.environ["DATABASE_URL"] = f"sqlite:///{SCRATCH / 'p9.sqlite3'}"
    os.environ["CHATUI_SIGNING_KEY_FILE"] = str(SCRATCH / "signing_key")

import django  # noqa: E402

django.setup()

import rfc8785  # noqa: E402
from chatui_client.proof import Signer  # noqa: E402
from common import EventStream, machine_line, table  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402
from django.conf import settings  # noqa: E402
from django.utils import timezone  # noqa: E402

from chatui.ingest import chain as chain_module  # noqa: E402
from chatui.ingest.chain import chain, event_content  # noqa: E402
from chatui.ingest.events import parse_events  # noqa: E402
from chatui.models import Conversation, Event  # noqa: E402


def rows(count: int) -> list[Event]:
    conversation = Conversation(title="bench")
    events = parse_events(
        EventStream("p9").take(count), max_event_bytes=settings.CHATUI_MAX_EVENT_BYTES
    )
    now = timezone.now()
    return [
        Event.row(conversation, seq, event, timestamp=event.timestamp or now, received_at=now)
        for seq, event in enumerate(events, start=1)
    ]


def best(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times)


def ingest_rounds(rounds: int, events: int) -> list[list[object]]:
    import shutil

    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from chatui.ingest.service import ingest

    call_command("migrate", verbosity=0)
    owner = get_user_model().objects.create_user("p9")
    body = EventStream("p9").take(events)
    real = (chain_module.chain, chain_module.checkpoint_due)
    off = (lambda rows, previous: previous, lambda *args, **kwargs: False)
    spent = {"on": [], "off": []}
    try:
        for round_ in range(-1, rounds):  # round -1 warms up (queries compiled, caches)
            mode = "on" if round_ % 2 == 0 else "off"
            chain_module.chain, chain_module.checkpoint_due = real if mode == "on" else off
            conversation = Conversation.objects.create(owner=owner, title=f"p9 {round_}")
            start = time.process_time()
            for at in range(0, len(body), 100):
                ingest(conversation, body[at : at + 100])
            if round_ >= 0:
                spent[mode].append((time.process_time() - start) / len(body) * 1e6)
    finally:
        chain_module.chain, chain_module.checkpoint_due = real
        shutil.rmtree(SCRATCH, ignore_errors=True)
    on, off_ = statistics.median(spent["on"]), statistics.median(spent["off"])
    return [
        ["ingest, batches of 100, chain on (median of rounds)", f"{on:.1f}"],
        ["ingest, batches of 100, chain off (median of rounds)", f"{off_:.1f}"],
        ["the chain's share of ingest's CPU", f"{(on - off_) / off_ * 100:.1f} %"],
        [
            "every round, on / off",
            " ".join(f"{v:.0f}" for v in spent["on"])
            + " / "
            + " ".join(f"{v:.0f}" for v in spent["off"]),
        ],
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ingest", type=int, default=0, metavar="ROUNDS")
    options = parser.parse_args()
    log = rows(options.events)
    chained = best(options.repeat, lambda: chain(log, ""))
    reference = best(options.repeat, lambda: [rfc8785.dumps(event_content(row)) for row in log])
    signer = Signer("bench.example", Ed25519PrivateKey.generate())
    note = "bench.example\nconversation x\nsize 1\nchain 00\ntime 2026-01-01T00:00:00Z\n"
    signed = best(options.repeat, lambda: [signer.sign(note) for _ in range(1000)]) / 1000
    print(f"P9, the chain's CPU per event · {machine_line()}")
    print(
        table(
            ["what", "µs per event"],
            [
                [
                    "canonical form + content hash + chain hash (as ingest)",
                    f"{chained / len(log) * 1e6:.1f}",
                ],
                ["the same form by rfc8785 alone (no hashes)", f"{reference / len(log) * 1e6:.1f}"],
                ["one checkpoint signed (per run end / minute)", f"{signed * 1e6:.1f}"],
                *(ingest_rounds(options.ingest, options.events) if options.ingest else []),
            ],
        )
    )


if __name__ == "__main__":
    main()
