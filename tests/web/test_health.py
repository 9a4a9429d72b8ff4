"""/healthz: 200 when the database and the channel layer answer, 503 otherwise
(docs/SCALING.md; cluster mode's own checks are in tests/cluster/test_serve.py)."""

from __future__ import annotations

import httpx
import pytest
from django.db import connection

from tests.support.live import LiveServer, cluster_mode


@pytest.mark.django_db(transaction=True)
def test_healthz_names_the_database_and_channel_layer(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response["Cache-Control"].startswith("max-age=0")
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"] == {"ok": True, "vendor": connection.vendor}
    backend = "redis" if cluster_mode() else "in-memory"
    assert body["channel_layer"] == {"ok": True, "backend": backend}


@pytest.mark.sqlite_only(reason="breaks the database by giving SQLite a folder that is not there")
def test_healthz_is_503_when_the_database_cannot_be_opened(tmp_path):
    server = LiveServer(tmp_path, database_url=f"sqlite:///{tmp_path / 'missing' / 'db.sqlite3'}")
    server.start()  # no prepare(): nothing could migrate that database
    try:
        response = httpx.get(server.url + "/healthz", timeout=30)
    finally:
        server.stop()
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["database"] == {"ok": False, "vendor": "sqlite", "error": "OperationalError"}
    assert body["channel_layer"]["ok"] is True
