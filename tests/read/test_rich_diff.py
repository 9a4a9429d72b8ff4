"""G18 diffs (docs/rendering.md#g18): unified diffs in results, `details.kind` `diff` and
`edit`, and apply_patch arguments, as numbered lines by kind with "+N −M" in the header;
a patch argument is never flattened into the call line."""

from __future__ import annotations

import re

from chatui.models import Message, Role
from chatui.read import presenters
from chatui.read.rich import diff, present_rich
from chatui.read.rich.views import DiffView
from tests.support.rich import PATCH, SCRIPT, UNIFIED_DIFF, call


def kinds(view: DiffView) -> list[tuple[str, int | None, int | None]]:
    return [(line.kind, line.old, line.new) for f in view.files for line in f.lines]


def test_g18_unified_diff_lines_by_kind_with_numbers():
    view = diff.present_diff(UNIFIED_DIFF)
    assert [f.path for f in view.files] == ["src/app.py"]
    assert kinds(view) == [
        ("hunk", None, None),
        ("ctx", 1, 1),
        ("del", 2, None),
        ("add", None, 2),
        ("add", None, 3),
        ("ctx", 3, 4),
        ("ctx", 4, 5),
    ]
    assert (view.added, view.removed, view.stat) == (2, 1, "+2 −1")


def test_g18_a_removed_line_that_reads_like_a_header_stays_a_line():
    text = "--- a/x\n+++ b/x\n@@ -1,2 +1,1 @@\n--- not a header\n keep\n"
    view = diff.present_diff(text)
    assert kinds(view) == [("hunk", None, None), ("del", 1, None), ("ctx", 2, 1)]
    assert view.files[0].lines[1].text == "-- not a header"


def test_g18_several_files_each_with_its_path():
    text = UNIFIED_DIFF + UNIFIED_DIFF.replace("src/app.py", "README.md")
    assert [f.path for f in diff.present_diff(text).files] == ["src/app.py", "README.md"]


def test_g18_apply_patch_format_without_numbers():
    view = diff.present_diff(PATCH)
    assert [f.path for f in view.files] == ["docs/notes.md"]
    assert [line.kind for line in view.files[0].lines] == ["hunk", "del", "add", "add", "ctx"]
    assert view.stat == "+2 −1"


def test_g18_edit_kind_is_diffed_by_chatui():
    details = {"kind": "edit", "path": "a.txt", "old": "one\ntwo\n", "new": "one\n2\n"}
    view = present_rich("edit_file", {"details": details}, "edited").view
    assert isinstance(view, DiffView) and view.stat == "+1 −1"
    assert view.files[0].path == "a.txt"


def test_g18_diff_kind_reads_details_diff():
    details = {"kind": "diff", "diff": UNIFIED_DIFF}
    assert isinstance(present_rich("x", {"details": details}, "3 files changed").view, DiffView)


def test_g18_prose_is_not_a_diff():
    assert present_rich("x", {}, "we should --- maybe\n+++ not\n@@ this").view is None


def test_g18_hostile_diff_lines_stay_text():
    view = diff.present_diff(UNIFIED_DIFF)
    added = [line.text for f in view.files for line in f.lines if line.kind == "add"]
    assert added[0] == f"print('{SCRIPT}')".replace("@", "@\u200b")


def _entry(conversation, call_id: str) -> presenters.ToolEntryView:
    message = Message.objects.get(conversation=conversation, role=Role.TOOL, tool_call_id=call_id)
    return presenters.present_tool_entry(message)


def test_g18_patch_argument_is_named_by_its_path_not_flattened(conversation, feed):
    feed(*call("p", "apply_patch", {"input": PATCH}, result="Done"))
    entry = _entry(conversation, "p")
    assert entry.call_line == "apply_patch(path=docs/notes.md)"
    assert isinstance(entry.args_diff, DiffView) and entry.diff_stat == "+2 −1"
    assert entry.inline_result is not None and entry.inline_result.text == "Done"


def test_g18_diff_stat_in_the_header_and_lines_escaped(client, user, conversation, feed):
    feed(*call("d", "git_diff", {}, result=UNIFIED_DIFF))
    feed(*call("p", "apply_patch", {"input": PATCH}, result="Done"))
    client.force_login(user)
    html = client.get(f"/c/{conversation.pk}/").content.decode()
    assert html.count("data-diff-stat>+2 −1</span>") == 2
    assert 'data-diff-line="add"' in html and 'data-diff-line="hunk"' in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    call_line = re.search(r"<code data-tool-call>apply_patch\((.*?)\)</code>", html).group(1)
    assert call_line == "path=docs/notes.md"
