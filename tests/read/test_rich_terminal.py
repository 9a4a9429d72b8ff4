"""G17 terminal output (docs/rendering.md#g17): ANSI SGR → classed spans, every other escape
removed, "\\r" overwriting its line, a failed command's colours kept with only its error line
red; presented without HTML, then the partial shows it escaped."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from chatui.models import Message, Role
from chatui.read import presenters
from chatui.read.rich import ansi, present_rich
from chatui.read.rich.views import TerminalView
from tests.support.rich import SCRIPT, TERMINAL, call

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def texts(lines) -> list[str]:
    return ["".join(span.text for span in line) for line in lines]


def test_g17_ansi_colours_become_classed_spans():
    (line,) = ansi.parse("ok \x1b[32mPASSED\x1b[0m \x1b[1;4;31mbad\x1b[22;24m still red\x1b[39m")
    assert [(s.text, s.classes) for s in line] == [
        ("ok ", ""),
        ("PASSED", "ansi-fg-2"),
        (" ", ""),
        ("bad", "ansi-fg-1 ansi-b ansi-u"),
        (" still red", "ansi-fg-1"),
    ]


def test_g17_dim_italic_bright_and_background_colours():
    (line,) = ansi.parse("\x1b[2;3;94;41mx\x1b[0m")
    assert line[0].classes == "ansi-fg-12 ansi-bg-1 ansi-d ansi-i"


def test_g17_256_and_24bit_colours_map_to_the_nearest_palette_colour():
    (line,) = ansi.parse("\x1b[38;2;250;10;10ma\x1b[38;5;46mb\x1b[48;2;0;0;0mc\x1b[38:2::0:0:230md")
    assert [s.classes for s in line] == [
        "ansi-fg-9",  # near (255, 0, 0)
        "ansi-fg-10",  # cube green → bright green
        "ansi-fg-10 ansi-bg-0",
        "ansi-fg-4 ansi-bg-0",  # the ITU colon form
    ]


def test_g17_other_escapes_are_removed_never_shown():
    lines = ansi.parse(
        "\x1b]0;title\x07\x1b[2J\x1b[10;4H\x1b[?25lhi\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\x1b(B!"
    )
    assert texts(lines) == ["hilink!"]


def test_g17_carriage_return_overwrites_its_line():
    lines = ansi.parse("10%\r55%\r100% done\nabc\rX\nkeep\r\n")
    assert texts(lines) == ["100% done", "Xbc", "keep"]


def test_g17_backspace_moves_back_one():
    assert texts(ansi.parse("ab\x08c")) == ["ac"]


def test_g17_hostile_html_in_ansi_text_stays_text():
    view = present_rich("run", {}, f"\x1b[31m{SCRIPT}\x1b[0m").view
    assert isinstance(view, TerminalView)
    assert view.lines[0].spans[0].text == SCRIPT.replace("@", "@\u200b")
    assert view.lines[0].spans[0].classes == "ansi-fg-1"


def test_g17_secret_right_after_an_escape_is_masked():
    view = present_rich("run", {}, "key: \x1b[31msk-live-abcdefghijklmnop9876\x1b[0m").view
    shown = "".join(span.text for span in view.lines[0].spans)
    assert "abcdefghijklmnop" not in shown and "••••9876" in shown
    revealed = present_rich("run", {}, "\x1b[31msk-live-abcdefghijklmnop9876", mask_secrets=False)
    assert "abcdefghijklmnop" in revealed.view.lines[0].spans[0].text


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("\x1b[]();:?0123456789mHJKab \r\n\x07\x08\x9b\\\x00\x7f"))
    )
)
def test_g17_fuzz_any_text_gives_lines_without_escape_characters(text):
    lines = ansi.parse(text)
    for line in lines:
        for span in line:
            assert not CONTROL.search(span.text)
            assert re.fullmatch(r"(ansi-[a-z0-9-]+( |$))*", span.classes)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.one_of(st.characters(exclude_categories=("Cc",)), st.just("\n"))))
def test_g17_fuzz_text_without_escapes_is_shown_as_it_is(text):
    expected = text.replace("@", "@\u200b").split("\n")
    while expected and not expected[-1].strip():
        expected.pop()
    assert texts(ansi.parse(text)) == expected


def test_g17_hostile_escapes_cost_one_pass():
    hostile = ("\x1b[" + "1;" * 5000 + "\x1b]" + "x" * 5000 + "\r" * 100) * 20
    ansi.parse(hostile)  # finishes (linear patterns); no timing asserted


def _entry(conversation, call_id: str) -> presenters.ToolEntryView:
    message = Message.objects.get(conversation=conversation, role=Role.TOOL, tool_call_id=call_id)
    return presenters.present_tool_entry(message)


def test_g17_terminal_result_is_an_entry_view_and_not_inline(conversation, feed):
    feed(*call("t", "run_tests", {}, result="\x1b[32mPASSED\x1b[0m"))
    entry = _entry(conversation, "t")
    assert isinstance(entry.rich, TerminalView)
    assert entry.inline_result is None  # a short coloured line is not shown raw after the call


def test_g17_failed_command_keeps_colours_only_the_error_line_red(conversation, feed):
    feed(
        *call(
            "f",
            "run_cmd",
            {"command": "make"},
            result="\x1b[32mcompiled\x1b[0m a.o\nlinking",
            error="make: *** [all] Error 2",
            details={"kind": "command", "exit_code": 2},
        )
    )
    entry = _entry(conversation, "f")
    assert entry.is_error and isinstance(entry.rich, TerminalView)
    red = [line for line in entry.rich.lines if line.is_error]
    assert texts([line.spans for line in red]) == ["make: *** [all] Error 2"]
    assert entry.rich.lines[0].spans[0].classes == "ansi-fg-2"


def test_g17_failed_command_without_separate_error_reds_its_last_line(conversation, feed):
    feed(*call("f", "sh", {}, error="step one\nstep two\nfatal: no such file"))
    feed(*call("g", "sh", {}, result="a\nb", details={"kind": "command", "exit_code": 1}))
    entry = _entry(conversation, "g")  # G15: a failure by its exit code
    assert entry.is_error
    assert [line.is_error for line in entry.rich.lines] == [False, True]


def test_g17_partial_shows_spans_escaped_and_no_escape_character(client, user, conversation, feed):
    feed(*call("t", "run_tests", {}, result=TERMINAL))
    client.force_login(user)
    html = client.get(f"/c/{conversation.pk}/").content.decode()
    block = re.search(r"<pre class=\"rich-terminal\".*?</pre>", html, re.DOTALL).group(0)
    assert "data-terminal" in block and "\x1b" not in block and "window title" not in block
    assert '<span class="ansi-fg-2">PASSED</span>' in block
    assert "<script>" not in block and "&lt;script&gt;" in block
    assert "100% done" in block and "55%" not in block
    assert "style=" not in block


def test_g17_live_output_tail_shows_no_escape_and_the_bar_as_it_stands(conversation, feed):
    feed(
        {"type": "agent.tool.started", "tool_call_id": "l", "tool_name": "sh", "args": {}},
        {
            "type": "agent.tool.progress",
            "tool_call_id": "l",
            "output": "\x1b[32mok\x1b[0m @bob\n10%\r90%",
        },
    )
    entry = _entry(conversation, "l")
    assert entry.output_tail == "ok @\u200bbob\n90%"


def test_g17_output_too_long_for_a_terminal_view_still_shows_no_escape(conversation, feed):
    long = "\n".join(f"\x1b[31mline {n}\x1b[0m" for n in range(3000))  # over RICH_LINES
    feed(*call("x", "sh", {}, result=long))
    entry = _entry(conversation, "x")
    assert entry.rich is None and entry.result is not None
    assert "\x1b" not in entry.result.text and entry.result.text.startswith("line 0\nline 1")
