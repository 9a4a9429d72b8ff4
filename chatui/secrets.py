"""T3: secrets in tool text are masked wherever they are shown.

This module alone decides what is a secret, and every surface asks it: the page and
the live frames (chatui.read.display), replay and `?at=`, search's index and snippets, the
conversation list, the admin and the exports. `masked_fields` says which text of a
message is masked (a tool's args, result, error and details; a status line, such as a
failed run's `error_message`); `mask_text` masks what looks like a secret inside free
text, including values under secret-sounding keys written out as text (JSON, a Python
repr, `key: value` or `key=value` lines); `mask_value` walks decoded JSON and masks
whole values under the same keys (SECRET_KEY), and the text of every other string. A
masked secret is `••••` plus its last 4 characters, and masking it again changes
nothing.

Every pattern is linear: character classes with bounded or possessive-free simple
repetition and no nested quantifiers, so a long hostile string costs one pass
(tests/read/test_secrets_everywhere.py times none, but proves a 1 MB adversarial input finishes).
The event log keeps what was sent; only presentation masks.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

MASK = "••••"
KEEP = 4

#: Keys whose values are secrets whatever they look like.
SECRET_KEY = re.compile(
    r"token|secret|passw(?:or)?d|api[_-]?key|access[_-]?key|authorization|private[_-]?key",
    re.IGNORECASE,
)

#: Keys that count a model's tokens (`max_tokens`, `input_tokens`, `total_tokens`): "token"
#: makes them sound secret, but a whole number under them is a count, shown as it is. A
#: string under them, and a number under a singular `token`, are still secrets.
_TOKEN_COUNT_KEY = re.compile(r"tokens(?![a-z])", re.IGNORECASE)


def _is_token_count(key: str, value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return _TOKEN_COUNT_KEY.search(key) is not None


#: A value in text under a secret-sounding key, by the same key rule as `mask_value`:
#: the key (SECRET_KEY's word and the rest of its name, closed by a quote in JSON or a
#: Python repr), then `:` or `=`, then the value — a quoted string whole (JSON's `\"`
#: escapes included), or a bare word (a "Bearer"-like scheme before it is kept). After
#: `:` a bare value must end where values end, so code such as `token: str)` or
#: `api_key: Optional[str]` is left alone; JSON's null/true/false are no secrets. A bare
#: value after `:` holds no `:` or `=`, so no failed try scans past the next key: linear.
#: Lowercase: it reads the text as `_folded` spells it (see `_Rule`).
_KEY_IN_TEXT = re.compile(
    rf"(?:{SECRET_KEY.pattern})[\w.\-]{{0,32}}[\"']?[ \t]*(?:(?P<equals>=)|:)"
    r"(?:\s{0,16}\"(?P<double>(?:[^\"\\\n]|\\.){1,4096})\""
    r"|\s{0,16}'(?P<single>(?:[^'\\\n]|\\.){1,4096})'"
    r"|[ \t]*(?:(?:bearer|basic|token|digest)[ \t]+)?(?!(?:null|true|false|none)\b)"
    r"(?(equals)(?P<assigned>[^\s&\"',;]{4,})"
    r"|(?P<bare>[^\s&\"',;:=(){}\[\]<>]{4,})(?=[\s&\"',;:=)}\]]|$)))"
)


@dataclass(frozen=True)
class _Rule:
    """A pattern whose value group (`secret`, or the one of `_KEY_IN_TEXT` that matched)
    is masked, and the words it cannot match without. A `folded` rule is lowercase and
    reads the text as `_folded` spells it: a case-insensitive regex costs ~20 times a
    case-sensitive one. Most texts hold none of a rule's words, and looking for a word
    costs a fraction of a regex's scan."""

    needs: tuple[str, ...]  # as `_folded` spells them
    pattern: re.Pattern[str]
    folded: bool = False


