"""T3: secrets in tool text are masked wherever they are shown.

`mask_text` masks what looks like a secret inside free text; `mask_value` walks
decoded JSON and masks whole values under secret-sounding keys, and the text of
every other string. A masked secret is `••••` plus its last 4 characters.

Every pattern is linear: character classes with bounded or possessive-free simple
repetition and no nested quantifiers, so a long hostile string costs one pass
(tests/read/test_secrets_everywhere.py times none, but proves a 1 MB adversarial input finishes).
The event log keeps what was sent; only presentation masks.
"""

from __future__ import annotations

import functools
import re
from typing import Any

MASK = "••••"
KEEP = 4

#: Keys whose values are secrets whatever they look like.
SECRET_KEY = re.compile(
    r"token|secret|passw(?:or)?d|api[_-]?key|access[_-]?key|authorization|private[_-]?key",
    re.IGNORECASE,
)

#: Each pattern's `secret` group is masked; what precedes it in the match is kept.
_PATTERNS = [
    # `Authorization: Bearer abc…` and bare `Bearer abc…`
    re.compile(r"(?i)\bbearer (?P<secret>[A-Za-z0-9\-._~+/]{8,}=*)"),
    # credentials in URLs: scheme://user:pass@host → the password part
    re.compile(r"://[^\s:/@]{1,256}:(?P<secret>[^\s/@]{1,256})@"),
    # well-known key formats
    re.compile(r"\b(?P<secret>sk-[A-Za-z0-9_\-]{16,})"),
    re.compile(r"\b(?P<secret>gh[pousr]_[A-Za-z0-9]{20,})"),
    re.compile(r"\b(?P<secret>xox[abprs]-[A-Za-z0-9\-]{10,})"),
    re.compile(r"\b(?P<secret>AKIA[0-9A-Z]{16})\b"),
    # JWT: three base64url parts, the header starting with {" encoded as eyJ
    re.compile(r"\b(?P<secret>eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,})"),
    # key=value in free text (query strings, env lines), for secret-sounding keys
    re.compile(
        r"(?i)(?:token|secret|password|passwd|api_key|apikey|access_key)=(?P<secret>[^\s&\"',;]{4,})"
    ),
]


def mask_secret(secret: str) -> str:
    """`••••` plus the last 4 characters (all of a short one is hidden)."""
    return MASK + (secret[-KEEP:] if len(secret) > 2 * KEEP else "")


def _masked(found: re.Match[str]) -> str:
    start, end = found.span("secret")
    whole = found.group()
    offset = found.start()
    return whole[: start - offset] + mask_secret(found.group("secret")) + whole[end - offset :]


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


def _mask(text: str) -> str:
    for pattern in _PATTERNS:
        text = pattern.sub(_masked, text)
    return text


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
            if isinstance(key, str) and SECRET_KEY.search(key) and item not in (None, "", [], {}):
                masked[key] = mask_secret(item if isinstance(item, str) else str(item))
            else:
                masked[key] = mask_value(item)
        return masked
    return value
