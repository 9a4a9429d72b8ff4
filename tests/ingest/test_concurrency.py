"""REL3 + REL1: concurrent writers in separate processes get gap-free seqs, each event
stored exactly once, and never "database is locked" — on SQLite (`make test`) and on
PostgreSQL (`make test-cluster`, where the row lock, not a process lock, orders them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.live import cluster_mode, create_postgres_database

ROOT = Path(__file__).resolve().parents[2]
WORKER_NAMES = ("w0", "w1")  # each name runs twice: the same events from two processes
EVENTS_PER_WORKER = 60


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def manage_shell(code: str, env: dict[str, str]) -> str:
    done = run([sys.executable, "manage.py", "shell", "-c", code], env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_rel3_concurrent_processes_get_gap_free_seqs_and_each_event_once(tmp_path):
    database = (
        create_postgres_database(os.environ["DATABASE_URL"])
        if cluster_mode()
        else f"sqlite:///{tmp_path / 'concurrent.sqlite3'}"
    )
    env = {**os.environ, "DATABASE_URL": database, "CHATUI_DATA_DIR": str(tmp_path)}
    migrate = run([sys.executable, "manage.py", "migrate", "-v0"], env)
    assert migrate.returncode == 0, migrate.stderr
    conversation_id = manage_shell(
        "from django.contrib.auth.models import User; from chatui.models import Conversation;"
        "print(Conversation.objects.create(owner=User.objects.create(username='w')).pk)",
        env,
    )

    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.ingest_worker",
                conversation_id,
                name,
                str(EVENTS_PER_WORKER),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in WORKER_NAMES * 2
    ]
    for worker in workers:
        _, stderr = worker.communicate(timeout=300)
        assert worker.returncode == 0, stderr
        assert "locked" not in stderr

    stored = json.loads(
        manage_shell(
            "import json; from chatui.models import Conversation, Event, Message;"
            f"c = Conversation.objects.get(pk={conversation_id!r});"
            "events = Event.objects.filter(conversation=c).order_by('seq');"
            "print(json.dumps({'seqs': [e.seq for e in events],"
            " 'event_ids': [e.event_id for e in events], 'last_seq': c.last_seq,"
            " 'messages': Message.objects.filter(conversation=c).count()}))",
            env,
        )
    )
    expected = len(WORKER_NAMES) * (EVENTS_PER_WORKER + EVENTS_PER_WORKER // 5)
    assert stored["seqs"] == list(range(1, expected + 1))
    assert len(set(stored["event_ids"])) == expected
    assert stored["last_seq"] == expected
    assert stored["messages"] == expected
