"""chatui is a reusable app: a second project (tests/host_project) mounts it under
`agents/` with one include("chatui.urls") and none of the CHATUI_* settings, and its
pages and API work there. Run in a subprocess: a process holds one settings module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from chatui.conf import DEFAULTS

ROOT = Path(__file__).resolve().parent.parent


def test_chatui_mounted_under_a_prefix_in_another_project_serves_pages_and_api(tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.host_project.settings",
        "HOST_PROJECT_DB": str(tmp_path / "host.sqlite3"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "tests.host_project.check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    conversation_url = seen.pop("conversation_url")
    assert conversation_url.startswith("/agents/c/")
    assert seen == {
        "created": 201,
        "posted": 200,
        "anonymous": [302, "/accounts/login/?next=/agents/"],
        "page": 200,
        "page_has_message": True,
        "listing": 200,
        "listing_links_under_prefix": True,
        "default_max_event_bytes": DEFAULTS["CHATUI_MAX_EVENT_BYTES"],
    }
