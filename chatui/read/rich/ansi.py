"""G17 terminal output: text with ANSI escapes → lines of spans styled from a fixed palette.

Why our own parser: the maintained ones either emit HTML with inline styles (ansi2html;
the CSP has no `unsafe-inline` for styles), emulate a whole screen (pyte: cursor moves,
scrolling; far more than a log needs and costly per character), or come with a large
library (rich's `AnsiDecoder`, which also drops what comes before a `\\r` instead of
overwriting it). What is needed is small: SGR codes to a style, every other escape
removed, `\\r` and backspace moving the cursor on the line. It is fuzzed by Hypothesis
(tests/read/test_rich_terminal.py): any text gives lines with no escape character left.

Every pattern is linear (no nested quantifiers), so hostile output costs one pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from chatui.text import ESCAPE_SEQUENCE, neutralise

from .views import Line, Span, TerminalView

#: Every escape sequence (chatui.text.ESCAPE_SEQUENCE) and C0/C1 control other than tab,
#: newline, carriage return and backspace, which move the cursor.
_TOKEN = re.compile(
    ESCAPE_SEQUENCE + r"|(?P<move>[\r\n\x08])" + r"|[\x00-\x07\x0b\x0c\x0e-\x1f\x7f-\x9f]"
)

#: The 16 colours of the palette (xterm's defaults): 256-colour and 24-bit colours map to
#: the nearest of them, so every colour is one of 32 classes (foreground, background).
PALETTE = (
    (0, 0, 0),
    (205, 0, 0),
    (0, 205, 0),
    (205, 205, 0),
    (0, 0, 238),
    (205, 0, 205),
    (0, 205, 205),
    (229, 229, 229),
    (127, 127, 127),
    (255, 0, 0),
    (0, 255, 0),
    (255, 255, 0),
    (92, 92, 255),
    (255, 0, 255),
    (0, 255, 255),
    (255, 255, 255),
)

# A style: (foreground, background, bold, dim, italic, underline); None: the default colour.
Style = tuple[int | None, int | None, bool, bool, bool, bool]
PLAIN: Style = (None, None, False, False, False, False)


@lru_cache(maxsize=4096)
def nearest(red: int, green: int, blue: int) -> int:
    """The palette colour nearest to an RGB colour (squared distance)."""
    return min(
        range(16),
        key=lambda n: sum(
            (a - b) ** 2 for a, b in zip(PALETTE[n], (red, green, blue), strict=True)
        ),
    )


def _xterm256(n: int) -> int:
    if n < 16:
        return n
    if n < 232:  # the 6×6×6 cube
        n -= 16
        steps = (0, 95, 135, 175, 215, 255)
        return nearest(steps[n // 36], steps[n // 6 % 6], steps[n % 6])
    grey = 8 + (n - 232) * 10
    return nearest(grey, grey, grey)


def _extended(codes: list[int], at: int) -> tuple[int | None, int]:
    """A `38;5;n` / `38;2;r;g;b` colour starting after the 38/48 at `at`: (colour, next)."""
    if at + 1 < len(codes) and codes[at + 1] == 5 and at + 2 < len(codes):
        return _xterm256(min(codes[at + 2], 255)), at + 3
    if at + 1 < len(codes) and codes[at + 1] == 2 and at + 4 < len(codes):
        red, green, blue = (min(value, 255) for value in codes[at + 2 : at + 5])
        return nearest(red, green, blue), at + 5
    return None, len(codes)  # malformed: the rest of the sequence is ignored


def apply_sgr(style: Style, params: str) -> Style:
    """The style after one SGR sequence (`params` as between `ESC[` and `m`)."""
    fg, bg, bold, dim, italic, underline = style
    # `38:2::r:g:b` (ITU form): sub-parameters read like `38;2;r;g;b`, colour space dropped.
    codes = []
    for part in params.split(";"):
        if ":" in part:
            subs = [s for s in part.split(":")]
            if len(subs) == 6 and subs[1] == "2":
                subs = [subs[0], subs[1], *subs[3:]]
            codes.extend(int(s) if s.isdigit() else 0 for s in subs)
        else:
            codes.append(int(part) if part.isdigit() else 0)
    at = 0
    while at < len(codes):
        code = codes[at]
        at += 1
        if code == 0:
            fg, bg, bold, dim, italic, underline = PLAIN
        elif code == 1:
            bold = True
        elif code == 2:
            dim = True
        elif code == 3:
            italic = True
        elif code == 4:
            underline = True
        elif code == 22:
            bold = dim = False
        elif code == 23:
            italic = False
        elif code == 24:
            underline = False
        elif 30 <= code <= 37:
            fg = code - 30
        elif 90 <= code <= 97:
            fg = code - 90 + 8
        elif code == 39:
            fg = None
        elif 40 <= code <= 47:
            bg = code - 40
        elif 100 <= code <= 107:
            bg = code - 100 + 8
        elif code == 49:
            bg = None
        elif code in (38, 48):
            colour, at = _extended(codes, at - 1)
            if colour is not None:
                fg, bg = (colour, bg) if code == 38 else (fg, colour)
    return (fg, bg, bold, dim, italic, underline)


@lru_cache(maxsize=1024)
def classes(style: Style) -> str:
    """The palette's classes of a style (chatui.css: `.ansi-fg-1`, `.ansi-b`, …)."""
    fg, bg, bold, dim, italic, underline = style
    names = []
    if fg is not None:
        names.append(f"ansi-fg-{fg}")
    if bg is not None:
        names.append(f"ansi-bg-{bg}")
    for on, name in ((bold, "ansi-b"), (dim, "ansi-d"), (italic, "ansi-i"), (underline, "ansi-u")):
        if on:
            names.append(name)
    return " ".join(names)


