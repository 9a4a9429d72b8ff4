"""`make run-cluster`'s web layer: N daphne processes behind one port
(scripts/cluster/serve.py), and /healthz naming PostgreSQL and Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.cluster import PATIENCE, wait_for
from tests.support.live import ROOT, LiveServer, free_port

SERVE = ROOT / "scripts" / "cluster" / "serve.py"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def read_pid(path: Path) -> int:
    return int(path.read_text()) if path.exists() else 0


def healthz(url: str) -> httpx.Response:
    return httpx.get(url + "/healthz", timeout=PATIENCE)


def answers(url: str) -> bool:
    try:
        return healthz(url).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """serve.py with 2 web processes on one port and 1 run worker, on a migrated
    database of its own. (The last test using it stops it.)"""
    tmp_path = tmp_path_factory.mktemp("cluster")
    database = LiveServer(tmp_path / "data")
    database.prepare()
    port = free_port()
    supervisor = subprocess.Popen(
        [
            sys.executable,
            str(SERVE),
            "--workers=2",
            "--run-workers=1",
            f"--port={port}",
            f"--run-dir={tmp_path}",
        ],
        cwd=ROOT,
        env=database.env,
        stdout=(tmp_path / "serve.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: answers(url), "the cluster to answer")
        yield url, tmp_path, supervisor
    finally:
        if supervisor.poll() is None:
            supervisor.terminate()
            supervisor.wait(timeout=PATIENCE)


def test_healthz_names_postgresql_and_redis(cluster):
    url, _, _ = cluster
    response = healthz(url)
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"] == {"ok": True, "vendor": "postgresql"}
    assert body["channel_layer"] == {"ok": True, "backend": "redis"}


def test_two_processes_share_one_port_and_a_dead_one_or_run_worker_is_replaced(cluster):
    url, run_dir, supervisor = cluster
    pids = {read_pid(run_dir / "web-1.pid"), read_pid(run_dir / "web-2.pid")}
    assert len(pids) == 2 and all(alive(pid) for pid in pids)
    # SO_REUSEPORT spreads connections by their source port: 40 connections all
    # landing on one of two sockets has a chance of 2 in 10^12.
    answered_by = {healthz(url).json()["pid"] for _ in range(40)}
    assert answered_by == pids

    dead = read_pid(run_dir / "web-1.pid")
    os.kill(dead, signal.SIGKILL)
    assert healthz(url).status_code == 200  # the port still answers
    wait_for(
        lambda: read_pid(run_dir / "web-1.pid") not in (0, dead),
        "the supervisor to start a new process 1",
    )
    wait_for(lambda: answers(url), "the cluster to answer again")

    pids.add(read_pid(run_dir / "web-1.pid"))
    worker = read_pid(run_dir / "run-worker-1.pid")
    assert alive(worker)
    os.kill(worker, signal.SIGKILL)
    wait_for(
        lambda: read_pid(run_dir / "run-worker-1.pid") not in (0, worker),
        "the supervisor to start a new run worker",
    )
    pids |= {worker, read_pid(run_dir / "run-worker-1.pid")}
    supervisor.send_signal(signal.SIGTERM)
    assert supervisor.wait(timeout=PATIENCE) == 0
    assert not list(run_dir.glob("*.pid"))
    assert not any(alive(pid) for pid in pids)


def test_healthz_is_503_when_redis_is_unreachable(tmp_path):
    closed = f"redis://127.0.0.1:{free_port()}/0"
    with LiveServer(tmp_path, extra_env={"REDIS_URL": closed}).serving() as server:
        response = healthz(server.url)
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["database"]["ok"] is True
    assert body["channel_layer"]["ok"] is False
    assert body["channel_layer"]["backend"] == "redis"


def test_healthz_is_503_when_postgresql_is_unreachable(tmp_path):
    closed = f"postgres://chatui@127.0.0.1:{free_port()}/chatui"
    # The pool gives up soon: the server's threads still waiting on it delay its exit.
    server = LiveServer(tmp_path, database_url=closed, extra_env={"CHATUI_DB_POOL_TIMEOUT": "1"})
    server.start()  # no prepare(): there is no database to migrate
    try:
        response = healthz(server.url)
    finally:
        server.stop()
    assert response.status_code == 503
    body = response.json()
    assert body["database"]["ok"] is False and body["database"]["vendor"] == "postgresql"
    assert body["channel_layer"] == {"ok": True, "backend": "redis"}
