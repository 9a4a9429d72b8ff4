"""P8: OTLP traces into one process — batches of 512 spans (the SDK's default).

    .venv/bin/python bench/p8_otlp.py [--threads 2] [--seconds 20] [--conversations 8]
                                      [--py-spy OUT]

The spans are the real capture of a Pydantic AI run (tests/fixtures/otlp/: a root agent
span, four model calls with their messages, four tool calls, one failing), copied with
fresh trace and span ids and `gen_ai.conversation.id`s so that each batch holds ~57
whole runs spread over `--conversations` conversations — a service exporting many
users' agents at once. Batches are made and serialised as protobuf before the clock
starts, then POSTed to /api/v1/otlp/v1/traces by `--threads` client threads over
keep-alive connections, each span persisted, projected into its transcript and
announced. Reported: spans/s, the server's CPU per span (daphne, all threads), the
request latency, and the load average.
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import os
import random
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    Bench,
    cpu_seconds,
    loadavg,
    machine_line,
    maybe_py_spy,
    summary,
    table,
)

CAPTURE = Path(__file__).resolve().parents[1] / "tests/fixtures/otlp/otlp_pydantic_ai_traces.json"
BATCH = 512


def template() -> tuple[dict, list[dict]]:
    data = json.loads(CAPTURE.read_text())
    resource = data["resourceSpans"][0]
    spans = [s for r in data["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]
    return resource, spans


def batches(count: int, conversations: int, seed: int) -> list[bytes]:
    """`count` protobuf bodies of BATCH spans each: whole runs, fresh ids."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    rng = random.Random(seed)
    resource, spans = template()
    names = [f"bench-{seed}-{n}" for n in range(conversations)]
    bodies = []
    for _ in range(count):
        out: list[dict] = []
        while len(out) < BATCH:
            trace = base64.b64encode(rng.randbytes(16)).decode()
            ids = {s["spanId"]: base64.b64encode(rng.randbytes(8)).decode() for s in spans}
            conversation = rng.choice(names)
            for span in spans:
                copied = copy.deepcopy(span)
                copied["traceId"] = trace
                copied["spanId"] = ids[span["spanId"]]
                if "parentSpanId" in span:
                    copied["parentSpanId"] = ids[span["parentSpanId"]]
                for pair in copied["attributes"]:
                    if pair["key"] == "gen_ai.conversation.id":
                        pair["value"] = {"stringValue": conversation}
                out.append(copied)
        scope = {"scope": resource["scopeSpans"][0]["scope"], "spans": out[:BATCH]}
        request = ExportTraceServiceRequest()
        json_format.ParseDict(
            {"resourceSpans": [{"resource": resource["resource"], "scopeSpans": [scope]}]},
            request,
        )
        bodies.append(request.SerializeToString())
    return bodies


def run(args: argparse.Namespace) -> None:
    import httpx

    print(machine_line())
    bodies = batches(args.batches, args.conversations, seed=os.getpid())
    warmup = batches(2, args.conversations, seed=os.getpid() + 1)
    with Bench() as bench:
        headers = {
            "Authorization": f"Bearer {bench.server.token}",
            "Content-Type": "application/x-protobuf",
        }
        url = bench.url + "/api/v1/otlp/v1/traces"
        with httpx.Client(timeout=60) as client:
            for body in warmup:
                client.post(url, content=body, headers=headers).raise_for_status()
        queue = list(bodies)
        lock = threading.Lock()
        latencies: list[float] = []
        stop_at = time.monotonic() + args.seconds

        def worker() -> None:
            with httpx.Client(timeout=60) as client:
                while time.monotonic() < stop_at:
                    with lock:
                        if not queue:
                            return
                        body = queue.pop()
                    began = time.perf_counter()
                    answer = client.post(url, content=body, headers=headers)
                    answer.raise_for_status()
                    latencies.append((time.perf_counter() - began) * 1000)

        cpu_before, began = cpu_seconds(bench.pid), time.perf_counter()
        threads = [threading.Thread(target=worker) for _ in range(args.threads)]
        with maybe_py_spy(bench.pid, args.py_spy, None, gil=True):
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        wall = time.perf_counter() - began
        cpu = cpu_seconds(bench.pid) - cpu_before
        spans = len(latencies) * BATCH
        stats = summary(latencies)
        print(
            table(
                ["spans", "spans/s", "daphne CPU per span", "p50 request", "p99 request", "load"],
                [
                    [
                        spans,
                        f"{spans / wall:,.0f}",
                        f"{cpu / spans * 1000:.3f} ms",
                        f"{stats['p50']:.0f} ms",
                        f"{stats['p99']:.0f} ms",
                        loadavg(),
                    ]
                ],
            )
        )
        print("target: ≥ 10,000 spans/s, ≤ 0.2 ms CPU a span")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--batches", type=int, default=60, help="bodies made in advance")
    parser.add_argument("--conversations", type=int, default=8)
    parser.add_argument(
        "--py-spy",
        metavar="OUT",
        help="sample daphne's GIL-holding thread while the clients post (bench/pyspy_top.py"
        " reads OUT)",
    )
    run(parser.parse_args())


if __name__ == "__main__":
    main()
