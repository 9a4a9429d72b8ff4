#!/usr/bin/env python3
"""N daphne processes behind one port (docs/SCALING.md), for `make run-cluster`.

Each process gets its own listening socket on the same port (SO_REUSEPORT), opened
here and inherited (`daphne --fd`). The kernel spreads new connections evenly over
the sockets. (One socket shared by all processes spreads badly: an idle process wins
nearly every accept, so every WebSocket of a quiet site lands in one process.)

Beside them it runs `--run-workers` run workers (`manage.py run_worker`, with
CHATUI_RUN_WORKERS=1 for everyone): the agent runs execute there, the web
processes only enqueue them.

This supervisor keeps each socket open while its process restarts: connections
the kernel queued on it wait for the new process instead of being refused. A
process that exits is started again; SIGTERM or SIGINT stops them all.

Pidfiles: RUN_DIR/web.pid (this supervisor), RUN_DIR/web-<n>.pid (web process n)
and RUN_DIR/run-worker-<n>.pid (run worker n).

    serve.py --workers 2 --run-workers 1 --host 127.0.0.1 --port 8000 --run-dir var/cluster
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPLICATION = "config.asgi:application"
# A process that dies sooner than this after its start is failing, not crashing:
# after a few such exits in a row, give up instead of restarting it forever.
QUICK_EXIT_SECONDS = 5.0
QUICK_EXITS_ALLOWED = 3


def ensure_port_free(host: str, port: int) -> None:
    """SO_REUSEPORT would quietly share the port with another cluster still
    running: bind once without it, to fail loudly instead."""
    with socket.create_server((host, port)):
        pass


def listen(host: str, port: int) -> socket.socket:
    sock = socket.create_server((host, port), backlog=1024, reuse_port=True)
    sock.set_inheritable(True)
    return sock


class Supervisor:
    """Web processes are named "web-<n>", run workers "run-worker-<n>"."""

    def __init__(
        self, sockets: list[socket.socket], run_dir: Path, application: str, run_workers: int = 0
    ):
        self.sockets = {f"web-{n}": sock for n, sock in enumerate(sockets, start=1)}
        self.names = [*self.sockets, *(f"run-worker-{n}" for n in range(1, run_workers + 1))]
        self.run_dir = run_dir
        self.application = application
        self.env = {**os.environ, "CHATUI_RUN_WORKERS": "1" if run_workers else "0"}
        self.processes: dict[str, subprocess.Popen] = {}
        self.started_at: dict[str, float] = {}
        self.quick_exits = 0
        self.stopping = False

    def command(self, name: str) -> tuple[list[str], tuple[int, ...]]:
        if name in self.sockets:
            fd = self.sockets[name].fileno()
            return [sys.executable, "-m", "daphne", "--fd", str(fd), self.application], (fd,)
        return [sys.executable, "manage.py", "run_worker"], ()

    def start(self, name: str) -> None:
        command, fds = self.command(name)
        process = subprocess.Popen(command, cwd=ROOT, pass_fds=fds, env=self.env)
        self.processes[name] = process
        self.started_at[name] = time.monotonic()
        self.pidfile(name).write_text(f"{process.pid}\n")

    def pidfile(self, name: str) -> Path:
        return self.run_dir / f"{name}.pid"

    def run(self) -> int:
        (self.run_dir / "web.pid").write_text(f"{os.getpid()}\n")
        for name in self.names:
            self.start(name)
        try:
            while not self.stopping:
                self.restart_exited()
                time.sleep(0.2)
        finally:
            self.stop_all()
        return 0 if self.quick_exits <= QUICK_EXITS_ALLOWED else 1

    def restart_exited(self) -> None:
        for name, process in list(self.processes.items()):
            code = process.poll()
            if code is None or self.stopping:
                continue
            lived = time.monotonic() - self.started_at[name]
            self.quick_exits = self.quick_exits + 1 if lived < QUICK_EXIT_SECONDS else 0
            if self.quick_exits > QUICK_EXITS_ALLOWED:
                print(f"cluster: {name} keeps exiting; stopping", file=sys.stderr)
                self.stopping = True
                return
            print(f"cluster: {name} exited ({code}); restarting", file=sys.stderr)
            self.start(name)

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for name, process in self.processes.items():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            self.pidfile(name).unlink(missing_ok=True)
        (self.run_dir / "web.pid").unlink(missing_ok=True)

    def request_stop(self, signum: int, frame) -> None:
        self.stopping = True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="web (daphne) processes")
    parser.add_argument(
        "--run-workers", type=int, default=0, help="run workers (0: runs go in the web processes)"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--run-dir", type=Path, default=ROOT / "var" / "cluster")
    parser.add_argument("--application", default=APPLICATION)
    args = parser.parse_args()
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.run_workers < 0:
        parser.error("--run-workers must not be negative")
    args.run_dir.mkdir(parents=True, exist_ok=True)
    ensure_port_free(args.host, args.port)
    sockets = [listen(args.host, args.port) for _ in range(args.workers)]
    supervisor = Supervisor(sockets, args.run_dir.resolve(), args.application, args.run_workers)
    signal.signal(signal.SIGTERM, supervisor.request_stop)
    signal.signal(signal.SIGINT, supervisor.request_stop)
    print(
        f"cluster: {args.workers} web processes on http://{args.host}:{args.port}/ and "
        f"{args.run_workers} run workers (pids in {args.run_dir}/*.pid)",
        file=sys.stderr,
    )
    return supervisor.run()


if __name__ == "__main__":
    sys.exit(main())
