"""REL3: concurrent writers in separate processes get gap-free seqs, never "locked"."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKERS = 4
EVENTS_PER_WORKER = 60


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_rel3_concurrent_processes_get_gap_free_seqs(tmp_path):
    database = tmp_path / "concurrent.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}", "CHATUI_DATA_DIR": str(tmp_path)}
    migrate = run([sys.executable, "manage.py", "migrate", "-v0"], env)
    assert migrate.returncode == 0, migrate.stderr
    created = run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from django.contrib.auth.models import User; from chatui.models import Conversation;"
            "print(Conversation.objects.create(owner=User.objects.create(username='w')).pk)",
        ],
        env,
    )
    assert created.returncode == 0, created.stderr
    conversation_id = created.stdout.strip().splitlines()[-1]

    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.ingest_worker",
                conversation_id,
                f"w{n}",
                str(EVENTS_PER_WORKER),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(WORKERS)
    ]
    for worker in workers:
        _, stderr = worker.communicate(timeout=300)
        assert worker.returncode == 0, stderr
        assert "locked" not in stderr

    expected = WORKERS * (EVENTS_PER_WORKER + EVENTS_PER_WORKER // 5)
    with sqlite3.connect(database) as db:
        seqs = [
            row[0]
            for row in db.execute(
                "SELECT seq FROM chatui_event WHERE conversation_id = ? ORDER BY seq",
                (conversation_id.replace("-", ""),),
            )
        ]
        (last_seq,) = db.execute(
            "SELECT last_seq FROM chatui_conversation WHERE id = ?",
            (conversation_id.replace("-", ""),),
        ).fetchone()
        (messages,) = db.execute("SELECT count(*) FROM chatui_message").fetchone()
    assert seqs == list(range(1, expected + 1))
    assert last_seq == expected
    assert messages == expected
