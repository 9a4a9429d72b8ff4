"""The shared text vocabulary: clipping, neutralising mentions, and how durations,
sizes, token counts and tool names read (docs/rendering.md#g7, #g10, #t1). Presenters, the admin,
the importers and the agents all say these things the same way through this module.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime

ELLIPSIS = "…"
ZWSP = "\u200b"
TOOL_NAME_CHARS = 200  # G10


#: A terminal's escape sequences: CSI (SGR colours among them, and 8-bit CSI), OSC (titles,
#: OSC 8 links) to BEL or ST, DCS/SOS/PM/APC strings, two-character escapes. An
#: unterminated string sequence runs to the end, as a terminal would swallow it.
#: chatui.read.rich.ansi interprets them (docs/rendering.md#g17); the search index reads
#: text without them.
ESCAPE_SEQUENCE = (
    r"(?P<csi>(?:\x1b\[|\x9b)(?P<params>[0-?]*)[ -/]*(?P<final>[@-~])?)"
    r"|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
_ESCAPES = re.compile(ESCAPE_SEQUENCE)


def without_escapes(text: str) -> str:
    """`text` with its terminal escape sequences removed, its words as a terminal shows
    them: `\\x1b[32mPASSED` is the word PASSED, and a secret right after a colour code
    starts a word that masking can see."""
    if "\x1b" not in text and "\x9b" not in text:
        return text
    return _ESCAPES.sub("", text)


def neutralise(text: str) -> str:
    """T1: "@" + U+200B can never trigger a mention wherever the text ends up. Not
    idempotent on purpose: a U+200B the runtime itself put after "@" stays a second
    one, which the admin reveals as an invisible character."""
    return text.replace("@", "@" + ZWSP)


def unneutralise(text: str) -> str:
    """The text `neutralise` was given (its exact inverse: one U+200B after each "@"),
    for a neutralised view's text that is shown again through `neutralise`."""
    return text.replace("@" + ZWSP, "@")


def clip(text: str, limit: int) -> str:
    """Cut to at most `limit` characters, the last one being "…" when cut."""
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def collapse_newlines(text: str) -> str:
    return re.sub(r"[ \t]*[\r\n]+[ \t]*", " ", text)


def humanise_tool_name(name: str) -> str:
    """G10: `image_generation` → "Image Generation", `SearchEntities` → "Search Entities"."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", name)
    words = [word for word in re.split(r"[\s_\-.:/]+", spaced) if word]
    if not words:
        return "Tool"
    return clip(" ".join(word[0].upper() + word[1:] for word in words), TOOL_NAME_CHARS)


def format_duration(ms: float, *, compact: bool = False) -> str:
    """G7: "250 ms", "1.2 s", "12.3 s", then "2 min 5 s" and "1 h 2 min".

    `compact` drops the spaces before units, for S1's "Assistant · 1.2s".
    """
    gap = "" if compact else " "
    if round(ms) < 1000:
        return f"{max(0, round(ms))}{gap}ms"
    seconds = ms / 1000
    if round(seconds, 1) < 60:
        return f"{seconds:.1f}{gap}s"
    whole = round(seconds)
    if whole < 3600:
        minutes, secs = divmod(whole, 60)
        return f"{minutes}{gap}min" + (f" {secs}{gap}s" if secs else "")
    hours, rest = divmod(whole, 3600)
    minutes = rest // 60
    return f"{hours}{gap}h" + (f" {minutes}{gap}min" if minutes else "")


def format_elapsed(seconds: float) -> str:
    """G5: whole seconds for a pending tool ("0 s", "42 s", "1 min 5 s")."""
    whole = max(0, int(seconds))
    return f"{whole} s" if whole < 60 else format_duration(whole * 1000)


def human_size(size: int) -> str:
    """ "512 B", "2.3 KB", "1.4 MB" (1 KB = 1024 bytes)."""
    if size < 1024:
        return f"{size} B"
    for unit in ("KB", "MB", "GB"):
        size /= 1024
        if size < 1024 or unit == "GB":
            break
    return f"{size:.1f} {unit}"


def format_tokens(tokens: int) -> str:
    return f"{tokens:,} token" + ("" if tokens == 1 else "s")


def first_line(text: str, limit: int = 120) -> str:
    """The first line of `text`, clipped to `limit` characters."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return clip(line, limit)


# -- invisible characters (shown as markers to auditors: chatui.read.reveal) ----------

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


def isoformat(moment: datetime) -> str:
    """A time as the API writes it: ISO 8601 in UTC, with `Z`."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
