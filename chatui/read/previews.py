"""W6 a preview worth reading (docs/rendering.md#w6): a list or rail row previews the
latest assistant text's first sentence — secrets masked (T3), Markdown syntax
stripped — else the latest user message; never a status line, never a tool's output.

Markdown is stripped by parsing it with the page's own parser
(chatui.read.markdown.markdown_tokens) and keeping the text of its first block that has
any: no regex guesses at what `**`, backticks or a link's brackets mean.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from chatui.secrets import mask_text
from chatui.text import clip, collapse_newlines

from .markdown import markdown_tokens

PREVIEW_CHARS = 140
#: The end of a sentence: ., ! or ? (and closing quotes or brackets), then a space.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s")


def plain_blocks(markdown: str, *, code: bool = False) -> Iterator[str]:
    """The text of each Markdown block that has any (a paragraph, heading, list item or
    table cell; with `code`, code blocks too), syntax stripped: inline code keeps its
    text, links their label, images their alt text; line breaks become spaces."""
    for token in markdown_tokens(markdown):
        if code and token.type in ("fence", "code_block"):
            text = " ".join(token.content.split())
            if text:
                yield text
            continue
        if token.type != "inline" or not token.children:
            continue
        parts = []
        for child in token.children:
            if child.type in ("text", "code_inline"):
                parts.append(child.content)
            elif child.type in ("softbreak", "hardbreak"):
                parts.append(" ")
            elif child.type == "image":
                parts.append(child.content)  # its alt text
        text = " ".join("".join(parts).split())
        if text:
            yield text


def plain_text(markdown: str) -> str:
    """The first text block's words (`plain_blocks`): what a one-line preview reads."""
    return next(plain_blocks(markdown), "")


def first_sentence(text: str) -> str:
    found = _SENTENCE_END.search(text)
    return text[: found.end()].rstrip() if found else text


def preview_of(answer: str | None, asked: str | None) -> str:
    """One line: the latest answer's first sentence, else the latest user message.
    Secrets are masked before anything is cut, so a secret is never cut in two and
    half-shown."""
    if answer and answer.strip():
        line = first_sentence(plain_text(mask_text(answer)))
        if line:
            return clip(line, PREVIEW_CHARS)
    return clip(collapse_newlines(mask_text(asked or "")).strip(), PREVIEW_CHARS)
