"""chatui's ASGI app plus commit-time stamps, for the benchmarks only.

    daphne bench.instrumented_asgi:application   (CHATUI_BENCH_STAMPS=/path/file)

Exactly `config.asgi.application`; in addition two receivers of the app's own
`events_ingested` signal (sent by `chatui.ingest.service` in `transaction.on_commit`) append
a line per committed ingest to the file named by CHATUI_BENCH_STAMPS:

    C <conversation> <first_seq> <last_seq> <time.time()>   committed, before the broadcast
    B <conversation> <first_seq> <last_seq> <time.time()>   the broadcast has returned

so P1 can measure from the moment an event is really accepted (committed), not only
from when its HTTP answer reaches the client; and a line per garbage-collector pause of
2 ms or more (`G <generation> <start> <ms>`). No app code is changed.
"""

from __future__ import annotations

import gc
import os
import time

from config.asgi import application  # noqa: F401 — also sets Django up, so first

# isort: split
from chatui.ingest.service import events_ingested

_out = open(os.environ["CHATUI_BENCH_STAMPS"], "a", buffering=1)  # noqa: SIM115


def _stamp(kind: str):
    def receiver(sender, conversation_id, first_seq, last_seq, **kwargs) -> None:
        _out.write(f"{kind} {conversation_id} {first_seq} {last_seq} {time.time():.6f}\n")

    return receiver


_committed = _stamp("C")
_broadcast_done = _stamp("B")
events_ingested.connect(_committed, dispatch_uid="bench.committed")
events_ingested.connect(_broadcast_done, dispatch_uid="bench.broadcast_done")
# Receivers run in the order they connected: the commit stamp must come before the
# broadcaster (chatui.live.broadcast.broadcast, connected when the app loaded).
with events_ingested.lock:
    committed = [r for r in events_ingested.receivers if r[0][0] == "bench.committed"]
    events_ingested.receivers[:] = committed + [
        r for r in events_ingested.receivers if r[0][0] != "bench.committed"
    ]
    events_ingested.sender_receivers_cache.clear()


# Garbage-collector pauses of 2 ms or more, as `G <generation> <start time.time()> <ms>`,
# to tell them apart from other stalls when a latency spikes.
_gc_started: list[float] = [0.0]


def _gc_callback(phase: str, info: dict) -> None:
    if phase == "start":
        _gc_started[0] = time.perf_counter()
        return
    took = (time.perf_counter() - _gc_started[0]) * 1000
    if took >= 2:
        _out.write(f"G {info['generation']} {time.time() - took / 1000:.6f} {took:.2f}\n")


gc.callbacks.append(_gc_callback)


# -- opt-in experiments (CHATUI_BENCH_EXPERIMENT, comma-separated; off by default) ------
# They measure what a suggested change would gain before anyone makes it in the app.
# The published figures are taken without any of them.

_experiments = set(filter(None, os.environ.get("CHATUI_BENCH_EXPERIMENT", "").split(",")))

if "frame-dispatch" in _experiments:
    # Channels' AsyncConsumer.dispatch awaits aclose_old_connections() — a sync_to_async
    # hop through the one shared sync thread — before *every* handler call, so each
    # frame costs each viewer a thread round trip although transcript_frame never
    # touches the database. Deliver frames directly instead.
    from chatui.live.consumers import TranscriptConsumer

    _dispatch = TranscriptConsumer.dispatch

    async def _dispatch_frames_directly(self, message):
        if message.get("type") == "transcript.frame":
            await self.transcript_frame(message)
            return
        await _dispatch(self, message)

    TranscriptConsumer.dispatch = _dispatch_frames_directly

if "no-chain" in _experiments:
    # P9 (docs/PERFORMANCE.md#p9-chain): ingest without the verifiable log — no hashes,
    # no checkpoints — as bench/p9_chain_cost.py's "chain off": what the chain costs P2
    # is the difference with a run without this experiment.
    from chatui.ingest import chain as _chain

    _chain.chain = lambda rows, previous: previous
    _chain.checkpoint_due = lambda *args, **kwargs: False

if "gc-freeze" in _experiments:
    # Move everything alive after start-up (Django, templates, the URLconf…) out of the
    # collector's reach and collect the young generations less often, so that a full
    # collection does not walk the whole heap in the middle of a broadcast.
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)

if "socket-stamps" in _experiments:
    # A measurement, not a change (bench/p5_streaming.py splits its lag with it): per
    # transcript frame a socket handles, when its consumer got it from the channel
    # layer (`R`) and when its send returned (`S`), as
    # `R|S <conversation> <first_seq> <last_seq> <time.time()>`.
    import re

    from chatui.live.consumers import TranscriptConsumer

    _marker = re.compile(r"<!--seq (\d+) (\d+)-->")
    _transcript_frame = TranscriptConsumer.transcript_frame
    _send_frame = TranscriptConsumer._send_frame

    async def _stamped_transcript_frame(self, message):
        first = message.get("first_seq", message["last_seq"])
        _out.write(f"R {self.conversation_id} {first} {message['last_seq']} {time.time():.6f}\n")
        await _transcript_frame(self, message)

    async def _stamped_send_frame(self, last_seq, html):
        await _send_frame(self, last_seq, html)
        found = _marker.match(html)
        first = found.group(1) if found else last_seq
        _out.write(f"S {self.conversation_id} {first} {last_seq} {time.time():.6f}\n")

    TranscriptConsumer.transcript_frame = _stamped_transcript_frame
    TranscriptConsumer._send_frame = _stamped_send_frame

if "writer-profile" in _experiments:
    # A measurement, not a change: cProfile of every events POST's work on the writer
    # thread (view, ingest, projection, on-commit frame), written every 200 requests to
    # `<CHATUI_BENCH_STAMPS>.writer.prof` (pstats). Profiling slows it about twice over,
    # so read it for shares, not times.
    import cProfile

    from chatui.server import ingest_route

    _profile = cProfile.Profile(time.thread_time)  # CPU: not the waits for the GIL
    _respond_on_the_wire = ingest_route._respond_on_the_wire
    _profiled = [0]

    def _profiled_respond(*args, **kwargs):
        _profile.enable()
        try:
            return _respond_on_the_wire(*args, **kwargs)
        finally:
            _profile.disable()
            _profiled[0] += 1
            if _profiled[0] % 200 == 0:
                _profile.dump_stats(os.environ["CHATUI_BENCH_STAMPS"] + ".writer.prof")

    ingest_route._respond_on_the_wire = _profiled_respond

if "heap-census" in _experiments:
    # A measurement: on SIGUSR1, the collector's objects counted by type, appended to
    # `<CHATUI_BENCH_STAMPS>.census` as `N <count> <type>` lines after an `== <time>` line
    # (objects frozen at start-up are not counted: gc.freeze moved them out of reach).
    import collections
    import signal

    def _census(_signum, _frame):
        gc.collect()
        counts = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
        with open(os.environ["CHATUI_BENCH_STAMPS"] + ".census", "a") as out:
            out.write(f"== {time.time():.3f} {sum(counts.values())}\n")
            for name, count in counts.most_common(400):
                out.write(f"N {count} {name}\n")

    signal.signal(signal.SIGUSR1, _census)
