"""Invisible characters made visible to auditors (SPEC §11), stored text unchanged.

Bidi controls, zero-width characters, other format and control characters and
tag characters can make a transcript read differently from what it holds.
`reveal_invisible` escapes text and shows each such character as a styled
`⟨U+202E⟩` marker; `reveal_items` does the same over the presenter's view
objects, so the admin's transcript uses the page's partials unchanged.
"""

from __future__ import annotations

import dataclasses
import json
import re
import unicodedata
from functools import lru_cache
from typing import Any

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from . import presenters
from .text import ZWSP

# -- invisible characters ------------------------------------------------------------

#: Shown as they are: ordinary whitespace.
_KEEP = frozenset("\t\n\r")
#: Invisible or blank-looking characters outside the categories below.
_EXTRA_INVISIBLE = frozenset(
    {
        0x034F,  # combining grapheme joiner
        0x115F,  # hangul choseong filler
        0x1160,  # hangul jungseong filler
        0x17B4,  # khmer vowel inherent aq
        0x17B5,  # khmer vowel inherent aa
        0x180B,  # mongolian free variation selectors
        0x180C,
        0x180D,
        0x180F,
        0x3164,  # hangul filler
        0xFFA0,  # halfwidth hangul filler
    }
)
#: Everything but printable ASCII and ordinary whitespace is a candidate.
_CANDIDATE = re.compile(r"[^\t\n\r\x20-\x7e]")
#: A tag in nh3's serialised HTML (attribute values are always double-quoted).
_HTML_TAG = re.compile(r"""(<(?:[^>"']|"[^"]*"|'[^']*')*>)""")


def is_invisible(char: str) -> bool:
    """Bidi controls, zero-width and other format (Cf) characters, control
    characters (Cc) but tab and line breaks, line/paragraph separators, tag
    characters and the supplementary variation selectors used to smuggle text."""
    if char in _KEEP:
        return False
    code = ord(char)
    if code in _EXTRA_INVISIBLE or 0xE0100 <= code <= 0xE01EF:
        return True
    return unicodedata.category(char) in ("Cf", "Cc", "Zl", "Zp")


def marker_label(char: str) -> str:
    return f"⟨U+{ord(char):04X}⟩"


@lru_cache(maxsize=1024)
def _marker_html(char: str) -> str:
    code = f"U+{ord(char):04X}"
    name = unicodedata.name(char, "") or "control character"
    return format_html(
        '<span class="invisible-char" data-invisible="{}" title="{}">{}</span>',
        code,
        f"{code} {name}",
        marker_label(char),
    )


def _substitute(text: str, replace, keep) -> str:
    """`keep` each run of ordinary text, `replace` each invisible character."""
    parts: list[str] = []
    last = 0
    for match in _CANDIDATE.finditer(text):
        char = match.group()
        if not is_invisible(char):
            continue
        parts.append(keep(text[last : match.start()]))
        parts.append(replace(char))
        last = match.end()
    parts.append(keep(text[last:]))
    return "".join(parts)


def has_invisible(text: str) -> bool:
    return any(is_invisible(match.group()) for match in _CANDIDATE.finditer(text or ""))


def reveal_text(text: Any) -> str:
    """Plain text with every invisible character replaced by its `⟨U+XXXX⟩` label
    (for places that cannot hold markup, such as the page's <title>)."""
    return _substitute("" if text is None else str(text), marker_label, str)


def reveal_invisible(text: Any) -> SafeString:
    """`text` (plain text, never trusted) escaped, each invisible character shown
    as a styled `⟨U+XXXX⟩` marker. The text itself is not changed anywhere else."""
    return mark_safe(_substitute("" if text is None else str(text), _marker_html, escape))


def _reveal_html(html: str) -> SafeString:
    """Markers in the text of already-sanitised HTML (assistant Markdown), never
    inside a tag or an attribute value."""
    pieces = _HTML_TAG.split(str(html))
    return mark_safe(
        "".join(
            piece if index % 2 else _substitute(piece, _marker_html, str)
            for index, piece in enumerate(pieces)
        )
    )