#: Keys come first: a value they mask is then not taken apart again by the formats
#: below. A mask adds no word a rule needs (its `••••` breaks any it touches), so the
#: words of the text as given decide which rules run.
_RULES = (
    _Rule(("token", "secret", "passw", "key", "authorization"), _KEY_IN_TEXT, folded=True),
    # `Authorization: Bearer abc…` and bare `Bearer abc…`
    _Rule(("bearer",), re.compile(r"\bbearer (?P<secret>[a-z0-9\-._~+/]{8,}=*)"), folded=True),
    # credentials in URLs: scheme://user:pass@host → the password part
    _Rule(("://",), re.compile(r"://[^\s:/@]{1,256}:(?P<secret>[^\s/@]{1,256})@")),
    # well-known key formats
    _Rule(("sk-",), re.compile(r"\b(?P<secret>sk-[A-Za-z0-9_\-]{16,})")),
    _Rule(
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        re.compile(r"\b(?P<secret>gh[pousr]_[A-Za-z0-9]{20,})"),
    ),
    _Rule(("xox",), re.compile(r"\b(?P<secret>xox[abprs]-[A-Za-z0-9\-]{10,})")),
    _Rule(("akia",), re.compile(r"\b(?P<secret>AKIA[0-9A-Z]{16})\b")),
    # JWT: three base64url parts, the header starting with {" encoded as eyJ
    _Rule(
        ("eyj",),
        re.compile(r"\b(?P<secret>eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,})"),
    ),
)
#: The only letters outside ASCII that Python's case-insensitive matching takes for
#: ASCII ones and `str.lower` does not turn into them (İ, ı: i; ſ: s; the Kelvin sign
#: lowers to k by itself). İ is also the only letter whose lowercase is two characters:
#: once it is gone, a folded text has its original's length, character for character.
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})
_FOLD_CHARS = ("\u0130", "\u0131", "\u017f")
_VALUE_GROUPS = ("secret", "double", "single", "assigned", "bare")
#: What a masked secret looks like: masking it again changes nothing.
_ALREADY_MASKED = re.compile(MASK + r"\S{0,4}")


def mask_secret(secret: str) -> str:
    """`••••` plus the last 4 characters (all of a short one is hidden)."""
    return MASK + (secret[-KEEP:] if len(secret) > 2 * KEEP else "")


#: Texts up to this long are masked once and remembered (`_mask_short`): a live frame
#: presents a tool batch's every entry again to send one, so the same args and titles
#: come back at every event (py-spy over bench/p2: masking was 6 % of the writer).
#: The bound keeps the cache under 2,048 × 8 KiB; longer texts are masked every time.
CACHED_MASK_CHARS = 8192


def mask_text(text: str) -> str:
    if not isinstance(text, str) or not text:
        return text
    if len(text) <= CACHED_MASK_CHARS:
        return _mask_short(text)
    return _mask(text)


@functools.lru_cache(maxsize=2048)
def _mask_short(text: str) -> str:
    return _mask(text)


def _folded(text: str) -> str:
    """`text` lowercased as case-insensitive matching sees it, of the same length."""
    if not text.isascii() and any(char in text for char in _FOLD_CHARS):
        text = text.translate(_FOLD)  # rare, and slow: a dict lookup per character
    return text.lower()


def _mask(text: str) -> str:
    folded = _folded(text)
    for rule in _RULES:
        if not any(word in folded for word in rule.needs):
            continue
        masked = _substitute(rule.pattern, text, folded if rule.folded else text)
        if masked is not text:
            text, folded = masked, _folded(masked)
    return text


def _substitute(pattern: re.Pattern[str], text: str, scanned: str) -> str:
    """`text` with the value group of each match of `pattern` in `scanned` (`text`, or
    its folded twin: the same positions) masked; `text` itself when nothing changed."""
    parts: list[str] = []
    done = 0
    for found in pattern.finditer(scanned):
        values = found.groupdict()
        name = next(group for group in _VALUE_GROUPS if values.get(group) is not None)
        start, end = found.span(name)
        secret = text[start:end]
        if _ALREADY_MASKED.fullmatch(secret):
            continue
        counted = name in ("assigned", "bare") and secret.isascii() and secret.isdigit()
        if counted and _is_token_count(scanned[found.start() : start], int(secret)):
            continue
        parts += (text[done:start], mask_secret(secret))
        done = end
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


