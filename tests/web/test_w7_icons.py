"""W7 icons (docs/rendering.md#w7): icons are inline SVG from one maintained set (Lucide,
its licence kept with it in chatui/icons/), decorative ones `aria-hidden`, with text for
screen readers where the icon carries meaning; no page depends on an emoji font, and no
icon brings a `style` attribute (the CSP stays strict)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from chatui.ingest.service import ingest
from chatui.templatetags.chatui_icons import ICONS, icon, svg
from tests.support.showcase import showcase_events

#: Code points an emoji font draws: pictographs, dingbats, miscellaneous symbols and
#: technical signs (⏳), geometric shapes (■ ▶ ◆), and the emoji presentation selector.
EMOJI = re.compile(
    "[\U0001f000-\U0001faff\u2600-\u27bf\u2300-\u23ff\u25a0-\u25ff\u2b00-\u2bff\ufe0f]"
)
HOSTILE = '<script>alert("x")</script>'


def emoji_in(html: str) -> list[str]:
    return sorted(set(EMOJI.findall(html)))


def test_w7_the_showcase_page_holds_no_emoji_and_svg_icons(client, user, conversation):
    client.force_login(user)
    assert emoji_in(client.get(reverse("chatui:showcase")).content.decode()) == []
    ingest(conversation, showcase_events())  # the showcase's transcript, every rule in it
    page = client.get(conversation.get_absolute_url()).content.decode()
    assert emoji_in(page) == []
    # the tool entries' marks: failed, succeeded (and the batch's wrench)
    assert 'class="icon icon--circle-x"' in page and 'class="icon icon--check"' in page
    assert 'class="icon icon--wrench"' in page
    icons = re.findall(r"<svg\b[^>]*>", page)
    assert icons and all('aria-hidden="true"' in tag and "style=" not in tag for tag in icons)
    assert emoji_in(client.get(reverse("chatui:conversation-list")).content.decode()) == []
    replay = client.get(reverse("chatui:replay", args=[conversation.pk])).content.decode()
    assert emoji_in(replay) == [] and 'class="icon icon--play"' in replay


def test_w7_meaning_is_in_text_beside_each_mark(client, user, conversation):
    ingest(
        conversation,
        [
            {"type": "agent.tool.started", "tool_call_id": "ok", "tool_name": HOSTILE},
            {"type": "agent.tool.completed", "tool_call_id": "ok", "result": HOSTILE},
            {"type": "agent.tool.started", "tool_call_id": "bad", "tool_name": "x"},
            {"type": "agent.tool.completed", "tool_call_id": "bad", "error": HOSTILE},
            {"type": "agent.tool.started", "tool_call_id": "busy", "tool_name": "y"},
        ],
    )
    client.force_login(user)
    page = client.get(conversation.get_absolute_url()).content.decode()
    assert HOSTILE not in page and emoji_in(page) == []
    heads = re.findall(r'<div class="tool-head">(.*?)</div>', page, re.S)
    assert len(heads) == 3
    for head, mark, said in zip(
        heads,
        ("check", "circle-x", "loader-circle"),  # W3: a running one spins
        ('visually-hidden">succeeded', 'visually-hidden">failed', "running"),
        strict=True,
    ):
        assert f"icon--{mark}" in head and said in head


def test_w7_the_icon_tag_is_safe_and_strict():
    assert svg("check").startswith('<svg class="icon icon--check"')
    assert 'width="24"' not in svg("check")  # sized by CSS
    labelled = icon("play", HOSTILE)
    assert HOSTILE not in labelled and "&lt;script&gt;" in labelled
    assert 'class="visually-hidden"' in labelled
    with pytest.raises(ValueError):
        svg("../secrets")
    assert (ICONS / "LICENSE").read_text().count("Lucide") >= 1
