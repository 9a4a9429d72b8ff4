"""Real Chromium (Debian's) driven by Playwright against the real daphne server."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.support.browser import AUDITOR, AUDITOR_PASSWORD, Watch
from tests.support.live import PASSWORD, USERNAME

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

pytestmark = pytest.mark.browser


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def auth_state(browser, chatui_server, tmp_path_factory) -> str:
    """Log in once through the real login form; every test reuses the session."""
    path = str(tmp_path_factory.mktemp("auth") / "state.json")
    context = browser.new_context()
    page = context.new_page()
    page.goto(chatui_server.url + "/accounts/login/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(chatui_server.url + "/")
    context.storage_state(path=path)
    context.close()
    return path


@pytest.fixture
def open_page(browser, auth_state, chatui_server):
    """Open pages (tabs) logged in as the e2e user; each with its Watch."""
    contexts = []

    def opener(path: str = "/", *, width: int = 1280, height: int = 900) -> tuple[Page, Watch]:
        context = browser.new_context(
            storage_state=auth_state, viewport={"width": width, "height": height}
        )
        contexts.append(context)
        page = context.new_page()
        watch = Watch(origin=f"127.0.0.1:{chatui_server.port}")
        watch.attach(page)
        page.goto(chatui_server.url + path)
        return page, watch

    yield opener
    for context in contexts:
        context.close()


@pytest.fixture
def page(open_page):
    page, _ = open_page("/")
    return page


@pytest.fixture(scope="session")
def auditor_login(chatui_server) -> tuple[str, str]:
    """A staff user in the `auditor` group on the live server's own database. Made once
    for the session's server (no test changes it; each manage.py run costs a Django
    start-up): the modules that log in as the auditor share it."""
    chatui_server.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import Group, User\n"
        f"user, _ = User.objects.get_or_create(username={AUDITOR!r})\n"
        "user.is_staff = True\n"
        f"user.set_password({AUDITOR_PASSWORD!r})\n"
        "user.save()\n"
        "user.groups.add(Group.objects.get(name='auditor'))\n",
    )
    return AUDITOR, AUDITOR_PASSWORD
