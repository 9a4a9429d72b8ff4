"""W7 icons (docs/rendering.md#w7): `{% icon "name" %}` inlines one of the Lucide SVGs
vendored in chatui/icons/ (licence beside them), so no icon depends on an emoji font.

An icon is decorative by default (`aria-hidden`, not focusable): the text beside it
says what it means. `{% icon "name" "label" %}` gives one that stands alone a text
alternative (a visually hidden label, read by screen readers). No `style` attribute:
size and colour come from chatui.css (`.icon`, `currentColor`), so the strict CSP holds.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

ICONS = Path(__file__).resolve().parent.parent / "icons"
_NAME = re.compile(r"[a-z0-9-]+")
_OPEN_TAG = re.compile(r"<svg\b[^>]*>", re.S)


@cache
def svg(name: str) -> SafeString:
    """The icon's markup, its own width and height dropped (CSS sizes it). An unknown
    name is a programming error: it fails loudly rather than render nothing."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"not an icon name: {name!r}")
    source = (ICONS / f"{name}.svg").read_text(encoding="utf-8")
    body = _OPEN_TAG.sub("", source, count=1).replace("</svg>", "")
    body = " ".join(body.split())
    opening = (
        f'<svg class="icon icon--{name}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"'
        ' fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round"'
        ' stroke-linejoin="round" aria-hidden="true" focusable="false">'
    )
    return mark_safe(f"{opening}{body}</svg>")  # our own vendored files, no user text


@register.simple_tag
def icon(name: str, label: str = "") -> SafeString:
    if not label:
        return svg(name)
    return format_html('{}<span class="visually-hidden">{}</span>', svg(name), label)
