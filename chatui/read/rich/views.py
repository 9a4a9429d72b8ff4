"""The view objects of docs/rendering.md#rich-output: plain data the partials only display.

Every text is `ToolText` (masked before it got here, mentions neutralised: T1, T3) and
every class name a `Key` from a fixed vocabulary (the CSS palette), so the admin's
transform (chatui.read.display) reaches each text and never a class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..display import Key, Text, ToolText


class _View:
    """Django's template engine tries a name as a key first: here the key is the attribute
    (as chatui.read.presenters.TemplateView, which this layer may not import)."""

    __slots__ = ()

    def __getitem__(self, name: str):
        return getattr(self, name)


@dataclass(frozen=True)
class Span(_View):
    """A run of text with one style: `classes` from the fixed palette ("" when plain)."""

    text: ToolText
    classes: Key = ""


@dataclass(frozen=True)
class Line(_View):
    """One line of terminal output or code; `is_error` marks a failed command's error line."""

    spans: tuple[Span, ...]
    is_error: bool = False


@dataclass(frozen=True)
class TerminalView(_View):
    """G17: terminal output, escapes gone, `\\r` applied."""

    kind: ClassVar[str] = "terminal"
    lines: tuple[Line, ...]
    chars: int


@dataclass(frozen=True)
class DiffLine(_View):
    """G18: `kind` is add | del | ctx | hunk (the DOM's data-diff-line)."""

    kind: Key
    sign: Key  # "+", "-", " " or "" (a hunk header)
    text: ToolText
    old: int | None = None  # line numbers, when the diff gives them
    new: int | None = None


@dataclass(frozen=True)
class DiffFile(_View):
    path: ToolText
    lines: tuple[DiffLine, ...]


@dataclass(frozen=True)
class DiffView(_View):
    """G18: one or more files' hunks and the "+12 −3" of the entry's header."""

    kind: ClassVar[str] = "diff"
    files: tuple[DiffFile, ...]
    added: int
    removed: int
    source: ToolText  # what Copy output copies: the diff as text
    chars: int

    @property
    def stat(self) -> str:
        return f"+{self.added} −{self.removed}"


@dataclass(frozen=True)
class CodeView(_View):
    """G19: file contents highlighted by the path's language (Pygments' token classes)."""

    kind: ClassVar[str] = "code"
    path: ToolText
    language: Key  # the lexer's first alias: data-language
    language_name: Text
    lines: tuple[Line, ...]
    chars: int


@dataclass(frozen=True)
class Cell(_View):
    text: ToolText
    numeric: bool = False  # its column's numbers: right-aligned


@dataclass(frozen=True)
class Row(_View):
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Column(_View):
    name: ToolText
    numeric: bool  # every value a number: right-aligned


@dataclass(frozen=True)
class RecordsView(_View):
    """G20: a JSON array of flat objects, or CSV with a header row, as a table."""

    kind: ClassVar[str] = "records"
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    more_text: Text | None  # "150 more rows"
    source: ToolText  # what Copy output copies: the text as received (masked)
    chars: int


@dataclass(frozen=True)
class Pair(_View):
    key: ToolText
    value: ToolText
    is_block: bool  # a string with line breaks: shown as a text block


@dataclass(frozen=True)
class KeyValueView(_View):
    """G20: a JSON object as a key/value list."""

    kind: ClassVar[str] = "keyvalue"
    pairs: tuple[Pair, ...]
    more_text: Text | None
    source: ToolText
    chars: int


@dataclass(frozen=True)
class JsonPiece(_View):
    """G20's Details: pretty JSON, cut where a string holds line breaks; that string is a
    piece of its own (`is_block`), shown as text."""

    text: ToolText
    is_block: bool = False


@dataclass(frozen=True)
class DetailsView(_View):
    pieces: tuple[JsonPiece, ...]


RichView = TerminalView | DiffView | CodeView | RecordsView | KeyValueView
