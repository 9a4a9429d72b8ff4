"""Assistant Markdown → sanitised HTML (docs/rendering.md#r2, #sec1, #sec2).

Two layers, so that one mistake is not enough to run script in the page:

1. markdown-it-py (CommonMark + tables + strikethrough) with raw HTML *off*:
   `<script>` or `<div hx-get=…>` in the text comes out as escaped text.
   Images are rendered by our own rule: only same-origin paths ("/x.png")
   stay images; anything else becomes a plain link with the alt text, so a
   model cannot exfiltrate data through an image URL the browser would fetch
   on its own (SEC2). The rule runs on the token stream, so inline and
   reference-style images are treated alike.
2. nh3 with an explicit allowlist of tags and attributes: no `on*`, no
   `style`, no `hx-*`/`data-*`, URLs only http/https/mailto or relative, and
   an extra check of every href/src after decoding percent-escapes and
   dropping whitespace, so `java\\tscript:` and friends die too.

Code blocks stay `<pre><code class="language-x">`; copy buttons are added by
a static script, not here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from html import unescape
from urllib.parse import unquote

import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6",
    "strong", "em", "del", "s", "code", "pre", "blockquote",
    "ul", "ol", "li", "a", "img",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "code": {"class"},
    "ol": {"start"},
    "th": {"class"},
    "td": {"class"},
}
URL_SCHEMES = {"http", "https", "mailto"}
LINK_REL = "nofollow noopener noreferrer"

_CODE_CLASS = re.compile(r"language-[A-Za-z0-9_+#.-]{1,40}")
_ALIGN_CLASS = re.compile(r"align-(left|center|right)")
_SCHEME = re.compile(r"([a-z][a-z0-9+.-]*):")
# ASCII whitespace and control characters, which browsers drop inside URLs.
_URL_NOISE = re.compile(r"[\x00-\x20\x7f]+")


def is_same_origin_path(url: str) -> bool:
    """True for "/path" only: not "//host", not "/\\host", not any scheme."""
    cleaned = _URL_NOISE.sub("", unquote(unescape(url)))
    return cleaned.startswith("/") and not cleaned.startswith(("//", "/\\"))


def _safe_url(url: str) -> bool:
    """A URL is kept when it is relative or uses an allowed scheme, however disguised."""
    cleaned = _URL_NOISE.sub("", unquote(unescape(url))).lower()
    match = _SCHEME.match(cleaned)
    return match is None or match.group(1) in URL_SCHEMES


def _attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    if attribute in ("href", "src") and not _safe_url(value):
        return None
    if tag == "img" and attribute == "src" and not is_same_origin_path(value):
        return None  # SEC2 backstop: the renderer already turned these into links
    if attribute == "class":
        pattern = _CODE_CLASS if tag == "code" else _ALIGN_CLASS
        return value if pattern.fullmatch(value) else None
    return value


def _render_image(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    """SEC2: an image from another origin renders as a link to it, with the alt text."""
    token = tokens[idx]
    src = token.attrGet("src") or ""
    alt = self.renderInlineAsText(token.children or [], options, env)
    if is_same_origin_path(src):
        return _img(src, alt, token.attrGet("title"))
    label = alt or src
    return f'<a href="{escape(src)}">{escape(label)}</a>'


def _img(src: str, alt: str, title: str | None) -> str:
    title_attr = f' title="{escape(title)}"' if title else ""
    return f'<img src="{escape(src)}" alt="{escape(alt)}"{title_attr}>'


def _align_to_class(state: StateCore) -> None:
    """Table alignment comes as style="text-align:x"; styles are not allowed, classes are."""
    for token in state.tokens:
        if token.type in ("th_open", "td_open"):
            style = token.attrGet("style") or ""
            token.attrs.pop("style", None)
            match = re.fullmatch(r"text-align:(left|center|right)", style)
            if match:
                token.attrSet("class", f"align-{match.group(1)}")


def _build_markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _render_image)
    md.core.ruler.push("chatui_align_to_class", _align_to_class)
    return md


_MARKDOWN = _build_markdown()
_CLEANER = nh3.Cleaner(
    tags=ALLOWED_TAGS,
    clean_content_tags={"script", "style"},
    attributes=ALLOWED_ATTRIBUTES,
    attribute_filter=_attribute_filter,
    url_schemes=URL_SCHEMES,
    link_rel=LINK_REL,
    strip_comments=True,
)


def markdown_tokens(text: str) -> list[Token]:
    """The page's parse of `text` (the same parser as `render_markdown`), for readers of
    its text rather than its HTML (chatui.read.previews)."""
    return _MARKDOWN.parse(text)


@lru_cache(maxsize=4096)
def render_markdown(text: str) -> SafeString:
    """Markdown source → HTML that is safe to insert into the page as is.

    Cached by text: the output depends on nothing else, and page loads and full
    live frames render the same finished messages again and again (bench/p3)."""
    if not text:
        return mark_safe("")
    html = _MARKDOWN.render(text)
    # nh3's output is the safe form: that is what marking it safe asserts.
    return mark_safe(_CLEANER.clean(html))
