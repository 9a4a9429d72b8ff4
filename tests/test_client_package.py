"""The runtime client is its own package (`clients/python`, docs/events.md#python-client): a runtime
installs it alone, gets httpx and nothing of chatui's server (no Django, Channels or daphne), and
can post a run to a real server with it. `chatui.client`, its first name, re-exports it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import chatui_client
import httpx

import chatui.client
from tests.support.live import ROOT

CLIENT_SOURCE = ROOT / "clients" / "python"
SERVER_PACKAGES = {"django", "channels", "daphne", "chatui"}

# Runs in the fresh venv: a small agent run through the installed client.
RUNTIME_SNIPPET = """
import json, sys
import chatui_client
from chatui_client import ChatuiClient, ToolCall

url, token = sys.argv[1:3]
with ChatuiClient(url, token) as chatui:
    conversation = chatui.create_conversation(title="standalone client")
    run = chatui.run(conversation["id"], run_id="run_standalone")
    run.user_message("Does the client need Django?", message_id="msg_u1")
    run.step_completed(
        "Checking.", message_id="msg_a1", tool_calls=[ToolCall("call_1", "check_imports")]
    )
    run.tool_started("call_1", "check_imports", {"module": "django"})
    run.tool_completed("call_1", result="not imported")
    run.completed()
print(json.dumps({
    "conversation_id": conversation["id"],
    "client_file": chatui_client.__file__,
    "django_imported": "django" in sys.modules,
}))
"""


def clean_env() -> dict[str, str]:
    """This process's environment without what would leak chatui's venv into another."""
    hidden = {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "DJANGO_SETTINGS_MODULE"}
    return {name: value for name, value in os.environ.items() if name not in hidden}


def run(*command: str | Path, cwd: Path) -> str:
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def fresh_venv_with_the_client(tmp_path: Path, extras: str = "") -> Path:
    """A new virtualenv with `pip install clients/python[extras]`; returns its python."""
    # A copy, so the build leaves no build/ or egg-info behind in the checkout.
    source = shutil.copytree(
        CLIENT_SOURCE, tmp_path / "source", ignore=shutil.ignore_patterns("*.egg-info")
    )
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    target = f"{source}[{extras}]" if extras else str(source)
    run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", target, cwd=tmp_path)
    return python


def test_sec9_client_installs_alone_and_posts_a_run_without_django(chatui_server, tmp_path):
    python = fresh_venv_with_the_client(tmp_path)

    installed = json.loads(run(python, "-m", "pip", "list", "--format", "json", cwd=tmp_path))
    names = {package["name"].lower() for package in installed}
    assert {"chatui-client", "httpx"} <= names
    assert not names & SERVER_PACKAGES, names

    out = run(python, "-c", RUNTIME_SNIPPET, chatui_server.url, chatui_server.token, cwd=tmp_path)
    report = json.loads(out.strip().splitlines()[-1])
    assert not report["django_imported"]
    # The installed copy ran, not the checkout's source.
    assert Path(report["client_file"]).is_relative_to(tmp_path / "venv")

    with chatui_server.api() as api:
        body = api.get(f"/conversations/{report['conversation_id']}").json()
    assert body["conversation"]["status"] == "completed"
    assert [(m["role"], m["content"]) for m in body["messages"]] == [
        ("user", "Does the client need Django?"),
        ("assistant", "Checking."),
        ("tool", "not imported"),
    ]
    assert body["messages"][2]["metadata"]["tool_status"] == "success"


def test_sec9_chatui_client_is_the_packages_reexport():
    assert chatui.client.__all__ == chatui_client.__all__
    for name in chatui_client.__all__:
        assert getattr(chatui.client, name) is getattr(chatui_client, name)


def test_v4_chatui_verify_checks_an_export_offline_in_a_venv_without_django(
    chatui_server, tmp_path
):
    """docs/auditing.md#verifying-an-export: an auditor with the client's `verify` extra only
    (no Django, no server reachable from the check) verifies an events export, and a
    one-byte change fails it."""
    python = fresh_venv_with_the_client(tmp_path, extras="verify")
    names = {
        package["name"].lower()
        for package in json.loads(
            run(python, "-m", "pip", "list", "--format", "json", cwd=tmp_path)
        )
    }
    assert {"rfc8785", "cryptography"} <= names and not names & SERVER_PACKAGES, names
    with chatui_server.api() as api:
        conversation = api.post("/conversations", json={"title": "audited"}).json()
        events = [
            {"type": "user.message", "content": "Ship it?", "run_id": "r1"},
            {
                "type": "agent.tool.started",
                "tool_call_id": "c1",
                "tool_name": "ship",
                "args": {"to": "<prod>"},
                "run_id": "r1",
            },
            {
                "type": "agent.tool.completed",
                "tool_call_id": "c1",
                "result": "shipped",
                "run_id": "r1",
            },
            {"type": "agent.status", "status": "completed", "run_id": "r1"},
        ]
        api.post(f"/conversations/{conversation['id']}/events", json=events).raise_for_status()
        key = httpx.get(chatui_server.url + "/api/v1/keys").json()["keys"][0]["public_key"]
    export = tmp_path / "events.jsonl"
    export.write_text(
        chatui_server.manage(
            "export_transcript", conversation["id"], "--format", "events", "--reveal-secrets"
        )
    )
    verify = python.parent / "chatui-verify"
    done = subprocess.run(
        [verify, export, "--key", key], env=clean_env(), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "ok: 4 events, chain holds (4 of 4" in done.stdout

    export.write_bytes(export.read_bytes().replace(b"shipped", b"shipper", 1))  # one byte
    done = subprocess.run(
        [verify, export, "--key", key], env=clean_env(), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "fails at seq 3: its content does not match its content hash" in done.stderr
