"""Layout shift while a person watches the showcase run on a phone
(docs/rendering.md#watching-a-run, issue 14).

    .venv/bin/python bench/cls_showcase.py [--runs 3] [--width 390 --height 844] [--scheme light]

One real Chromium page (Debian's, through Playwright), logged in through the real
login form, opens /showcase at a phone viewport and presses ▶ Play: the demo agent
plays the showcase script (batches growing live, progress, nested calls, a retry,
a failed run, a closing run) against a real daphne. A PerformanceObserver for
`layout-shift` entries, installed before any page script runs, records every shift
from the conversation page's first render to the showcase's end (its closing run
completed, after the failed run's banner; then one more second for the last frame
to settle).

Reported per run and as the median:
  CLS        the largest session window (shifts < 1 s apart, window ≤ 5 s), as
             web-vitals and Lighthouse compute it; the issue's target is ≤ 0.05;
  total      the sum of every shift without recent input;
  shifts     how many entries, and the three largest with the elements they moved.
Scrolling (autoscroll) is not a layout shift; nothing here clicks after Play.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright

from bench.common import Bench, machine_line, table
from tests.support.live import PASSWORD, USERNAME

OBSERVER = """
window.__shifts = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (entry.hadRecentInput) continue;
    const nodes = (entry.sources || []).map((s) => {
      let n = s.node;
      if (n && !n.tagName) n = n.parentElement;  // a text node: name its element
      const r = s.previousRect, c = s.currentRect;
      const box = (b) => `(${[b.x, b.y, b.width, b.height].map(Math.round).join(",")})`;
      const move = r && c ? ` ${box(r)}→${box(c)}` : "";
      if (!n || !n.tagName) return "(removed)" + move;
      return n.tagName.toLowerCase() + (n.id ? "#" + n.id : "") +
        (n.className && typeof n.className === "string" ? "." + n.className.split(" ")[0] : "") +
        move;
    });
    window.__shifts.push({t: entry.startTime, value: entry.value, nodes: nodes});
  }
}).observe({type: "layout-shift", buffered: true});
"""

#: The showcase's end: its closing third run completed. Its second run fails on
#: purpose (S2), so "completed" after that run's banner is the third run's.
ENDED = (
    "() => { const s = document.getElementById('run-state');"
    " return s && s.dataset.conversationStatus === 'completed'"
    " && !!document.querySelector('#transcript [data-run-error]'); }"
)


def session_cls(shifts: list[dict]) -> float:
    """web-vitals: the largest sum over windows of shifts < 1 s apart, ≤ 5 s long."""
    best = current = 0.0
    start = last = None
    for shift in sorted(shifts, key=lambda s: s["t"]):
        t = shift["t"]
        if start is None or t - last >= 1000 or t - start >= 5000:
            current, start = 0.0, t
        current += shift["value"]
        last = t
        best = max(best, current)
    return best


def one_run(browser, url: str, args) -> dict:
    context = browser.new_context(
        viewport={"width": args.width, "height": args.height},
        color_scheme=args.scheme,
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
    )
    try:
        page = context.new_page()
        page.goto(url + "/accounts/login/")
        page.fill("#id_username", USERNAME)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(url + "/")
        page.goto(url + "/showcase")
        context.add_init_script(OBSERVER)
        page.click("[data-start-showcase]")
        page.wait_for_url("**/c/*/")
        page.wait_for_function(ENDED, timeout=args.timeout * 1000)
        page.wait_for_timeout(1000)
        shifts = page.evaluate("() => window.__shifts")
    finally:
        context.close()
    largest = sorted(shifts, key=lambda s: -s["value"])[:3]
    return {
        "cls": session_cls(shifts),
        "total": sum(s["value"] for s in shifts),
        "count": len(shifts),
        "largest": [
            f"{s['value']:.4f} {','.join(n.split(' (')[0] for n in s['nodes'][:2])}"
            for s in largest
        ],
        "all": shifts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--width", type=int, default=390)
    parser.add_argument("--height", type=int, default=844)
    parser.add_argument("--scheme", choices=["light", "dark"], default="light")
    parser.add_argument("--timeout", type=int, default=180, help="seconds for one showcase run")
    parser.add_argument("--verbose", action="store_true", help="print every shift and its nodes")
    args = parser.parse_args()
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    results = []
    with Bench() as bench, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        for _ in range(args.runs):
            results.append(one_run(browser, bench.url, args))
        browser.close()
    print(machine_line())
    print(f"showcase run, {args.width}×{args.height}, {args.scheme}, {args.runs} run(s)")
    rows = [
        [n + 1, f"{r['cls']:.4f}", f"{r['total']:.4f}", r["count"], "; ".join(r["largest"])]
        for n, r in enumerate(results)
    ]
    rows.append(
        [
            "median",
            f"{statistics.median(r['cls'] for r in results):.4f}",
            f"{statistics.median(r['total'] for r in results):.4f}",
            statistics.median(r["count"] for r in results),
            "",
        ]
    )
    print(table(["run", "CLS (session)", "total", "shifts", "largest (value, nodes)"], rows))
    if args.verbose:
        for n, result in enumerate(results, start=1):
            for shift in result["all"]:
                print(f"run {n} t={shift['t']:.0f} ms {shift['value']:.4f} {shift['nodes']}")


if __name__ == "__main__":
    main()
