"""G19 code: file contents highlighted by the path's language with Pygments, on the server,
as spans carrying Pygments' own short token classes (`k`, `nf`, `s2`, …), which
chatui/static/chatui/code.css styles for the light and the dark scheme
(scripts/code_css.py writes it). Unknown languages stay plain (no view)."""

from __future__ import annotations

import posixpath
from functools import lru_cache
from typing import Any

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_for_filename
from pygments.lexers.special import TextLexer
from pygments.token import STANDARD_TYPES, Token
from pygments.util import ClassNotFound

from chatui.text import clip, neutralise

from .views import CodeView, Line, Span

PATH_CHARS = 300


@lru_cache(maxsize=512)
def lexer_for(name: str) -> Lexer | None:
    """The lexer for a file name (its base name: `Makefile`, `app.py`), or None."""
    try:
        lexer = get_lexer_for_filename(name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None
    return None if isinstance(lexer, TextLexer) else lexer


@lru_cache(maxsize=256)
def token_class(ttype: Any) -> str:
    """Pygments' short class of a token type (its nearest ancestor that has one)."""
    while ttype not in STANDARD_TYPES:
        ttype = ttype.parent
    return STANDARD_TYPES[ttype]


def language_of(path: str) -> Lexer | None:
    name = posixpath.basename(path.replace("\\", "/").strip())
    return lexer_for(name) if name else None


def present_code(path: str, text: str) -> CodeView | None:
    """G19: `text` as the file at `path` highlighted, one `Line` per line; None when the
    path's language is unknown."""
    lexer = language_of(path)
    if lexer is None:
        return None
    lines: list[list[Span]] = [[]]
    for ttype, value in lexer.get_tokens(text.replace("\r\n", "\n")):
        css = "" if ttype is Token.Text or ttype is Token.Text.Whitespace else token_class(ttype)
        parts = value.split("\n")
        for n, part in enumerate(parts):
            if n:
                lines.append([])
            if part:
                current = lines[-1]
                if current and current[-1].classes == css:
                    current[-1] = Span(current[-1].text + neutralise(part), css)
                else:
                    current.append(Span(neutralise(part), css))
    while len(lines) > 1 and not lines[-1]:
        lines.pop()
    return CodeView(
        path=neutralise(clip(path, PATH_CHARS)),
        language=lexer.aliases[0] if lexer.aliases else lexer.name.lower(),
        language_name=lexer.name,
        lines=tuple(Line(tuple(spans)) for spans in lines),
        chars=len(text),
    )
