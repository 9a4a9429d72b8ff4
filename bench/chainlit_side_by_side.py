"""chatui next to Chainlit 2.12 on this machine: a streamed answer and 50 tool steps.

    .venv/bin/python bench/chainlit_side_by_side.py [--tokens 1000] [--rate 200] [--steps 50]

Chainlit is installed by this script, from PyPI, into its own virtualenv under
var/chainlit/ (once; `--reinstall` to redo it), and runs a minimal app written here:
`@cl.on_message` streams `--tokens` tokens with `Message.stream_token` at `--rate`
tokens/s, or runs `--steps` tool steps (`async with cl.Step(type="tool")`, input and
output set), 20 ms apart. The app stamps `time.time()` and its own process CPU
(`time.process_time()`, all threads) at the start and the end of each phase.

chatui gets the same work from a runtime using the Python client: the tokens through
`stream()` over HTTP and over the docs/events.md#streaming-channel ingest channel (deltas coalesced,
flushed within 25 ms), and each tool step as `agent.tool.started` + `agent.tool.completed`; daphne's
CPU is read from /proc over the phase.

The viewer is the same Chromium (Debian's /usr/bin/chromium through Playwright) for
both: a MutationObserver stamps when the last token (a unique marker) and the last
tool step are in the DOM. Browser lag = that stamp − when the runtime emitted the last
token / finished the last step (clocks aligned as in P1).

Caveats, printed with the table: Chainlit without a data layer persists nothing (no
database write, no event log, nothing to audit or resume from), while every chatui
event is validated, sequenced, stored and projected before it is broadcast; Chainlit
runs the agent in its own process, chatui receives it over HTTP or a WebSocket.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from common import ROOT, STREAM_WORDS, Bench, cpu_seconds, loadavg, machine_line, table
from p1_card_latency import calibrate

from tests.browser.conftest import CHROMIUM_ARGS
from tests.support.live import free_port

CHAINLIT_VERSION = "2.12.0"
CHAINLIT_DIR = ROOT / "var" / "chainlit"
MARKER = "END-OF-STREAM"
WORDS = STREAM_WORDS  # the same tokens as P5's

APP = (
    textwrap.dedent(
        '''
    """Minimal Chainlit app for bench/chainlit_side_by_side.py (written by it)."""
    import asyncio
    import os
    import time

    import chainlit as cl

    STAMPS = os.environ["SIDE_STAMPS"]
    TOKENS = int(os.environ["SIDE_TOKENS"])
    RATE = float(os.environ["SIDE_RATE"])
    STEPS = int(os.environ["SIDE_STEPS"])
    WORDS = WORDS_LITERAL
    MARKER = MARKER_LITERAL


    def stamp(name):
        with open(STAMPS, "a") as out:
            out.write(f"{name} {time.time():.6f} {time.process_time():.6f}\\n")


    @cl.on_message
    async def on_message(message: cl.Message):
        if message.content.strip() == "stream":
            answer = cl.Message(content="")
            stamp("stream-start")
            start = time.perf_counter()
            for index in range(TOKENS):
                pause = start + index / RATE - time.perf_counter()
                if pause > 0:
                    await asyncio.sleep(pause)
                last = index == TOKENS - 1
                await answer.stream_token(MARKER if last else WORDS[index % len(WORDS)])
            stamp("stream-end")
            await answer.send()
        elif message.content.strip() == "tools":
            stamp("tools-start")
            for index in range(STEPS):
                async with cl.Step(name=f"tool_{index}", type="tool") as step:
                    step.input = {"path": f"src/module_{index}.py"}
                    step.output = f"ok: {index} lines read"
                if index < STEPS - 1:
                    await asyncio.sleep(0.02)
            stamp("tools-end")
    '''
    )
    .replace("WORDS_LITERAL", repr(WORDS))
    .replace("MARKER_LITERAL", repr(MARKER))
)

# In the page: when `text` (or an element matching `selector`) first shows up, as
# window[name], in the page's clock.
OBSERVER = """([name, text, selector]) => {
  window[name] = null;
  const check = () => {
    if (window[name]) return;
    const now = performance.timeOrigin + performance.now();
    const found = selector ? document.querySelector(selector)
                           : document.body.textContent.includes(text);
    if (found) window[name] = now;
  };
  new MutationObserver(check).observe(document.body,
    {childList: true, subtree: true, characterData: true});
  return true;
}"""


def seen_at(page, name: str, offset: float, timeout: float = 120000) -> float:
    """When the page saw it, in Python's clock."""
    page.wait_for_function(f"() => window.{name} !== null", timeout=timeout)
    return page.evaluate(f"() => window.{name}") / 1000 - offset


