"""P5: a streamed answer — 3,000 `agent.message.delta` events of ~6 characters, 1 viewer.

    .venv/bin/python bench/p5_streaming.py [--deltas 3000] [--window 300]
                                           [--modes request,client,channel] [--rate 200]
                                           [--py-spy PREFIX]

One real Chromium page (as in P1: /usr/bin/chromium through Playwright, logged in
through the real login form) watches the conversation; it is the one viewer. Modes:

  request  one delta per HTTP request, back to back on a keep-alive connection: daphne
           CPU per delta over the first `--window` deltas and over the last `--window`
           (flat means O(delta): docs/PERFORMANCE.md#p5 wants last ≤ 1.25 × first, ≤ 2.5 ms).
           Every window in between is measured too, with the garbage collector's
           pauses in it: a full collection in one window of 300 moves it by 0.1–0.2 ms a
           delta, so the verdict on flatness also reads the line fitted through all
           windows ("fitted ×"). `--py-spy PREFIX` samples the first and last windows.
  client   the Python client's `stream()` over HTTP (deltas coalesced, flushed within
           25 ms) at `--rate` tokens/s: daphne CPU per token (target ≤ 1 ms)
  channel  the same over the docs/events.md#streaming-channel ingest WebSocket
  (`stream(channel=True)`)

For each mode: the bytes of every socket message the page received while the answer
streamed (per message and per delta; target ≤ 1 KB per delta), and the final text lag —
from the commit of the last delta (stamped by bench.instrumented_asgi, as in P1) to the
moment a MutationObserver in the page sees the whole text in the bubble (target ≤ 50 ms).
Clocks are aligned as in P1 (`calibrate`). The answer then ends with
`agent.step.completed` and the lag to its Markdown in the DOM is reported too.

A second table splits the final text lag (daphne runs with the `socket-stamps`
measurement of bench.instrumented_asgi): commit → the viewer's consumer has the frame →
its send returned (held until the tick's end, STREAM_TICK_SECONDS?) → the page has the
message (htmx's wsBeforeMessage: network, and the page's main thread being busy) → the
message applied; with how many deltas that last frame joined, and the median time the
page took to apply any message.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time

from common import (
    Bench,
    cpu_seconds,
    loadavg,
    machine_line,
    maybe_py_spy,
    stream_tokens,
    table,
)
from p1_card_latency import calibrate

from tests.browser.conftest import CHROMIUM_ARGS  # common put the repository on sys.path

# Stamps, in the page's clock: every socket message's size, seqs, arrival (htmx's
# wsBeforeMessage) and the end of its application (by the page's own handler of
# wsBeforeMessage, or by htmx: wsAfterMessage); when the bubble first
# holds `window.__want` characters of text, and when its Markdown (<p>) first shows.
OBSERVER = r"""(want) => {
  window.__want = want;
  window.__sizes = [];
  window.__textAt = null;
  window.__markdownAt = null;
  window.__frames = [];  // [first seq, last seq, message in page, message applied]
  const encoder = new TextEncoder();
  const marker = /^\s*<!--seq (\d+) (\d+)-->/;
  const seqs = (message) => (marker.exec(message) || [0, 0, 0]).slice(1, 3).map(Number);
  const stamp = () => performance.timeOrigin + performance.now();
  const applied = () => {
    const last = window.__frames[window.__frames.length - 1];
    if (last) last[3] = stamp();
  };
  // Captured on window: before the page's own handlers (which may apply the message).
  window.addEventListener('htmx:wsBeforeMessage', (event) => {
    window.__sizes.push(encoder.encode(event.detail.message).length);
    window.__frames.push([...seqs(event.detail.message), stamp(), null]);
  }, true);
  // A message the page handled itself (or dropped) ends here; htmx's at wsAfterMessage.
  window.addEventListener('htmx:wsBeforeMessage', (event) => {
    if (event.defaultPrevented) applied();
  });
  window.addEventListener('htmx:wsAfterMessage', applied);
  const check = () => {
    const now = performance.timeOrigin + performance.now();
    const bubble = document.querySelector('[data-message-id="p5"] [data-stream-text]');
    if (!window.__textAt && bubble && bubble.textContent.length >= window.__want) {
      window.__textAt = now;
    }
    if (!window.__markdownAt && document.querySelector('[data-message-id="p5"] .markdown p')) {
      window.__markdownAt = now;
    }
  };
  new MutationObserver(check).observe(document.body,
    {childList: true, subtree: true, characterData: true});
  return true;
}"""


SPLIT = (
    "commit_consumer_ms",
    "consumer_sent_ms",
    "sent_page_ms",
    "page_applied_ms",
    "final_parts",
    "apply_p50_ms",
)
SPLIT_HEADERS = [
    "mode",
    "last delta: commit → consumer ms",
    "consumer → sent (held) ms",
    "sent → message in page ms",
    "message → applied ms",
    "parts in its frame",
    "any message applied p50 ms",
]


def commit_time(bench: Bench, conversation: str, last_seq: int) -> float:
    """When the ingest that reached `last_seq` committed (time.time(), daphne's clock)."""
    key = conversation.replace("-", "")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for (kind, conv, last), moment in bench.read_stamps().items():
            if kind == "C" and conv == key and last >= last_seq:
                return moment
        time.sleep(0.05)
    raise RuntimeError(f"no commit stamp for seq {last_seq}")


def stamp_at(bench: Bench, kind: str, conversation: str, last_seq: int) -> float | None:
    """The earliest `kind` stamp (bench.instrumented_asgi) of a frame reaching `last_seq`."""
    key = conversation.replace("-", "")
    times = [
        moment
        for (k, conv, last), moment in bench.read_stamps().items()
        if k == kind and conv == key and last >= last_seq
    ]
    return min(times) if times else None


def lag_split(
    bench: Bench, conversation: str, last_seq: int, frames: list, offset: float, committed: float
) -> dict:
    """Where the final text lag goes (ms, all in daphne's clock): commit → the socket's
    consumer has the frame → its send returned (held for the tick?) → htmx has the
    message in the page → its application ended."""
    received = stamp_at(bench, "R", conversation, last_seq)
    sent = stamp_at(bench, "S", conversation, last_seq)
    final = next((f for f in frames if f[1] >= last_seq), None)
    if received is None or sent is None or final is None:
        return {}
    in_page, applied = final[2] / 1000 - offset, final[3] / 1000 - offset
    return {
        "commit_consumer_ms": (received - committed) * 1000,
        "consumer_sent_ms": (sent - received) * 1000,
        "sent_page_ms": (in_page - sent) * 1000,
        "page_applied_ms": (applied - in_page) * 1000,
        "final_parts": final[1] - final[0] + 1,
        "apply_p50_ms": statistics.median(f[3] - f[2] for f in frames if f[3] is not None),
    }


def open_page(bench: Bench, browser, cookie: str, conversation: str):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    name, value = cookie.split("=", 1)
    context.add_cookies([{"name": name, "value": value, "url": bench.url}])
    page = context.new_page()
    page.goto(f"{bench.url}/c/{conversation}/")
    page.wait_for_function("() => window.__chatuiSocketOpen === true", timeout=15000)
    return context, page


def stream_by_request(
    bench: Bench, conversation: str, texts: list[str], window: int, py_spy: str | None = None
) -> dict:
    """One POST per delta; daphne's CPU per delta in every `window` deltas (the first and
    the last are docs/PERFORMANCE.md#p5's, sampled by py-spy into `<py_spy>-first.txt` / `-last.txt`
    if asked), and the garbage-collector pauses in each."""
    url = f"/conversations/{conversation}/events"
    last_seq = 0
    windows = [texts[start : start + window] for start in range(0, len(texts), window)]
    cpu_ms: list[float] = []
    gc_spans: list[tuple[float, float]] = []
    with bench.api() as client:
        for number, part in enumerate(windows):
            name = {0: "first", len(windows) - 1: "last"}.get(number)
            profile = f"{py_spy}-{name}.txt" if py_spy and name else None
            with maybe_py_spy(bench.pid, profile, None, gil=True):
                cpu, began = cpu_seconds(bench.pid), time.time()
                for text in part:
                    body = {"type": "agent.message.delta", "message_id": "p5", "delta": text}
                    response = client.post(url, json=body)
                    if response.status_code != 200:
                        raise RuntimeError(f"POST {response.status_code} {response.text[:200]}")
                    last_seq = response.json()["last_seq"]
                cpu_ms.append((cpu_seconds(bench.pid) - cpu) * 1000 / len(part))
                gc_spans.append((began, time.time()))
    # A full collection walks the whole heap: one falling in a window moves its CPU by
    # 0.1–0.2 ms a delta, whatever the message's length. So each window says how much of
    # it was collection, and the trend is a line fitted through all windows.
    pauses = bench.gc_pauses()
    gc_ms = [sum(ms for at, ms, _gen in pauses if low <= at < high) for low, high in gc_spans]
    slope, intercept = statistics.linear_regression(range(len(cpu_ms)), cpu_ms)
    return {
        "last_seq": last_seq,
        "cpu_first_ms": cpu_ms[0],
        "cpu_last_ms": cpu_ms[-1],
        "cpu_windows_ms": cpu_ms,
        "gc_windows_ms": gc_ms,
        "fitted_ratio": (intercept + slope * (len(cpu_ms) - 1)) / intercept,
    }


def stream_by_client(
    bench: Bench, conversation: str, texts: list[str], rate: float, channel: bool
) -> dict:
    """The Python client at `rate` tokens/s; daphne CPU per token over the whole stream."""
    from chatui_client import ChatuiClient

    with ChatuiClient(bench.url, bench.server.token) as chatui:
        out = chatui.stream(conversation, channel=channel)
        out.flush()  # the channel is opened on the first send: not timed
        start_cpu, start = cpu_seconds(bench.pid), time.perf_counter()
        for index, text in enumerate(texts):
            due = start + index / rate
            pause = due - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            out.delta("p5", text)
        last_seq = out.flush()
        elapsed = time.perf_counter() - start
        cpu = cpu_seconds(bench.pid) - start_cpu
        out.close()
    return {
        "last_seq": last_seq,
        "cpu_per_token_ms": cpu * 1000 / len(texts),
        "tokens_per_s": len(texts) / elapsed,
    }


def run_mode(bench: Bench, browser, cookie: str, mode: str, args) -> dict:
    conversation = bench.new_conversation(f"p5 {mode}")
    bench.server.post_events(conversation, [{"type": "user.message", "content": "Stream."}])
    texts = stream_tokens(args.deltas)
    full_text = "".join(texts)
    context, page = open_page(bench, browser, cookie, conversation)
    try:
        page.evaluate(OBSERVER, len(full_text))
        offset_before, _ = calibrate(page)
        if mode == "request":
            result = stream_by_request(bench, conversation, texts, args.window, args.py_spy)
        else:
            result = stream_by_client(bench, conversation, texts, args.rate, mode == "channel")
        committed = commit_time(bench, conversation, result["last_seq"])
        page.wait_for_function("() => window.__textAt !== null", timeout=30000)
        sizes = page.evaluate("() => window.__sizes")
        frames = page.evaluate("() => window.__frames")
        bench.server.post_events(
            conversation,
            [{"type": "agent.step.completed", "message_id": "p5", "content": full_text}],
        )
        ended = commit_time(bench, conversation, result["last_seq"] + 1)
        page.wait_for_function("() => window.__markdownAt !== null", timeout=30000)
        offset_after, _ = calibrate(page)
        offset = (offset_before + offset_after) / 2
        text_at = page.evaluate("() => window.__textAt") / 1000 - offset
        markdown_at = page.evaluate("() => window.__markdownAt") / 1000 - offset
        split = lag_split(bench, conversation, result["last_seq"], frames, offset, committed)
    finally:
        context.close()
    return {
        "mode": mode,
        **result,
        "messages": len(sizes),
        "bytes_per_message": statistics.median(sizes) if sizes else 0,
        "bytes_max": max(sizes) if sizes else 0,
        "bytes_per_delta": sum(sizes) / len(texts),
        "text_lag_ms": (text_at - committed) * 1000,
        "markdown_lag_ms": (markdown_at - ended) * 1000,
        **split,
        "load": loadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=3000)
    parser.add_argument("--window", type=int, default=300)
    parser.add_argument("--modes", default="request,client,channel")
    parser.add_argument("--rate", type=float, default=200, help="tokens/s for client, channel")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument(
        "--py-spy",
        metavar="PREFIX",
        help="request mode: py-spy (GIL holder) over the first and the last window, into "
        "PREFIX-first.txt and PREFIX-last.txt (the profiler slows them: CPU figures rise)",
    )
    args = parser.parse_args()
    if args.deltas < 2 * args.window:
        parser.error("--deltas must be at least twice --window")
    from playwright.sync_api import sync_playwright

    print("P5 streamed answer ·", machine_line())
    results = []
    with Bench(experiment="socket-stamps") as bench, sync_playwright() as playwright:
        executable = shutil.which("chromium") or "/usr/bin/chromium"
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        cookie = bench.session_cookie()
        try:
            for mode in args.modes.split(","):
                results.append(run_mode(bench, browser, cookie, mode, args))
        finally:
            browser.close()

    rows = []
    for r in results:
        cpu = (
            f"{r['cpu_first_ms']:.2f} → {r['cpu_last_ms']:.2f} "
            f"(×{r['cpu_last_ms'] / r['cpu_first_ms']:.2f}; fitted ×{r['fitted_ratio']:.2f})"
            if r["mode"] == "request"
            else f"{r['cpu_per_token_ms']:.2f} at {r['tokens_per_s']:.0f} tok/s"
        )
        rows.append(
            [
                r["mode"],
                cpu,
                r["messages"],
                r["bytes_per_message"],
                r["bytes_max"],
                r["bytes_per_delta"],
                r["text_lag_ms"],
                r["markdown_lag_ms"],
            ]
        )
    print(
        table(
            [
                "mode",
                "daphne CPU ms per delta (first → last window) / per token",
                "socket msgs",
                "bytes/msg p50",
                "bytes max",
                "bytes/delta",
                "last delta → text in DOM ms",
                "completed → Markdown ms",
            ],
            rows,
        )
    )
    print(table(SPLIT_HEADERS, [[r["mode"], *(r.get(k, "") for k in SPLIT)] for r in results]))
    for r in results:
        if r["mode"] == "request":
            cpu = " ".join(f"{ms:.2f}" for ms in r["cpu_windows_ms"])
            collected = " ".join(f"{ms:.0f}" for ms in r["gc_windows_ms"])
            print(f"request: CPU ms per delta, window by window: {cpu}")
            print(f"request: garbage-collector pauses ≥ 2 ms, ms per window: {collected}")
    print(f"{args.deltas} deltas, window {args.window}; load after: {loadavg()}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
