"""G18 diffs: unified diffs (git's, `diff -u`), `apply_patch` patches and edits → numbered
lines by kind, with the "+N −M" count."""

from __future__ import annotations

import difflib
import re

from chatui.text import clip, neutralise

from .ansi import plain
from .views import DiffFile, DiffLine, DiffView

_HUNK = re.compile(
    r"@@ -(?P<old>\d{1,9})(?:,(?P<old_count>\d{1,9}))?"
    r" \+(?P<new>\d{1,9})(?:,(?P<new_count>\d{1,9}))? @@"
)
#: A unified diff: a hunk header at a line start (the `---`/`+++` pair is optional).
_UNIFIED = re.compile(r"(?:^|\n)@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
#: Codex's `apply_patch` envelope.
_PATCH_START = "*** Begin Patch"
_PATCH_FILE = re.compile(r"\*\*\* (?:Add|Update|Delete) File: (?P<path>.+)")
PATH_CHARS = 300


def is_diff(text: str) -> bool:
    return text.lstrip().startswith(_PATCH_START) or _UNIFIED.search(text) is not None


def _path_of(line: str) -> str:
    """`+++ b/src/app.py\\t(date)` → `src/app.py`."""
    path = line[4:].split("\t", 1)[0].strip()
    return path[2:] if path[:2] in ("a/", "b/") else path


class _Builder:
    def __init__(self) -> None:
        self.files: list[DiffFile] = []
        self.path = ""
        self.lines: list[DiffLine] = []
        self.added = self.removed = 0

    def file(self, path: str) -> None:
        self.flush()
        self.path = path

    def flush(self) -> None:
        if self.lines:
            self.files.append(DiffFile(neutralise(clip(self.path, PATH_CHARS)), tuple(self.lines)))
        self.lines = []

    def line(self, kind: str, sign: str, text: str, old: int | None, new: int | None) -> None:
        self.added += kind == "add"
        self.removed += kind == "del"
        text = plain(text) if "\x1b" in text or "\x9b" in text else text
        self.lines.append(DiffLine(kind, sign, neutralise(text), old, new))

    def view(self, source: str) -> DiffView | None:
        self.flush()
        if not self.files:
            return None
        shown = neutralise(plain(source))  # G17: no escape shown, not even in Copy's text
        return DiffView(tuple(self.files), self.added, self.removed, shown, len(source))


def parse_unified(text: str, path: str = "") -> DiffView | None:
    """A unified diff (several files' `diff --git` / `---` / `+++` headers, or bare hunks).
    A hunk's counts say where it ends, so a removed line that reads "--- x" is a line."""
    built = _Builder()
    built.path = path
    old = new = left_old = left_new = 0
    for raw in text.replace("\r\n", "\n").split("\n"):
        if left_old > 0 or left_new > 0:
            if raw.startswith("+"):
                built.line("add", "+", raw[1:], None, new)
                new, left_new = new + 1, left_new - 1
                continue
            if raw.startswith("-"):
                built.line("del", "-", raw[1:], old, None)
                old, left_old = old + 1, left_old - 1
                continue
            if raw.startswith(" ") or raw == "":
                built.line("ctx", " ", raw[1:], old, new)
                old, new, left_old, left_new = old + 1, new + 1, left_old - 1, left_new - 1
                continue
            if raw.startswith("\\"):
                built.line("ctx", "", raw, None, None)  # "\ No newline at end of file"
                continue
            left_old = left_new = 0  # a hunk shorter than it said: read on as headers
        if raw.startswith("\\") and built.lines:
            built.line("ctx", "", raw, None, None)
        elif raw.startswith("+++ "):
            built.file(_path_of(raw))
        elif hunk := _HUNK.match(raw):
            old, new = int(hunk["old"]), int(hunk["new"])
            left_old = int(hunk["old_count"]) if hunk["old_count"] is not None else 1
            left_new = int(hunk["new_count"]) if hunk["new_count"] is not None else 1
            built.line("hunk", "", raw, None, None)
        # else: a header ("diff --git", "---", "index"), a commit message: not shown
    return built.view(text)


def parse_patch(text: str) -> DiffView | None:
    """Codex's `apply_patch` format: `*** Update File: path`, `@@` context lines, then
    `+`/`-`/` ` lines, without line numbers (the patch has none)."""
    built = _Builder()
    in_file = False
    for raw in text.replace("\r\n", "\n").split("\n"):
        header = _PATCH_FILE.fullmatch(raw)
        if header:
            built.file(header["path"].strip())
            in_file = True
        elif raw.startswith("*** ") or not in_file:  # Begin/End Patch, Move to, End of File
            continue
        elif raw.startswith("@@"):
            built.line("hunk", "", raw, None, None)
        elif raw.startswith("+"):
            built.line("add", "+", raw[1:], None, None)
        elif raw.startswith("-"):
            built.line("del", "-", raw[1:], None, None)
        elif raw.startswith(" "):
            built.line("ctx", " ", raw[1:], None, None)
    return built.view(text)


def present_diff(text: str, path: str = "") -> DiffView | None:
    if text.lstrip().startswith(_PATCH_START):
        return parse_patch(text)
    return parse_unified(text, path)


def present_edit(path: str, old: str, new: str) -> DiffView | None:
    """`details.kind` `edit`: the old and new text diffed by chatui (3 lines of context)."""
    lines = difflib.unified_diff(
        old.splitlines(), new.splitlines(), fromfile=path, tofile=path, lineterm="", n=3
    )
    text = "\n".join(lines)
    return parse_unified(text, path) if text else None


def patch_paths(text: str) -> list[str]:
    """The files a patch touches (what the call line names instead of the patch)."""
    if text.lstrip().startswith(_PATCH_START):
        return [m["path"].strip() for m in map(_PATCH_FILE.fullmatch, text.split("\n")) if m]
    return [_path_of(line) for line in text.split("\n") if line.startswith("+++ ")]
