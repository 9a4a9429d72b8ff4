"""Invisible characters made visible to auditors (docs/rendering.md#admin), stored text unchanged.

Bidi controls, zero-width characters, other format and control characters and
tag characters can make a transcript read differently from what it holds.
`reveal_invisible` escapes text and shows each such character as a styled
`⟨U+202E⟩` marker; `SHOW_INVISIBLE` is the presenters' display (chatui.read.display)
that does the same to every text of the view objects, so the admin's transcript
uses the page's partials unchanged.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from typing import Any

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from chatui.text import ZWSP, is_invisible

from .display import Display, TextKind

# -- invisible characters ------------------------------------------------------------

#: Everything but printable ASCII and ordinary whitespace is a candidate.
_CANDIDATE = re.compile(r"[^\t\n\r\x20-\x7e]")
#: A tag in nh3's serialised HTML (attribute values are always double-quoted).
_HTML_TAG = re.compile(r"""(<(?:[^>"']|"[^"]*"|'[^']*')*>)""")


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


def show_invisible(text: str, kind: TextKind) -> str:
    """The admin's transform of every text a presented view shows (chatui.read.display):
    visible markers for invisible characters, each kind of text in its own way."""
    if kind == "html":
        return _reveal_html(text)
    if kind == "tool":
        return _reveal_tool_text(text)
    if kind == "attribute":  # an attribute value holds no markup: plain labels
        return reveal_text(text)
    return reveal_invisible(text)


#: The admin's transcript: secrets masked (T3), invisible characters marked
#: (docs/rendering.md#admin).
SHOW_INVISIBLE = Display(transform=show_invisible)


def pretty_json(value: Any) -> SafeString:
    """A JSON value, pretty-printed, escaped, invisible characters revealed."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=False)
    # tabindex: a scrollable box must be reachable by keyboard (axe,
    # docs/rendering.md#accessibility).
    return format_html('<pre class="chatui-json" tabindex="0">{}</pre>', reveal_invisible(text))


def revealed_block(text: str) -> SafeString:
    return format_html('<div class="chatui-text">{}</div>', reveal_invisible(text))


# -- filters -------------------------------------------------------------------------
