"""G19 code (docs/rendering.md#g19): file contents highlighted by the path's language with
Pygments on the server, as classed spans with line numbers; unknown languages stay plain."""

from __future__ import annotations

import re
from pathlib import Path

from chatui.models import Message, Role
from chatui.read import presenters
from chatui.read.rich import code, present_rich
from chatui.read.rich.views import CodeView
from scripts import code_css
from tests.support.rich import CODE, call


def test_g19_code_highlighted_by_the_paths_language():
    view = code.present_code("src/app.py", "def f(x):\n    return 1\n")
    assert (view.language, view.language_name) == ("python", "Python")
    assert [(s.text, s.classes) for s in view.lines[0].spans][:3] == [
        ("def", "k"),
        (" ", ""),
        ("f", "nf"),
    ]
    assert len(view.lines) == 2


def test_g19_language_by_file_name_too():
    assert code.present_code("Makefile", "all:\n\techo hi\n").language == "make"
    assert code.present_code("deploy/Dockerfile", "FROM python\n").language == "docker"


def test_g19_unknown_language_stays_plain():
    assert code.present_code("notes.unknownext", "text") is None
    assert code.present_code("notes.txt", "text") is None
    assert present_rich("read_file", {"args": {"path": "x.zzz"}}, "a\nb").view is None


def test_g19_file_kind_and_read_tools_with_a_path():
    details = {"kind": "file", "path": "lib/a.rs", "content": "fn main() {}"}
    assert present_rich("anything", {"details": details}, "ok").view.language == "rust"
    assert (
        present_rich("read_file", {"args": {"path": "a.js"}}, "let a = 1\na++").view.language
        == "javascript"
    )
    # a read tool's one-line result is its status, not the file
    assert present_rich("read_file", {"args": {"path": "a.py"}}, "ok: 3 lines read").view is None
    # a tool that does not read a file: its result is not the file
    assert present_rich("write_file", {"args": {"path": "a.js"}}, "wrote 3 lines").view is None


def test_g19_hostile_code_is_text_in_spans():
    view = code.present_code("greet.py", CODE)
    shown = "\n".join("".join(s.text for s in line.spans) for line in view.lines)
    assert shown == CODE.rstrip("\n").replace("@", "@\u200b")


def test_g19_secret_in_a_file_is_masked(conversation, feed):
    feed(
        *call(
            "r",
            "read_file",
            {"path": "settings.py"},
            result='import os\nAPI_KEY = "sk-live-abcdefghijklmnop9876"\n',
        )
    )
    message = Message.objects.get(conversation=conversation, role=Role.TOOL, tool_call_id="r")
    entry = presenters.present_tool_entry(message)
    assert isinstance(entry.rich, CodeView)
    shown = "".join(s.text for line in entry.rich.lines for s in line.spans)
    assert "abcdefghijklmnop" not in shown and "9876" in shown


def test_g19_stylesheet_is_generated_for_light_and_dark():
    written = (Path(code_css.__file__).parent.parent / "chatui/static/chatui/code.css").read_text()
    assert written == code_css.stylesheet()  # run scripts/code_css.py after a Pygments upgrade
    assert "@media (prefers-color-scheme: dark)" in written and ".rich-code .k {" in written


def test_g19_partial_shows_numbered_lines_escaped(client, user, conversation, feed):
    feed(*call("r", "read_file", {"path": "src/greet.py"}, result=CODE))
    client.force_login(user)
    html = client.get(f"/c/{conversation.pk}/").content.decode()
    block = re.search(r"<pre\n  class=\"rich-code highlight\".*?</pre>", html, re.DOTALL).group(0)
    assert 'data-code data-language="python"' in block
    assert block.count('<span class="code-line">') == 3
    assert "<script>" not in block and "&lt;script&gt;" in block and "style=" not in block
    assert "code.css" in html
