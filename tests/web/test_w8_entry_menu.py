"""W8 (docs/rendering.md#w8) as the server renders it: a tool entry's Copy output, Copy
args and Details sit behind one menu button in its header — a button that says it opens
a menu, a menu of items that take no Tab stop of their own — on the conversation page, in
a live frame and in the admin alike (one partial), with untrusted text escaped in it."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from chatui.ingest.service import ingest
from chatui.live import frames

HOSTILE = '<img src=x onerror="alert(1)"><script>alert("x")</script>'

EVENTS = [
    {"type": "agent.tool.started", "tool_call_id": "ok", "tool_name": HOSTILE,
     "args": {"path": HOSTILE}},
    {"type": "agent.tool.completed", "tool_call_id": "ok", "result": HOSTILE,
     "details": {"note": HOSTILE}},
    {"type": "agent.tool.started", "tool_call_id": "busy", "tool_name": "slow"},
]  # fmt: skip


def entry_html(page: str, call_id: str) -> str:
    """One entry's markup (it ends with its own `</li>` on a line; the menu's items do not)."""
    start = page.index(f'data-tool-call-id="{call_id}"')
    return page[start : page.index("\n</li>", start)]


@pytest.fixture
def rendered(client, user, conversation) -> str:
    ingest(conversation, EVENTS)
    client.force_login(user)
    return client.get(conversation.get_absolute_url()).content.decode()


def live_frame(conversation, events) -> str:
    """The frame the page receives for `events`, as chatui.live broadcasts it."""
    result = ingest(conversation, events)
    conversation.refresh_from_db()
    first = result.last_seq - result.accepted + 1
    return frames.change_frame(conversation, first, result.last_seq, result.changes).html


def test_w8_one_menu_button_holds_copy_output_copy_args_and_details(rendered):
    entry = entry_html(rendered, "ok")
    head = entry[entry.index('<div class="tool-head">') : entry.index('<div class="tool-call">')]
    button = re.search(r"<button[^>]*data-tool-menu-button[^>]*>", head)
    assert button, "the menu button sits in the entry's header"
    tag = button.group(0)
    assert 'aria-haspopup="menu"' in tag and 'aria-expanded="false"' in tag
    menu_id = re.search(r'aria-controls="([^"]+)"', tag).group(1)
    menu = re.search(rf'<div id="{menu_id}"[^>]*>(.*?)</div>', head, re.S)
    assert menu and 'role="menu"' in menu.group(0) and " hidden" in menu.group(0)
    items = re.findall(r"<button[^>]*>[^<]*</button>", menu.group(1))
    assert [re.sub(r"<[^>]+>", "", item) for item in items] == [
        "Copy output",
        "Copy args",
        "Details",
    ]
    # Items are reached by the arrow keys inside the open menu, never by Tab.
    assert all('role="menuitem"' in item and 'tabindex="-1"' in item for item in items)
    assert "data-copy-output" in items[0] and "data-copy-args" in items[1]
    # Outside the menu, the entry holds no Copy button of its own; Details stays below.
    assert entry.count("data-copy-output") == 1 and entry.count("data-copy-args") == 1
    assert entry.count("data-tool-details") == 1 and "<summary>Details</summary>" in entry


def test_w8_untrusted_text_in_the_menu_stays_text(rendered):
    entry = entry_html(rendered, "ok")
    assert HOSTILE not in rendered and "<script>alert" not in rendered
    label = re.search(r'aria-label="Actions: ([^"]*)"', entry)
    assert label and "&lt;img" in label.group(1)  # the button names its entry, escaped
    copy_args = re.search(r'data-copy-text="([^"]*)"', entry).group(1)
    assert "&lt;script&gt;" in copy_args and "<" not in copy_args


def test_w8_a_running_entry_with_nothing_to_copy_has_no_menu(rendered):
    assert "data-tool-menu-button" not in entry_html(rendered, "busy")


def test_w8_the_live_frame_and_the_admin_render_the_same_menu(
    client, admin_client, user, conversation
):
    frame = live_frame(conversation, EVENTS[:2])
    client.force_login(user)
    page = client.get(conversation.get_absolute_url()).content.decode()
    admin = admin_client.get(
        reverse("admin:chatui_conversation_change", args=[conversation.pk])
    ).content.decode()
    menu = re.compile(r'<div class="tool-menu-wrap">.*?</div>\n</div>', re.S)
    shown = menu.search(entry_html(page, "ok")).group(0)
    assert "data-tool-menu-button" in shown
    assert menu.search(entry_html(frame, "ok")).group(0) == shown
    assert menu.search(entry_html(admin, "ok")).group(0) == shown