def install_chainlit(reinstall: bool) -> Path:
    python = CHAINLIT_DIR / "venv" / "bin" / "python"
    # Its command, not the interpreter: an install cut short leaves the interpreter only.
    if (python.parent / "chainlit").exists() and not reinstall:
        return python
    CHAINLIT_DIR.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", CHAINLIT_DIR / "venv"], check=True)
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
         f"chainlit=={CHAINLIT_VERSION}"],
        check=True,
    )  # fmt: skip
    return python


def tokens(count: int) -> list[str]:
    return [WORDS[i % len(WORDS)] for i in range(count - 1)] + [MARKER]


def new_page(browser, url: str, cookie: str | None = None):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    if cookie:
        name, value = cookie.split("=", 1)
        context.add_cookies([{"name": name, "value": value, "url": url}])
    return context, context.new_page()


# -- Chainlit ----------------------------------------------------------------------------


class ChainlitServer:
    def __init__(self, python: Path, args) -> None:
        self.python = python
        self.args = args
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="chainlit-side-"))
        self.stamps = self.dir / "stamps.txt"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ChainlitServer:
        (self.dir / "app.py").write_text(APP)
        env = {
            **os.environ,
            "SIDE_STAMPS": str(self.stamps),
            "SIDE_TOKENS": str(self.args.tokens),
            "SIDE_RATE": str(self.args.rate),
            "SIDE_STEPS": str(self.args.steps),
            "CHAINLIT_TELEMETRY": "false",
        }
        env.pop("DATABASE_URL", None)  # no data layer: Chainlit persists nothing
        chainlit = self.python.parent / "chainlit"
        self.process = subprocess.Popen(
            [chainlit, "run", "app.py", "--headless", "--host", "127.0.0.1",
             "--port", str(self.port)],
            cwd=self.dir,
            env=env,
            stdout=open(self.dir / "chainlit.log", "wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        import httpx

        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError((self.dir / "chainlit.log").read_text()[-2000:])
            try:
                if httpx.get(self.url, timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("Chainlit did not start")

    def __exit__(self, *exc) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            self.process.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)

    def stamp(self, name: str, timeout: float = 120) -> tuple[float, float]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.stamps.exists():
                for line in self.stamps.read_text().splitlines():
                    key, wall, cpu = line.split()
                    if key == name:
                        return float(wall), float(cpu)
            time.sleep(0.05)
        raise RuntimeError(f"Chainlit never stamped {name}")


class SocketFrames:
    """What Chainlit's page receives on its socket.io WebSocket (Playwright's events)."""

    def __init__(self, page) -> None:
        self.received: list[str] = []
        page.on("websocket", self._opened)

    def _opened(self, socket) -> None:
        socket.on("framereceived", lambda payload: self.received.append(str(payload)))

    def wait_for(self, page, text: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in frame for frame in self.received):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"Chainlit's socket never received {text!r} within {timeout:g} s; "
                    f"frames: {self.received[-10:]}"
                )
            page.wait_for_timeout(50)  # Playwright delivers the socket's events meanwhile


#: The last of the server's answers to the page's `connection_successful` (Chainlit
#: 2.12's socket.py): the session exists and messages reach `on_message`. The chat
#: input shows before the socket connects, and a message typed then is lost (the page
#: has no socket to emit it on yet); the upgrade to a WebSocket took 0.3-16 s here.
CONNECTED = '42["clear_call_fn"'


def chainlit_ask(page, text: str) -> None:
    box = page.locator("#chat-input")
    box.click()
    page.keyboard.type(text)
    page.keyboard.press("Enter")


def run_chainlit(browser, python: Path, args) -> dict:
    with ChainlitServer(python, args) as server:
        context, page = new_page(browser, server.url)
        try:
            frames = SocketFrames(page)
            page.goto(server.url)
            page.locator("#chat-input").wait_for(timeout=60000)
            frames.wait_for(page, CONNECTED)
            page.evaluate(OBSERVER, ["__markerAt", MARKER, None])
            offset, _ = calibrate(page)
            chainlit_ask(page, "stream")
            start_wall, start_cpu = server.stamp("stream-start")
            end_wall, end_cpu = server.stamp("stream-end")
            marker_at = seen_at(page, "__markerAt", offset)
            stream = {
                "cpu_per_token_ms": (end_cpu - start_cpu) * 1000 / args.tokens,
                "tokens_per_s": args.tokens / (end_wall - start_wall),
                "lag_ms": (marker_at - end_wall) * 1000,
            }
            page.evaluate(OBSERVER, ["__toolAt", f"tool_{args.steps - 1}", None])
            chainlit_ask(page, "tools")
            _tools_wall, tools_cpu = server.stamp("tools-start")
            done_wall, done_cpu = server.stamp("tools-end")
            tools = {
                "cpu_per_step_ms": (done_cpu - tools_cpu) * 1000 / args.steps,
                "lag_ms": (seen_at(page, "__toolAt", offset) - done_wall) * 1000,
            }
        finally:
            context.close()
    return {"name": f"Chainlit {CHAINLIT_VERSION}", "stream": stream, "tools": tools}


# -- chatui ------------------------------------------------------------------------------


def run_chatui(browser, bench: Bench, cookie: str, args, *, channel: bool) -> dict:
    from chatui_client import ChatuiClient
    from common import maybe_py_spy

    profile = args.py_spy and f"{args.py_spy}.{'channel' if channel else 'http'}"

    conversation = bench.new_conversation("side by side")
    bench.server.post_events(conversation, [{"type": "user.message", "content": "stream"}])
    context, page = new_page(browser, bench.url, cookie)
    try:
        page.goto(f"{bench.url}/c/{conversation}/")
        page.wait_for_function("() => window.__chatuiSocketOpen === true", timeout=15000)
        last_tool = f'[data-tool-call-id="t{args.steps - 1}"][data-status="success"]'
        page.evaluate(OBSERVER, ["__markerAt", MARKER, None])
        page.evaluate(OBSERVER, ["__toolAt", None, last_tool])
        offset, _ = calibrate(page)
        with ChatuiClient(bench.url, bench.server.token) as chatui:
            out = chatui.stream(conversation, channel=channel)
            out.send({"type": "agent.status", "status": "running", "run_id": "side"})
            out.flush()
            cpu, start = cpu_seconds(bench.pid), time.perf_counter()
            for index, text in enumerate(tokens(args.tokens)):
                pause = start + index / args.rate - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
                emitted = time.time()  # the runtime hands over the (last) token
                out.delta("answer", text, run_id="side")
            out.flush()
            stream_cpu = cpu_seconds(bench.pid) - cpu
            elapsed = time.perf_counter() - start
            marker_at = seen_at(page, "__markerAt", offset)
            out.send({"type": "agent.step.completed", "message_id": "answer", "content": "ok"})
            out.flush()
            cpu = cpu_seconds(bench.pid)
            spy = maybe_py_spy(bench.pid, profile, args.steps * 0.022, gil=args.gil)
            spy.__enter__()
            cpu = cpu_seconds(bench.pid)  # py-spy's own start is not the steps' cost
            for index in range(args.steps):
                call = {"tool_call_id": f"t{index}", "run_id": "side"}
                out.send({"type": "agent.tool.started", "tool_name": "read_file", **call,
                          "args": {"path": f"src/module_{index}.py"}})  # fmt: skip
                if args.tool_ms:  # a tool that takes this long: its start goes out alone
                    time.sleep(args.tool_ms / 1000)
                done = time.time()  # the runtime hands over the (last) step's end
                out.send({"type": "agent.tool.completed", "result": f"ok: {index}", **call})
                if index < args.steps - 1:
                    time.sleep(0.02)
            out.flush()
            tools_cpu = cpu_seconds(bench.pid) - cpu
            spy.__exit__(None, None, None)
            out.close()
        tool_at = seen_at(page, "__toolAt", offset)
    finally:
        context.close()
    return {
        "name": "chatui, " + ("ingest channel" if channel else "client over HTTP"),
        "stream": {
            "cpu_per_token_ms": stream_cpu * 1000 / args.tokens,
            "tokens_per_s": args.tokens / elapsed,
            "lag_ms": (marker_at - emitted) * 1000,
        },
        "tools": {
            "cpu_per_step_ms": tools_cpu * 1000 / args.steps,
            "lag_ms": (tool_at - done) * 1000,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=200, help="tokens per second")
    parser.add_argument("--steps", type=int, default=50, help="tool steps")
    parser.add_argument("--only", choices=("chatui", "chainlit"), help="run one side only")
    parser.add_argument(
        "--tool-ms",
        type=float,
        default=0,
        help="chatui: each tool runs this long between its start and its end (default: at once)",
    )
    parser.add_argument("--reinstall", action="store_true", help="reinstall Chainlit")
    parser.add_argument(
        "--py-spy",
        metavar="OUT",
        help="profile chatui's daphne during the tool steps (OUT.http, OUT.channel)",
    )
    parser.add_argument("--gil", action="store_true", help="py-spy: only the GIL holder")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    print("chatui vs Chainlit ·", machine_line())
    results = []
    with sync_playwright() as playwright:
        executable = shutil.which("chromium") or "/usr/bin/chromium"
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            if args.only != "chainlit":
                with Bench() as bench:
                    cookie = bench.session_cookie()
                    for channel in (False, True):
                        results.append(run_chatui(browser, bench, cookie, args, channel=channel))
            if args.only != "chatui":
                results.append(run_chainlit(browser, install_chainlit(args.reinstall), args))
        finally:
            browser.close()
    rows = [
        [
            r["name"],
            r["stream"]["cpu_per_token_ms"],
            r["stream"]["tokens_per_s"],
            r["stream"]["lag_ms"],
            r["tools"]["cpu_per_step_ms"],
            r["tools"]["lag_ms"],
        ]
        for r in results
    ]
    print(
        table(
            [
                "server",
                "server CPU ms/token",
                "tokens/s",
                "last token → DOM ms",
                "server CPU ms/tool step",
                "last step → DOM ms",
            ],
            rows,
        )
    )
    print(
        f"{args.tokens} tokens at {args.rate:.0f}/s, {args.steps} tool steps; load {loadavg()}.\n"
        "Caveats: Chainlit without a data layer persists nothing (no database, no log to "
        "audit, resume or re-project); chatui validates, sequences, stores and projects every "
        "event before broadcasting it. Chainlit runs the agent in-process; chatui receives it "
        "over HTTP or a WebSocket from another process. The last tool step's lag is to "
        "its name in the page for Chainlit (shown when the step starts, so it can be "
        "negative) and to its success card for chatui."
    )


if __name__ == "__main__":
    main()
