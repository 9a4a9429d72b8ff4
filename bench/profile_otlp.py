"""Where P8's CPU goes: OTLP batches through the real receiver view, in-process.

    .venv/bin/python bench/profile_otlp.py [--batches 12] [--profile] [--top 40]
                                           [--callgrind DIR] [--no-projection]

Django in this process (no daphne, no network) on a fresh SQLite file, with the
server's settings and its collector threshold (config/asgi.py). Posts P8's bodies
(`p8_otlp.batches`: 512 spans of copied Pydantic AI runs) to
/api/v1/otlp/v1/traces with Django's test client and reports the process CPU a span
(`time.process_time`, not wall clock: the machine is shared), and with `--profile`
a cProfile of the same number of batches (read it for shares, not absolutes).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import glob
import io
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import table
from p8_otlp import BATCH, batches
from profile_ingest import setup_django


def run(args: argparse.Namespace) -> None:
    from django.contrib.auth import get_user_model
    from django.db import close_old_connections
    from django.test import Client

    from chatui.models import ApiToken

    if args.no_projection:
        # Diagnostic only: what the log itself costs (no tool entry, step or search
        # index), docs/PERFORMANCE.md#p8-fourth. The transcripts stay empty.
        from chatui.ingest.projection import Projector

        Projector.apply_all = lambda self, rows: None
    # No password: hashing one under valgrind (`--callgrind`) takes minutes.
    user = get_user_model().objects.create_user("bench")
    _, raw = ApiToken.issue(user)
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    url = "/api/v1/otlp/v1/traces"
    bodies = batches(args.warmup + 2 * args.batches, args.conversations, seed=args.seed)
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)

    def post(body: bytes) -> None:
        response = api.post(url, body, content_type="application/x-protobuf")
        assert response.status_code == 200, response.content
        close_old_connections()  # as request_finished does under daphne

    for body in bodies[: args.warmup]:
        post(body)
    parts = _timed_parts() if args.parts else {}
    timed = bodies[args.warmup : args.warmup + args.batches]
    if args.callgrind:
        _callgrind("--instr=on")
        _callgrind("--zero")
    each: list[float] = []
    for body in timed:
        began = time.process_time()
        post(body)
        each.append(time.process_time() - began)
    cpu = sum(each)
    if args.callgrind:
        _callgrind("--dump")
        counted = _instructions(args.callgrind)
        print(
            f"instructions a span (callgrind, all threads): {counted / (len(timed) * BATCH):,.0f}"
        )
    if args.each:
        print("CPU per span, batch by batch:", " ".join(f"{t / BATCH * 1000:.3f}" for t in each))
    print(
        table(
            ["batches", "spans", "CPU per span", "a batch's median", "a batch's least"],
            [
                [
                    len(timed),
                    len(timed) * BATCH,
                    f"{cpu / (len(timed) * BATCH) * 1000:.3f} ms",
                    f"{statistics.median(each) / BATCH * 1000:.3f} ms",
                    f"{min(each) / BATCH * 1000:.3f} ms",
                ]
            ],
        )
    )
    if parts:
        print(
            table(
                ["part (inclusive, overlapping)", "CPU per span", "share"],
                [
                    [name, f"{spent / (len(timed) * BATCH) * 1000:.3f} ms", f"{spent / cpu:.0%}"]
                    for name, spent in sorted(parts.items(), key=lambda kv: -kv[1])
                ],
            )
        )
    if args.statements:
        _statements(post, bodies[args.warmup + args.batches], args.statements)
    if not args.profile:
        return
    profiler = cProfile.Profile()
    profiler.enable()
    for body in bodies[args.warmup + args.batches :]:
        post(body)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(args.sort)
    stats.print_stats(args.top)
    if args.callees:
        stats.print_callees(args.callees)
    print(out.getvalue())


#: Functions timed by `--parts`: (module, attribute path).
PARTS = [
    ("chatui.web.otlp", "otlp.decode"),
    ("chatui.ingest.traces", "span_events"),
    ("chatui.ingest.traces", "normalise_event"),
    ("chatui.ingest.traces", "span_event"),
    ("chatui.ingest.service", "chain.chain"),
    ("chatui.ingest.traces", "ingest_normalised"),
    ("chatui.ingest.service", "_drop_duplicates"),
    ("chatui.ingest.service", "EVENT_INSERT.run"),
    ("chatui.ingest.projection", "Projector.apply_all"),
    ("chatui.ingest.projection", "Projector.prefetch"),
    ("chatui.ingest.projection", "Projector.flush"),
    ("chatui.ingest.projection", "search_index.index_messages"),
    ("chatui.ingest.otel_projection", "read_event"),
    ("chatui.ingest.otel_projection", "OtelHandlers._otel_finish"),
    ("chatui.ingest.otel_projection", "OtelHandlers._otel_apply"),
    ("chatui.ingest.projection", "Projector._end_runs"),
    ("chatui.ingest.projection", "INSERT_MESSAGES.run_returning"),
    ("chatui.ingest.projection", "END_RUN.run"),
    ("chatui.ingest.traces", "conversation_for"),
    ("chatui.ingest.service", "_announced"),
    ("django.db.backends.sqlite3.base", "SQLiteCursorWrapper.execute"),
    ("django.db.backends.sqlite3.base", "SQLiteCursorWrapper.executemany"),
    ("django.db.backends.base.base", "BaseDatabaseWrapper.commit"),
    ("django.db.backends.base.base", "BaseDatabaseWrapper.close"),
    ("json", "dumps"),
    ("json", "loads"),
]


def _callgrind(action: str) -> None:
    subprocess.run(["callgrind_control", action, str(os.getpid())], check=True, timeout=600)


def _instructions(out_dir: str) -> int:
    """The instructions of the dump `_callgrind("--dump")` wrote (its threads' summed)."""
    total = 0
    for path in glob.glob(f"{out_dir}/callgrind.out.{os.getpid()}.*"):
        for line in Path(path).read_text(errors="replace").splitlines():
            if line.startswith(("summary:", "totals:")):
                total += int(line.split()[1])
                break
    return total


def _statements(post, body: bytes, top: int) -> None:
    """One more batch with its SQL captured: the costliest statements, literals as ?."""
    import re

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        post(body)
    shapes: dict[str, list[float]] = {}
    for query in captured.captured_queries:
        shape = re.sub(r"'[^']*'|\b\d+\b", "?", query["sql"])
        shape = re.sub(r"(\?, )+\?", "?…", shape)
        shapes.setdefault(shape, []).append(float(query["time"]))
    print(f"{len(captured.captured_queries)} statements in one batch; the costliest:")
    for shape, times in sorted(shapes.items(), key=lambda kv: -sum(kv[1]))[:top]:
        print(f"- {len(times)}× {1000 * sum(times):.1f} ms: {shape[:400]}")


def _timed_parts() -> dict[str, float]:
    """Wrap PARTS to add up their inclusive CPU time (a call inside itself counted once)."""
    import functools
    import importlib

    spent: dict[str, float] = {}
    for module_name, path in PARTS:
        owner = importlib.import_module(module_name)
        *outer, name = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        original = getattr(owner, name)
        label = f"{module_name.rsplit('.', 1)[-1]}.{path}"
        spent[label] = 0.0

        def wrapped(*a, __original=original, __label=label, __depth=[0], **k):  # noqa: B006
            if __depth[0]:
                return __original(*a, **k)
            __depth[0] += 1
            began = time.process_time()
            try:
                return __original(*a, **k)
            finally:
                spent[__label] += time.process_time() - began
                __depth[0] -= 1

        if isinstance(owner, type):
            setattr(owner, name, functools.wraps(original)(wrapped))
        else:
            setattr(owner, name, wrapped)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--conversations", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--parts", action="store_true", help="time PARTS (inclusive CPU)")
    parser.add_argument(
        "--callgrind",
        metavar="DIR",
        help="count the timed batches' instructions: run under `valgrind --tool=callgrind "
        "--instr-atstart=no --callgrind-out-file=DIR/callgrind.out.%%p`",
    )
    parser.add_argument(
        "--no-projection",
        action="store_true",
        help="diagnostic: log the spans without projecting them (the log path's own cost)",
    )
    parser.add_argument("--each", action="store_true", help="print each batch's CPU a span")
    parser.add_argument("--statements", type=int, default=0, help="the N costliest SQL shapes")
    parser.add_argument("--sort", default="cumulative")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--callees", default="", help="also list what functions matching this call")
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="chatui-profile-otlp-"))
    try:
        setup_django(data)
        run(args)
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
