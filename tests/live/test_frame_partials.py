"""docs/PERFORMANCE.md#p2: live frames render their partials without looking the template up
each time (frames.render_partial), and that changes no byte of what they render."""

from __future__ import annotations

from pathlib import Path

from django.template.loader import render_to_string
from django.utils.autoreload import file_changed

import chatui
from chatui.ingest.service import ingest
from chatui.live import frames
from chatui.read import pages, presenters
from tests.support.showcase import showcase_events

TEMPLATE = frames.TEMPLATE
TEMPLATE_FILE = Path(chatui.__file__).parent / "templates" / TEMPLATE


def shown_items(conversation) -> list[presenters.Item]:
    ingest(conversation, showcase_events())
    conversation.refresh_from_db()
    return presenters.present_transcript(list(conversation.messages.order_by("position")))


def both_ways(name: str, context: dict) -> tuple[str, str]:
    return frames.render_partial(name, context), render_to_string(name, context)


def test_every_partial_a_frame_renders_is_the_html_render_to_string_gives(conversation):
    items = shown_items(conversation)
    kinds = {item.kind for item in items}
    assert kinds == {"user", "assistant", "status", "tool_batch"}  # every kind is tried
    for item in items:
        fast, slow = both_ways(TEMPLATE + "#item", {"item": item})
        assert fast == slow
        if isinstance(item, presenters.ToolBatchView):
            fast, slow = both_ways(TEMPLATE + "#batch-summary", {"item": item, "oob": True})
            assert fast == slow
            for entry in presenters.iter_entries(item.entries):
                fast, slow = both_ways(TEMPLATE + "#tool-entry", {"entry": entry})
                assert fast == slow
    context = pages.transcript_context(conversation)
    fast, slow = both_ways(TEMPLATE + "#transcript-oob", context)
    assert fast == slow and 'id="transcript"' in fast
    context = {"conversation": conversation, "oob": True, "accepts_input": True}
    fast, slow = both_ways("chatui/_run_state.html", context)
    assert fast == slow and 'id="run-state"' in fast


def test_a_changed_template_file_is_looked_up_again(conversation):
    """runserver's autoreload resets the template loaders when a template file changes,
    without restarting: the partials found before are forgotten with them."""
    item = shown_items(conversation)[0]
    frames.render_partial(TEMPLATE + "#item", {"item": item})
    assert TEMPLATE + "#item" in frames._TEMPLATES
    file_changed.send(sender=None, file_path=TEMPLATE_FILE)
    assert TEMPLATE + "#item" not in frames._TEMPLATES


def test_a_template_setting_changed_is_looked_up_again(conversation, settings):
    item = shown_items(conversation)[0]
    frames.render_partial(TEMPLATE + "#item", {"item": item})
    settings.TEMPLATES = [*settings.TEMPLATES]
    assert TEMPLATE + "#item" not in frames._TEMPLATES
