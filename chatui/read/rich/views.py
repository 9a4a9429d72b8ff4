"""The view objects of docs/rendering.md#rich-output: plain data the partials only display.

Every text is `ToolText` (masked before it got here, mentions neutralised: T1, T3) and
every class name a `Key` from a fixed vocabulary (the CSS palette), so the admin's
transform (chatui.read.display) reaches each text and never a class.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from ..display import AttrText, Key, Text, ToolText

# -- the partials' innermost loops ------------------------------------------------------
# A rich block holds hundreds of spans, lines or cells; Django's template loop costs
# ~10 µs an iteration, which made a page of 80 rich entries 400 ms of CPU
# (docs/PERFORMANCE.md#p9). So the lines of each block are written here, once per view
# (`cached_property`: a view is memoised with its entry, chatui.read.presenters), every
# text through `conditional_escape` (the admin's transform returns its markers as safe
# HTML; anything else is escaped). The partials keep the block, its hooks and attributes.


def _spans(spans: Iterable[Span]) -> str:
    parts = []
    for span in spans:
        text = conditional_escape(span.text)
        if span.classes:
            parts.append(f'<span class="{conditional_escape(span.classes)}">{text}</span>')
        else:
            parts.append(text)
    return "".join(parts)


def _number(value: int | None) -> str:
    return "" if value is None else str(value)


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

    @cached_property
    def lines_html(self) -> SafeString:
        """Each line a `.term-line` span (`[data-terminal-error]` on a failed command's)."""
        return mark_safe(
            "".join(
                (
                    '<span class="term-line term-error" data-terminal-error>'
                    if line.is_error
                    else '<span class="term-line">'
                )
                + _spans(line.spans)
                + "</span>\n"
                for line in self.lines
            )
        )


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

    @cached_property
    def lines_html(self) -> SafeString:
        """Each line a span with `data-diff-line` = its kind and its numbers (drawn by CSS).
        The line feed is inside the (block) span: outside, it would draw an empty line."""
        return mark_safe(
            "".join(
                f'<span class="diff-line diff-line--{line.kind}" data-diff-line="{line.kind}"'
                f' data-old="{_number(line.old)}" data-new="{_number(line.new)}">'
                f"{conditional_escape(line.sign)}{conditional_escape(line.text)}\n</span>"
                for line in self.lines
            )
        )


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

    @cached_property
    def lines_html(self) -> SafeString:
        """Each line a `.code-line` span (its number is a CSS counter)."""
        return mark_safe(
            "".join(f'<span class="code-line">{_spans(line.spans)}\n</span>' for line in self.lines)
        )


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

    @cached_property
    def rows_html(self) -> SafeString:
        """The table's body rows; numbers right-aligned (`.num`)."""
        return mark_safe(
            "".join(
                "<tr>"
                + "".join(
                    f'<td class="num">{conditional_escape(cell.text)}</td>'
                    if cell.numeric
                    else f"<td>{conditional_escape(cell.text)}</td>"
                    for cell in row.cells
                )
                + "</tr>"
                for row in self.rows
            )
        )


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


@dataclass(frozen=True)
class McpPart(_View):
    """G21: one `content` part of an MCP result, as the page shows it. `kind`:
    `text` (its `text`, or its `view` when G17–G20 read it), `resource` (an embedded text
    resource: `label` its URI, `view` its code when G19 knows the language, else `text`),
    `image` / `audio` (an attachment shown in `<img>` / `<audio>` from `url`), `download`
    (an attachment served only as a download: SVG, or bytes of no type shown inline),
    `link` (a resource link: `url` set only for http(s) URIs), `omitted` (bytes over the
    size limit, not stored) or `malformed` (`note` says what is wrong)."""

    kind: Key
    text: ToolText = ""
    view: TerminalView | DiffView | CodeView | RecordsView | KeyValueView | None = None
    url: Key = ""
    label: ToolText = ""
    note: Text = ""  # "PNG image · 1.2 KB · declared image/svg+xml"
    alt: AttrText = ""  # an image's alt text, an audio player's label: an attribute value
    #: An image's size in pixels as its header says (chatui.ingest.attachments.image_size):
    #: the page holds its place before it loads. None for rows stored before.
    pixels: tuple[int, int] | None = None

    @cached_property
    def html(self) -> SafeString | None:
        """The part written once (a template's branches cost ~10 µs each, as the lines of
        the other views, docs/PERFORMANCE.md#p9); None for a part shown by a nested view
        (`rich-view` draws it). Attachments load only from `url`, the conversation's own
        address, never a data: URI; only `image` is an <img>, only `audio` an <audio>."""
        if self.view is not None:
            return None
        esc = conditional_escape
        note = f'<span class="mcp-note">{esc(self.note)}</span>' if self.note else ""
        kind = self.kind
        if kind == "image":
            size = f' width="{self.pixels[0]}" height="{self.pixels[1]}"' if self.pixels else ""
            html = (
                f'<figure class="mcp-figure"><img class="mcp-image" src="{esc(self.url)}"'
                f' alt="{esc(self.alt)}"{size} loading="lazy" decoding="async" data-attachment>'
                f"<figcaption>{note}</figcaption></figure>"
            )
        elif kind == "audio":
            html = (
                f'<audio class="mcp-audio" controls preload="none" src="{esc(self.url)}"'
                f' aria-label="{esc(self.alt)}" data-attachment></audio> {note}'
            )
        elif kind == "download":
            html = (
                f'<a class="mcp-download" href="{esc(self.url)}" download data-attachment>'
                f"{esc(self.label)}</a> {note}"
            )
        elif kind == "link":
            label = esc(self.label)
            link = (
                f'<a class="mcp-link" href="{esc(self.url)}" rel="noopener noreferrer nofollow"'
                f' target="_blank" data-mcp-link>{label}</a>'
                if self.url
                else f'<span class="mcp-link" data-mcp-link>{label}</span>'
            )
            html = f"{link} {note}" if note else link
        elif kind in ("text", "resource"):
            head = f'<div class="mcp-label">{esc(self.label)}</div>' if kind == "resource" else ""
            html = f'{head}<pre class="mcp-text">{esc(self.text)}</pre>'
        else:  # omitted, malformed
            label = f"{esc(self.label)}: " if self.label else ""
            html = (
                '<span class="mcp-note mcp-malformed" data-mcp-malformed>'
                f"{label}{esc(self.note)}</span>"
            )
        return mark_safe(html)


@dataclass(frozen=True)
class McpView(_View):
    """G21: an MCP `CallToolResult`: its parts in order, then `structuredContent` (G20:
    a table or key/value list, else its pretty JSON as text); `is_error` its `isError`."""

    kind: ClassVar[str] = "mcp"
    parts: tuple[McpPart, ...]
    structured: RecordsView | KeyValueView | None
    structured_text: ToolText | None
    is_error: bool
    source: ToolText  # what Copy output copies: the text parts, joined
    chars: int


RichView = TerminalView | DiffView | CodeView | RecordsView | KeyValueView | McpView