# -- the head of a long text ------------------------------------------------------------


def mask_head(text: str, chars: int, *, complete: bool = True) -> str | None:
    r"""`mask_text(text)[:chars]` without masking the rest of a long text: exact.

    With `complete=False`, `text` is only the start of a longer text: the answer is
    then `mask_text(whole)[:chars]` for every text `whole` that starts with `text`, or
    None when `text` holds no line break after its first `chars` characters.

    It masks the text up to the first line break after `chars` characters (further on
    when masks, shorter than their secrets, leave fewer than `chars`) and keeps the
    first `chars`. Why that is the start of the whole text masked: no secret (a rule's
    value group) holds a line break, and the only part of any rule that reads across
    one is `_KEY_IN_TEXT`'s `\s{0,16}` between a key's `:` or `=` and the opening
    quote of its value — so a match running across the cut masks nothing before it,
    and leaves no other match there (a key, its `:` and whitespace hold no value).
    Every other match lies on one side, and ``, `$` and the lookaheads see a line
    break as they see the text's end. A mask holds no line break, so this holds from
    rule to rule; a rule skipped for want of its `needs` words has no match before
    the cut either, and lowercasing (the folded twin) looks no further than the next
    line break. tests/read/test_mask_head.py proves it on generated texts and fences
    the patterns' part of it. Without a line break after `chars` (one long line), the
    whole text is masked.
    """
    if chars <= 0:
        return ""
    start = chars
    while True:
        cut = _cut_after(text, start, complete=complete)
        if cut is None:
            return None
        head = mask_text(text[:cut])
        if len(head) >= chars or (complete and cut == len(text)):
            return head[:chars]
        # Masks shorter than their secrets: cut further on, at least twice as far.
        start = cut + max(chars - len(head), cut)


def _cut_after(text: str, start: int, *, complete: bool) -> int | None:
    """Just after the first line break at or after `start - 1`; else the text's end when
    it is complete, or None."""
    newline = text.find("\n", max(start, 1) - 1)
    if newline != -1:
        return newline + 1
    return len(text) if complete else None


def mask_value(value: Any) -> Any:
    """Decoded JSON with secrets masked: by key name, then by the text rules.
    Iterative over containers' children via recursion bounded by ingest's depth limit."""
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, list):
        return [mask_value(item) for item in value]
    if isinstance(value, dict):
        masked = {}
        for key, item in value.items():
            if (
                isinstance(key, str)
                and SECRET_KEY.search(key)
                and item not in (None, "", [], {})
                and not _is_token_count(key, item)
            ):
                secret = item if isinstance(item, str) else str(item)
                masked[key] = secret if _ALREADY_MASKED.fullmatch(secret) else mask_secret(secret)
            else:
                masked[key] = mask_value(item)
        return masked
    return value


#: The messages whose text is masked wherever it is shown: a tool's args, result, error
#: and details, and a status line (a failed run's `error_message` is its red banner).
#: A person's own words and the assistant's answer are shown as written; search and
#: the conversation list mask those too (`mask_text`), as they show them out of place.
MASKED_ROLES = frozenset({"tool", "status"})


def masked_fields(
    role: str, content: str, metadata: dict[str, Any] | None
) -> tuple[str, dict[str, Any]]:
    """A message's content and metadata as every surface shows them: masked for the
    roles of MASKED_ROLES, as stored for the others (the same objects, not copies)."""
    metadata = metadata or {}
    if role not in MASKED_ROLES:
        return content, metadata
    return mask_text(content), mask_value(metadata)