def _reveal_tool_text(text: str | None) -> SafeString | None:
    """Tool text is neutralised (T1: every "@" is followed by a U+200B the presenter
    added). Undo that, reveal what the runtime really sent, then neutralise again
    with a ZWSP that is ours and therefore not shown."""
    if text is None:
        return None
    original = str(text).replace("@" + ZWSP, "@")
    return mark_safe(str(reveal_invisible(original)).replace("@", "@" + ZWSP))


def _reveal_entry(entry: presenters.ToolEntryView) -> presenters.ToolEntryView:
    result = entry.result
    if result is not None:
        result = dataclasses.replace(
            result,
            text=_reveal_tool_text(result.text),
            full_text=_reveal_tool_text(result.full_text),  # G16
        )
    kind_view = entry.kind_view
    if kind_view is not None:
        kind_view = dataclasses.replace(
            kind_view,
            rows=tuple(
                dataclasses.replace(row, value=_reveal_tool_text(row.value))
                for row in kind_view.rows
            ),
        )
    approval = entry.approval
    if approval is not None:  # SPEC §13: the runtime's reason, the decider's note
        approval = dataclasses.replace(
            approval,
            reason=_reveal_tool_text(approval.reason),
            line=_reveal_tool_text(approval.line),
        )
    return dataclasses.replace(
        entry,
        approval=approval,
        title=_reveal_tool_text(entry.title),
        call_line=_reveal_tool_text(entry.call_line),
        result=result,
        error=_reveal_tool_text(entry.error),
        details_json=_reveal_tool_text(entry.details_json),
        kind_view=kind_view,
        progress_line=_reveal_tool_text(entry.progress_line),
        output_tail=_reveal_tool_text(entry.output_tail),
        retry_line=_reveal_tool_text(entry.retry_line),
        # An attribute value (Copy args) holds no markup: its labels are plain text.
        args_text=reveal_text(entry.args_text) if entry.args_text is not None else None,
        children=tuple(_reveal_entry(child) for child in entry.children),
    )


def reveal_items(items: list[presenters.Item]) -> list[presenters.Item]:
    """The admin's pass over the presenter's view objects: the same items, with
    every text the partials show carrying visible markers for invisible characters.
    Attribute values (ids) are left alone: they are not shown."""
    revealed: list[presenters.Item] = []
    for item in items:
        if isinstance(item, presenters.UserView):
            item = dataclasses.replace(item, text=reveal_invisible(item.text))
        elif isinstance(item, presenters.AssistantView):
            item = dataclasses.replace(item, html=_reveal_html(item.html))
        elif isinstance(item, presenters.StatusView):
            continuation = item.continuation
            if continuation is not None:
                continuation = dataclasses.replace(
                    continuation,
                    stop_reason=reveal_invisible(continuation.stop_reason),
                    resolved_by=reveal_invisible(continuation.resolved_by),
                )
            item = dataclasses.replace(
                item, text=reveal_invisible(item.text), continuation=continuation
            )
        elif isinstance(item, presenters.ToolBatchView):
            live = item.live
            if live is not None:  # §10: the running entry in the summary
                live = dataclasses.replace(
                    live,
                    title=_reveal_tool_text(live.title),
                    progress_line=_reveal_tool_text(live.progress_line),
                )
            item = dataclasses.replace(
                item,
                title=_reveal_tool_text(item.title),
                names_text=_reveal_tool_text(item.names_text),
                live=live,
                entries=tuple(_reveal_entry(entry) for entry in item.entries),
            )
        revealed.append(item)
    return revealed


def pretty_json(value: Any) -> SafeString:
    """A JSON value, pretty-printed, escaped, invisible characters revealed."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=False)
    # tabindex: a scrollable box must be reachable by keyboard (axe, SPEC §10).
    return format_html('<pre class="chatui-json" tabindex="0">{}</pre>', reveal_invisible(text))


def revealed_block(text: str) -> SafeString:
    return format_html('<div class="chatui-text">{}</div>', reveal_invisible(text))


# -- filters -------------------------------------------------------------------------
