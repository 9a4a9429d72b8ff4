"""HTTPS deployment switches and security headers on every response.

Settings are read once per process, so each configuration runs in its own: a
`manage.py` subprocess, or a real daphne.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.core.management.utils import get_random_secret_key

from tests.support.live import ROOT, LiveServer

SWITCHES = (
    "CHATUI_HTTPS",
    "CHATUI_SSL_REDIRECT",
    "CHATUI_HSTS_SECONDS",
    "CHATUI_HSTS_INCLUDE_SUBDOMAINS",
    "CHATUI_HSTS_PRELOAD",
    "CHATUI_BEHIND_TLS_PROXY",
)
ALL_ON = {
    "CHATUI_HTTPS": "1",
    "CHATUI_HSTS_INCLUDE_SUBDOMAINS": "1",
    "CHATUI_HSTS_PRELOAD": "1",
}


def deployment_env(data_dir: Path, **switches: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in SWITCHES}
    return {
        **env,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_SECRET_KEY": get_random_secret_key(),
        "DJANGO_DEBUG": "0",
        "DJANGO_ALLOWED_HOSTS": "chat.example.com",
        "CHATUI_DATA_DIR": str(data_dir),
        **switches,
    }


def check_deploy(data_dir: Path, **switches: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=deployment_env(data_dir, **switches),
        capture_output=True,
        text=True,
        timeout=120,
    )


def settings_with(data_dir: Path, *names: str, **switches: str) -> dict:
    code = (
        "import json; from django.conf import settings;"
        f"print(json.dumps({{name: getattr(settings, name) for name in {names!r}}}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=deployment_env(data_dir, **switches),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


def test_https_switches_make_check_deploy_clean(tmp_path):
    done = check_deploy(tmp_path, **ALL_ON)
    assert done.returncode == 0, done.stderr
    assert "no issues" in done.stdout


def test_without_https_switches_check_deploy_names_what_is_missing(tmp_path):
    done = check_deploy(tmp_path)
    assert done.returncode != 0
    for warning in ("W004", "W008", "W012", "W016"):  # HSTS, redirect, both cookies
        assert f"security.{warning}" in done.stderr


def test_https_switch_turns_on_secure_cookies_hsts_and_redirect(tmp_path):
    names = (
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SECURE_SSL_REDIRECT",
        "SECURE_HSTS_SECONDS",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS",
        "SECURE_HSTS_PRELOAD",
        "SECURE_PROXY_SSL_HEADER",
    )
    assert settings_with(tmp_path, *names, CHATUI_HTTPS="1") == {
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31_536_000,
        # These reach beyond the app, and trusting the proxy's header is only safe
        # behind a proxy: each is its own switch.
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
        "SECURE_HSTS_PRELOAD": False,
        "SECURE_PROXY_SSL_HEADER": None,
    }
    assert settings_with(tmp_path, "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS") == {
        "SECURE_SSL_REDIRECT": False,
        "SECURE_HSTS_SECONDS": 0,
    }


def test_behind_tls_proxy_switch_trusts_x_forwarded_proto(tmp_path):
    got = settings_with(tmp_path, "SECURE_PROXY_SSL_HEADER", CHATUI_BEHIND_TLS_PROXY="1")
    assert got == {"SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"]}


# -- on a real daphne -------------------------------------------------------------------


@pytest.fixture(scope="module")
def https_server(tmp_path_factory) -> Iterator[LiveServer]:
    """chatui behind a TLS proxy: the proxy's X-Forwarded-Proto says https."""
    server = LiveServer(
        tmp_path_factory.mktemp("https"),
        extra_env={**ALL_ON, "CHATUI_BEHIND_TLS_PROXY": "1"},
    )
    with server.serving():
        yield server


def test_https_deployment_redirects_plain_http(https_server):
    response = httpx.get(https_server.url + "/accounts/login/")
    assert response.status_code == 301
    assert response.headers["location"] == f"https://127.0.0.1:{https_server.port}/accounts/login/"


def test_https_deployment_sends_hsts_and_secure_cookies(https_server):
    response = httpx.get(
        https_server.url + "/accounts/login/", headers={"X-Forwarded-Proto": "https"}
    )
    assert response.status_code == 200
    hsts = response.headers["strict-transport-security"]
    assert hsts == "max-age=31536000; includeSubDomains; preload"
    assert "; secure" in response.headers["set-cookie"].lower()


PAGE_SECURITY_HEADERS = (
    "content-security-policy",
    "x-content-type-options",
    "referrer-policy",
    "x-frame-options",
    "cross-origin-opener-policy",
)


def test_static_files_carry_the_pages_security_headers(chatui_server):
    page = httpx.get(chatui_server.url + "/accounts/login/")
    static = httpx.get(chatui_server.url + "/static/chatui/chatui.js")
    assert static.status_code == 200
    for name in PAGE_SECURITY_HEADERS:
        assert static.headers.get(name) == page.headers[name], name
