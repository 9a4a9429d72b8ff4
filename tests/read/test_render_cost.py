"""docs/PERFORMANCE.md#p2: what makes a live frame's template renders cheaper changes no output.

A message's HTML is kept by its view (chatui.live.frames), the views answer the template
engine's key lookup (presenters.TemplateView), and the partials print numbers
unlocalized. tests/live/test_tool_frame_cost.py holds the byte-exact frames; these tests
prove the rules that keep those shortcuts exact."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from django.template import Context, Template
from django.utils import timezone

from chatui.live import frames
from chatui.read import presenters

MOMENT = datetime(2026, 11, 2, 11, 0, tzinfo=UTC)


def user_view(**fields) -> presenters.UserView:
    values = {
        "dom_id": "m-1",
        "pk": 1,
        "message_id": "msg-1",
        "timestamp": MOMENT,
        "timestamp_iso": MOMENT.isoformat(),
        **presenters.shown_times(MOMENT),  # in the active time zone
        "updated_seq": 12345,
        "text": "hello",
    }
    return presenters.UserView(**(values | fields))


def assistant_view(**fields) -> presenters.AssistantView:
    values = {
        "dom_id": "m-2",
        "pk": 2,
        "message_id": "a-1",
        "timestamp": MOMENT,
        "timestamp_iso": MOMENT.isoformat(),
        **presenters.shown_times(MOMENT),
        "updated_seq": 7,
        "html": "<p>done</p>",
        "is_streaming": False,
        "meta_line": "1.0 s · 10 tokens",
        "run_id": "r",
    }
    return presenters.AssistantView(**(values | fields))


def test_kept_message_html_follows_the_active_time_zone(db):
    """The view carries its time as shown in the zone active when it was presented."""
    in_utc = frames._render_item(user_view(), append=False)
    with timezone.override("Asia/Tokyo"):
        in_tokyo = frames._render_item(user_view(), append=False)
    assert ">11:00</time>" in in_utc and 'title="2026-11-02 11:00:00 UTC"' in in_utc
    assert ">20:00</time>" in in_tokyo and 'title="2026-11-02 20:00:00 JST"' in in_tokyo
    assert frames._render_item(user_view(), append=False) == in_utc


def test_kept_message_html_is_per_view_value(db):
    view = assistant_view()
    first = frames._render_item(view, append=False)
    assert frames._render_item(replace(view), append=False) == first
    moved = frames._render_item(replace(view, meta_line=None), append=False)
    assert "data-meta-line" in first and "data-meta-line" not in moved


def test_huge_message_html_is_rendered_not_kept(db):
    frames._MESSAGE_HTML.clear()
    small, huge = user_view(), user_view(text="x" * frames.KEPT_HTML_CHARS)
    frames._render_item(small, append=False)
    frames._render_item(huge, append=False)
    kept = [key[0] for key in frames._MESSAGE_HTML._entries]
    assert kept == [small]


def test_seqs_and_ids_are_printed_unlocalized(db, settings):
    settings.USE_THOUSAND_SEPARATOR = True
    html = frames._render_item(user_view(), append=False)
    assert 'data-seq="12345"' in html


def test_a_name_a_view_lacks_still_renders_empty_and_text_stays_escaped():
    template = Template("{{ v.missing }}|{{ v.text }}|{{ v.0 }}")
    out = template.render(Context({"v": user_view(text="<script>x</script>")}))
    assert out == "|&lt;script&gt;x&lt;/script&gt;|"
