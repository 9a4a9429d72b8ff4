"""T3 masking is cheap (chatui.secrets): the case-insensitive rules read a lowercased
twin of the text with case-sensitive patterns (~20 times cheaper), and a rule runs only
when the words it needs are in the text. Neither may change what is masked: this
compares `mask_text` with the plain way — every rule a case-insensitive `re.sub` over
the text itself — on generated texts, the letters Python matches case-insensitively to
ASCII ones (İ, ı, ſ, the Kelvin sign) included."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from chatui import secrets

FRAGMENTS = [
    "token",
    "TOKEN",
    "ToKeN",
    "api_key",
    "API-KEY",
    "passwd",
    "PASSWORD",
    "Authorization",
    "AUTHORİZATİON",  # capital I with a dot: lowercases to two characters
    "ſecret",  # long s
    "\u212aey",  # Kelvin sign
    "paſſword",
    "tokıen",
    "Bearer ",
    "bearer ",
    "BASIC ",
    "https://bob:",
    "@db.example.org",
    "sk-abcdefghijklmnopqrst",
    "ghp_abcdefghijklmnopqrstuvwxyz",
    "AKIAABCDEFGHIJKLMNOP",
    "eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl",
    "xoxb-0123456789ab",
    ":",
    "=",
    ": ",
    '"',
    "'",
    "\\",
    " ",
    "\n",
    ",",
    "[",
    ")",
    "null",
    "NONE",
    "hunter2secretvalue",
    "Q1W2E3R4",
    "••••",
    "ab",
    "—",
    "é",
]


def reference_mask(text: str) -> str:
    """Every rule as a case-insensitive (or, for key formats, case-sensitive) `re.sub`
    over the text itself, in order, as masking worked before it was made cheap."""
    for rule in secrets._RULES:
        flags = re.IGNORECASE if rule.folded else 0
        pattern = re.compile(rule.pattern.pattern, flags)

        def masked(found: re.Match[str]) -> str:
            values = found.groupdict()
            name = next(g for g in secrets._VALUE_GROUPS if values.get(g) is not None)
            secret = values[name]
            if secrets._ALREADY_MASKED.fullmatch(secret):
                return found.group()
            start, end = found.span(name)
            offset = found.start()
            whole = found.group()
            return whole[: start - offset] + secrets.mask_secret(secret) + whole[end - offset :]

        text = pattern.sub(masked, text)
    return text


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=24).map("".join))
def test_t3_cheap_masking_masks_exactly_what_case_insensitive_rules_mask(text):
    assert secrets._mask(text) == reference_mask(text)


def test_t3_folded_text_keeps_every_position():
    text = "AUTHORİZATİON: Bearer ſecret \u212a é — ••••"
    assert len(secrets._folded(text)) == len(text)
    assert secrets._mask(text) == reference_mask(text)
