"""P4: idle viewers held by one daphne process — memory per open WebSocket.

    .venv/bin/python bench/p4_idle_sockets.py [--sockets 1000] [--hold 5]

Starts daphne, builds a small conversation, logs in (real login form) and warms
the server up (a page load and 10 sockets opened and closed), then reads
daphne's VmRSS from /proc/<pid>/status, opens `--sockets` authenticated
WebSocket connections to that conversation from this one asyncio process
(session cookie + Origin, `?after=<last_seq>` as a current page would, at most
`--concurrency` handshakes in flight), holds them idle for `--hold` seconds,
checks that every one is still open, reads VmRSS again, posts one event and
checks that every socket got its frame, then closes them all and reads VmRSS a
last time. Raises this process's open-files limit as needed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from pathlib import Path

import httpx
from common import (
    Bench,
    RawWebSocket,
    cpu_seconds,
    loadavg,
    machine_line,
    raise_nofile,
    read_forever,
    rss_kb,
    table,
)


def hwm_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


async def open_many(bench: Bench, path: str, cookie: str, count: int, concurrency: int):
    gate = asyncio.Semaphore(concurrency)

    async def one() -> RawWebSocket:
        async with gate:
            return await RawWebSocket.connect(
                bench.server.port, path, cookie=cookie, origin=bench.origin
            )

    return await asyncio.gather(*(one() for _ in range(count)))


async def scenario(bench: Bench, conversation: str, cookie: str, args) -> dict:
    pid = bench.pid
    after = bench.last_seq(conversation)
    path = f"/ws/conversations/{conversation}/?after={after}"
    # Warm-up: imports, first-use caches, the session and consumer code paths.
    async with httpx.AsyncClient(base_url=bench.url, headers={"Cookie": cookie}) as client:
        (await client.get(f"/c/{conversation}/")).raise_for_status()
    warm = await open_many(bench, path, cookie, 10, 10)
    await asyncio.gather(*(ws.close() for ws in warm))
    await asyncio.sleep(1)

    baseline = rss_kb(pid)
    cpu_before = cpu_seconds(pid)
    start = time.perf_counter()
    sockets = await open_many(bench, path, cookie, args.sockets, args.concurrency)
    open_time = time.perf_counter() - start
    open_cpu = cpu_seconds(pid) - cpu_before
    readers = [asyncio.create_task(read_forever(ws)) for ws in sockets]
    await asyncio.sleep(args.hold)
    held = rss_kb(pid)
    still_open = sum(1 for ws in sockets if ws.close_code is None)
    idle_cpu_before = cpu_seconds(pid)
    await asyncio.sleep(2)
    idle_cpu = (cpu_seconds(pid) - idle_cpu_before) / 2

    # One event: every viewer must get its frame (they are live, not just open).
    frames_before = sum(ws.frames for ws in sockets)
    send = time.perf_counter()
    async with httpx.AsyncClient(
        base_url=bench.url + "/api/v1", headers={"Authorization": f"Bearer {bench.server.token}"}
    ) as api:
        (
            await api.post(
                f"/conversations/{conversation}/events",
                json={
                    "type": "agent.tool.started",
                    "tool_call_id": "p4",
                    "tool_name": "ping",
                    "run_id": "p4",
                },
            )
        ).raise_for_status()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if sum(ws.frames for ws in sockets) - frames_before >= len(sockets):
            break
        await asyncio.sleep(0.01)
    fanout = time.perf_counter() - send
    delivered = sum(ws.frames for ws in sockets) - frames_before
    after_frame = rss_kb(pid)

    for task in readers:
        task.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    close_gate = asyncio.Semaphore(100)

    async def close(ws: RawWebSocket) -> None:
        async with close_gate:
            await ws.close()

    await asyncio.gather(*(close(ws) for ws in sockets))
    sockets.clear()
    gc.collect()
    await asyncio.sleep(3)
    closed = rss_kb(pid)
    return {
        "baseline": baseline,
        "held": held,
        "after_frame": after_frame,
        "closed": closed,
        "hwm": hwm_kb(pid),
        "still_open": still_open,
        "open_time": open_time,
        "open_cpu": open_cpu,
        "idle_cpu": idle_cpu,
        "delivered": delivered,
        "fanout": fanout,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sockets", type=int, default=1000)
    parser.add_argument("--hold", type=float, default=5, help="seconds held idle before reading")
    parser.add_argument("--concurrency", type=int, default=50, help="handshakes in flight")
    args = parser.parse_args()
    limit = raise_nofile(args.sockets * 2 + 256)  # daphne inherits it too
    print("P4 idle sockets ·", machine_line(), f"· nofile {limit}")
    with Bench() as bench:
        conversation = bench.new_conversation("p4")
        bench.server.post_events(
            conversation,
            [
                {"type": "user.message", "content": "hello", "run_id": "p4"},
                {"type": "agent.status", "status": "running", "run_id": "p4"},
            ],
        )
        cookie = bench.session_cookie()
        r = asyncio.run(scenario(bench, conversation, cookie, args))
        load = loadavg()
    extra_kb = r["held"] - r["baseline"]
    print(
        table(
            [
                "sockets",
                "open",
                "RSS before MB",
                "RSS held MB",
                "extra MB",
                "KB/socket",
                "RSS after close MB",
                "open time s",
                "daphne CPU ms/open",
                "idle CPU %",
            ],
            [
                [
                    args.sockets,
                    r["still_open"],
                    r["baseline"] / 1024,
                    r["held"] / 1024,
                    extra_kb / 1024,
                    extra_kb / args.sockets,
                    r["closed"] / 1024,
                    r["open_time"],
                    1000 * r["open_cpu"] / args.sockets,
                    100 * r["idle_cpu"],
                ]
            ],
        )
    )
    print(
        f"one frame fanned out to {r['delivered']}/{args.sockets} sockets in "
        f"{r['fanout'] * 1000:.0f} ms (POST sent → last frame read); RSS after it "
        f"{r['after_frame'] / 1024:.1f} MB; VmHWM {r['hwm'] / 1024:.1f} MB; load after {load}"
    )


if __name__ == "__main__":
    main()