class _Line:
    """One line being written: runs of (text, style) and a cursor. Writing at the end (the
    common case) appends a run; after `\\r` or backspace it overwrites cell by cell."""

    __slots__ = ("cursor", "length", "runs")

    def __init__(self) -> None:
        self.runs: list[tuple[str, Style]] = []
        self.cursor = 0
        self.length = 0

    def write(self, text: str, style: Style) -> None:
        if self.cursor == self.length:
            self.runs.append((text, style))
            self.length += len(text)
            self.cursor = self.length
            return
        cells = [(char, run_style) for run_text, run_style in self.runs for char in run_text]
        for char in text:
            if self.cursor < len(cells):
                cells[self.cursor] = (char, style)
            else:
                cells.append((char, style))
            self.cursor += 1
        self.runs = [(char, cell_style) for char, cell_style in cells]
        self.length = len(cells)

    def spans(self, mask: Callable[[str], str] | None = None) -> tuple[Span, ...]:
        merged: list[list] = []
        for text, style in self.runs:
            if merged and merged[-1][1] == style:
                merged[-1][0] += text
            elif text:
                merged.append([text, style])
        if mask is not None:  # T3 once more: a secret glued to an escape ("\x1b[31msk-…")
            for run in merged:
                run[0] = mask(run[0])
        return tuple(Span(neutralise(text), classes(style)) for text, style in merged)


def _lines(text: str) -> list[_Line]:
    """The lines a terminal would show: runs of text and their styles."""
    lines: list[_Line] = [_Line()]
    style = PLAIN
    at = 0
    for match in _TOKEN.finditer(text):
        if match.start() > at:
            lines[-1].write(text[at : match.start()], style)
        at = match.end()
        move = match.group("move")
        if move == "\n":
            lines.append(_Line())
        elif move == "\r":
            lines[-1].cursor = 0
        elif move == "\x08":
            lines[-1].cursor = max(0, lines[-1].cursor - 1)
        elif match.group("csi") is not None and match.group("final") == "m":
            style = apply_sgr(style, match.group("params"))
        # anything else (cursor moves, titles, links, stray controls) is dropped
    if at < len(text):
        lines[-1].write(text[at:], style)
    return lines


def parse(text: str, mask: Callable[[str], str] | None = None) -> list[tuple[Span, ...]]:
    """Terminal text → its lines, each a tuple of spans; trailing blank lines dropped.
    `mask` (chatui.secrets.mask_text) runs on each span's text: the text was masked before,
    but a secret right after an escape sequence has no word boundary before it there."""
    lines = _lines(text)
    spans = [line.spans(mask) for line in lines]
    while spans and not "".join(span.text for span in spans[-1]).strip():
        spans.pop()
    return spans


def has_escapes(text: str) -> bool:
    """Text a terminal would show differently than a page: escapes or a carriage return
    that is not half of a CRLF (a progress bar)."""
    return "\x1b" in text or "\x9b" in text or "\r" in text.replace("\r\n", "")


def present_terminal(
    text: str, *, error_line: str | None = None, mask: Callable[[str], str] | None = None
) -> TerminalView:
    """G17. `error_line`: a failed command's error, shown red after the output; without one
    (`""`), the output's last non-blank line is the error line (colours kept elsewhere)."""
    lines = [Line(spans) for spans in parse(text, mask)]
    if error_line:
        lines.append(Line((Span(neutralise(error_line)),), is_error=True))
    elif error_line == "" and lines:
        lines[-1] = Line(lines[-1].spans, is_error=True)
    return TerminalView(tuple(lines), chars=len(text))


def plain(text: str) -> str:
    """The text a terminal would show, without styles and as given otherwise (mentions not
    neutralised: the caller shows it as any text), for text shown outside a terminal view:
    a G4 block, a live tail, a Details text block, a diff line."""
    if not has_escapes(text):
        return text
    lines = _lines(text)
    return "\n".join("".join(run for run, _ in line.runs) for line in lines)
