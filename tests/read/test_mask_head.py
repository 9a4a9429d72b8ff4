"""T3 masking of a long text's head (chatui.secrets.mask_head, issue 28 finding 4).

A page shows 8 lines of a 900 KB tool result; masking the whole result to show them cost
most of the page's first load. `mask_head(text, n)` masks only up to a safe cut after the
first `n` characters and must be exact: equal to `mask_text(text)[:n]` for every text and
every `n`, whatever secret runs across the cut, including the one rule that may span
lines (`token:` and a quoted value on the next line). Given only the start of a text
(`complete=False`, a prefix read from the database), it is that for every text starting
so, or None (it cannot tell from what was read).
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from chatui import secrets

FRAGMENTS = [
    "token",
    "Token",
    "api_key",
    "PASSWORD",
    "passwd",
    "Authorization",
    "secret",
    "AUTHORİZATİON",
    "ſecret",
    "Bearer ",
    "bearer ",
    "basic ",
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
    "= ",
    '"',
    "'",
    "\\",
    " ",
    "\t",
    "\n",
    "\n",
    "\r\n",
    "\u2028",
    "\x1c",
    "\x85",
    "    ",
    "                 ",  # 17 spaces: one more than a key's value may wait
    ",",
    "(",
    ")",
    "null",
    "hunter2secretvalue",
    "Q1W2E3R4",
    "••••",
    "ab",
    "ΑΣ",  # a final sigma lowercases by what follows it
    "é",
    "x",
    "[3] log line",
]

texts = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)


@settings(max_examples=600, deadline=None)
@given(texts, st.integers(min_value=0, max_value=200))
def test_t3_mask_head_is_the_head_of_the_whole_text_masked(text, chars):
    assert secrets.mask_head(text, chars) == secrets.mask_text(text)[:chars]


@settings(max_examples=600, deadline=None)
@given(texts, st.integers(min_value=0, max_value=200), st.integers(min_value=0, max_value=400))
def test_t3_mask_head_of_a_text_read_in_part_is_exact_or_says_it_cannot_tell(text, chars, read):
    head = secrets.mask_head(text[:read], chars, complete=read >= len(text))
    assert head is None or head == secrets.mask_text(text)[:chars]


@settings(max_examples=300, deadline=None)
@given(texts, texts, st.integers(min_value=0, max_value=120))
def test_t3_mask_head_holds_for_any_continuation_of_what_was_read(read, rest, chars):
    """What `complete=False` promises: the answer fits every text that starts so."""
    head = secrets.mask_head(read, chars, complete=False)
    assert head is None or head == secrets.mask_text(read + rest)[:chars]


SECRET = "P4ssw0rdSECRETvalue"


def log(lines: int, tag: str = "[1] ok") -> str:
    return "\n".join(f"{tag} line {n}" for n in range(lines))


def assert_exact(text: str, chars: int) -> None:
    whole = secrets.mask_text(text)
    assert secrets.mask_head(text, chars) == whole[:chars]
    for read in range(chars, min(len(text), chars + 300) + 1, 7):
        head = secrets.mask_head(text[:read], chars, complete=False)
        assert head is None or head == whole[:chars], read


def test_t3_mask_head_a_key_and_its_quoted_value_across_the_cut():
    """`password:` ends the line and its value opens the next: masked as one."""
    for gap in ("\n", "\n ", " \n\t", "\n" + " " * 15, " " * 15 + "\n"):
        text = log(3) + "\npassword:" + gap + f'"{SECRET}"\n' + log(50)
        cut = text.index("password:") + 5
        for chars in range(cut - 3, cut + 40):
            assert_exact(text, chars)
        assert SECRET not in secrets.mask_head(text, len(text))


def test_t3_mask_head_seventeen_spaces_end_a_key_s_reach():
    text = "token=" + "\n" + " " * 15 + f"'{SECRET}'\n" + log(10)
    assert SECRET not in secrets.mask_text(text)  # 16 whitespace characters: masked
    for chars in range(0, 40):
        assert_exact(text, chars)
    text = "token=" + "\n" + " " * 16 + f"'{SECRET}'\n" + log(10)
    assert SECRET in secrets.mask_text(text)  # 17: not the key's value
    for chars in range(0, 40):
        assert_exact(text, chars)


def test_t3_mask_head_a_secret_running_past_the_cut():
    """A key, a URL's password and an sk- key longer than the head asked for."""
    long_key = "sk-" + "a" * 5000 + "TAIL"
    for secret_line in (
        f"Authorization: Bearer {'b' * 3000}END",
        f"db=postgres://bob:{'p' * 200}x@db.example.org/x",
        f"key {long_key}",
        f"api_key={'k' * 4000}ZZZZ",
        f'{{"token": "{"t" * 4000}QQQQ"}}',
    ):
        text = log(5) + "\n" + secret_line + "\n" + log(200)
        start = text.index(secret_line)
        for chars in (start - 1, start, start + 1, start + 10, start + 600):
            assert_exact(text, chars)
        shown = secrets.mask_head(text, start + 600)
        assert "••••" in shown and shown == secrets.mask_text(text)[: start + 600]


def test_t3_mask_head_secrets_that_shrink_need_a_later_cut():
    """Masks are shorter than their secrets: the head asked for lies further on."""
    text = "\n".join(f"password={'x' * 500}{n:04d}" for n in range(40))
    for chars in (10, 100, 1000, 5000):
        assert_exact(text, chars)


def test_t3_mask_head_without_a_line_break_masks_the_whole_text():
    text = "x" * 10_000 + f" token={SECRET} " + "y" * 10_000
    assert secrets.mask_head(text, 500) == secrets.mask_text(text)[:500]
    assert secrets.mask_head(text[:12_000], 500, complete=False) is None


def test_t3_mask_head_reads_little_of_a_long_log():
    """The point of it: a 900 KB log's 500 characters come from its first lines."""
    text = log(40_000, tag="[7] GET /api token=" + SECRET)
    cut = secrets._cut_after(text, 502, complete=True)
    assert cut is not None and cut < 700
    assert secrets.mask_head(text, 502) == secrets.mask_text(text)[:502]


def test_t3_only_a_key_s_whitespace_before_its_quoted_value_may_span_lines():
    """`mask_head` rests on this: no rule's value holds a line break, and only a key's
    `\\s{0,16}`, between its `:` or `=` and its value's opening quote, reads one (every
    other class excludes it, `.` is not DOTALL, the lookahead after a bare value reads
    one character). A rule that reads one elsewhere breaks `mask_head`'s proof."""
    span = "\\s{0,16}"
    a_class = re.compile(r"\[(?:\\.|[^\]\\])*\]")
    one_ahead = re.compile(r"\(\?=\[(?:\\.|[^\]\\])*\]\|\$\)")
    for rule in secrets._RULES:
        assert not rule.pattern.flags & re.DOTALL
        pattern = one_ahead.sub("", rule.pattern.pattern)
        for each in a_class.findall(pattern):
            assert not re.fullmatch(each, "\n"), each
        pattern = a_class.sub("", pattern).replace(span + '\\"', "").replace(span + "'", "")
        assert "\\s" not in pattern and "\\n" not in pattern, pattern
    assert secrets._KEY_IN_TEXT.pattern.count(span) == 2
