"""Rendered transcripts as compact, readable text, for golden files.

The HTML of a transcript (a page, or one entry's outerHTML taken from a live
browser) is read through the stable DOM hooks of docs/rendering.md#dom-hooks and the entry's own
`data-tool-*` markers, and written one line per thing a person sees: each
message, each batch header, and per tool entry its status, title, call line,
the first line of its result or error, the preview note, the kind rows, the
progress bar, progress line and live output. Times are left out (they differ
on every run); everything else that is shown is kept, so a golden file read by
eye says what the page says.

Golden files live in tests/fixtures/agentspine/golden/. `CHATUI_UPDATE_GOLDEN=1`
rewrites them from what the code renders today (then review the diff by eye).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
#: Shown text that changes on every run (elapsed and message times).
SKIPPED_TAGS = {"time"}
UNSEEN_CLASSES = {"visually-hidden", "tool-more-open", "tool-menu"}
FIRST_LINE_CHARS = 120
UPDATE_ENV = "CHATUI_UPDATE_GOLDEN"


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    def has(self, attr: str) -> bool:
        return attr in self.attrs

    def find_all(self, predicate) -> list[Node]:
        found = []
        for child in self.children:
            if isinstance(child, Node):
                if predicate(child):
                    found.append(child)
                found.extend(child.find_all(predicate))
        return found

    def find(self, predicate) -> Node | None:
        found = self.find_all(predicate)
        return found[0] if found else None

    def hook(self, attr: str) -> Node | None:
        """The first descendant carrying `attr`, not looking inside nested tool entries."""
        for child in self.elements():
            if child.has(attr):
                return child
            if child.attrs.get("data-role") == "tool":
                continue
            inner = child.hook(attr)
            if inner is not None:
                return inner
        return None

    def unseen(self) -> bool:
        """Not what a reader sees at first: screen-reader-only words, G16's full
        text and "Show less" inside the closed "more lines" control, and an entry's
        actions menu (W8), shut until opened."""
        classes = self.attrs.get("class", "").split()
        return bool(UNSEEN_CLASSES & set(classes)) or "data-tool-full-text" in self.attrs

    def elements(self) -> list[Node]:
        return [child for child in self.children if isinstance(child, Node)]

    def text(self) -> str:
        parts = []
        for child in self.children:
            if isinstance(child, str):
                parts.append(child)
            elif child.tag not in SKIPPED_TAGS and not child.unseen():
                parts.append(child.text())
        return "".join(parts)


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {name: value or "" for name, value in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Node(tag, {name: value or "" for name, value in attrs}))

    def handle_endtag(self, tag):
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse(html: str) -> Node:
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


# -- text forms ---------------------------------------------------------------------


def squash(text: str) -> str:
    """Whitespace runs become one space: layout, not content."""
    return re.sub(r"\s+", " ", text).strip()


def first_line(text: str) -> tuple[str, int]:
    """The first line (cut at FIRST_LINE_CHARS) and how many lines are shown in all."""
    lines = text.strip("\n").split("\n")
    shown = lines[0].rstrip()
    if len(shown) > FIRST_LINE_CHARS:
        shown = shown[:FIRST_LINE_CHARS] + "…"
    return shown, len(lines)


def entry_lines(entry: Node, depth: int = 0) -> list[str]:
    """One tool entry (and its nested entries), as the lines a person reads."""
    pad = "  " * depth
    head = entry.find(lambda n: "tool-head" in n.attrs.get("class", "").split())
    lines = [
        f"{pad}- [{entry.attrs.get('data-status', '?')}] {squash(head.text() if head else '')}"
    ]

    def add(label: str, node: Node | None, *, whole: bool = False) -> None:
        """`label: text`, or for a block `label (N lines): its first line`."""
        if node is None or not node.text().strip():
            return
        if whole:
            lines.append(f"{pad}    {label}: {squash(node.text())}")
            return
        text, count = first_line(node.text())
        counted = f" ({count} lines)" if count > 1 else ""
        lines.append(f"{pad}    {label}{counted}: {text.strip()}")

    add("retry", entry.hook("data-tool-retry"))
    add("call", entry.hook("data-tool-call"), whole=True)
    error = entry.hook("data-tool-error")
    result = error or entry.hook("data-tool-result")
    add("error" if error is not None else "result", result)
    if result is not None:  # G4's cut note: "… (N more lines)" / "… (truncated, 2.3 KB)"
        add("cut", result.find(lambda n: "tool-more" in n.attrs.get("class", "").split()))
    add("preview", entry.hook("data-tool-preview"), whole=True)
    kind = entry.hook("data-tool-kind")
    if kind is not None:
        for row in kind.elements():
            failed = " ✖" if "kind-failure" in row.attrs.get("class", "") else ""
            lines.append(f"{pad}    {kind.attrs['data-tool-kind']}: {squash(row.text())}{failed}")
    progress = entry.hook("data-tool-progress")
    if progress is not None:
        lines.append(f"{pad}    progress: {progress.attrs.get('value', '?')}%")
    add("progress line", entry.hook("data-tool-progress-line"), whole=True)
    output = entry.hook("data-tool-output")
    if output is not None:
        tail = [line for line in output.text().split("\n") if line.strip()]
        lines.append(f"{pad}    output: {' ⏎ '.join(tail)}")
    children = entry.find(lambda n: "tool-children" in n.attrs.get("class", "").split())
    for child in children.elements() if children is not None else []:
        lines.extend(entry_lines(child, depth + 1))
    return lines


def batch_lines(batch: Node) -> list[str]:
    """The batch header (count, open, has-error, its summary text), then its entries."""
    flags = "".join(
        f" {flag}"
        for flag, attr in (("open", "open"), ("has-error", "data-has-error"))
        if attr in batch.attrs
    )
    summary = batch.find(lambda n: n.tag == "summary")
    title = squash(summary.text()) if summary else ""
    entries = batch.find_all(
        lambda n: n.attrs.get("data-role") == "tool" and n.attrs.get("data-depth") == "0"
    )
    header = f"batch count={batch.attrs.get('data-count')}{flags}: {title}"
    return [header] + [line for entry in entries for line in entry_lines(entry, 1)]


def item_lines(item: Node) -> list[str]:
    role = item.attrs.get("data-role")
    if item.has("data-tool-batch"):
        return batch_lines(item)
    if role == "tool":
        return entry_lines(item)
    if role == "status":
        return [f"status {item.attrs.get('data-status-type')}: {squash(item.text())}"]
    if role in ("user", "assistant"):
        streaming = " (streaming)" if item.has("data-streaming") else ""
        return [f"{role}{streaming}: {squash(item.text())}"]
    return []


def transcript_text(html: str) -> str:
    """The #transcript of a page (or a fragment of items), one line per thing shown."""
    root = parse(html)
    transcript = root.find(lambda n: n.attrs.get("id") == "transcript") or root
    return "\n".join(line for item in transcript.elements() for line in item_lines(item))


def entry_text(html: str, tool_call_id: str | None = None) -> str:
    """One tool entry, by its tool_call_id, or the first one in `html` (an outerHTML)."""
    entry = parse(html).find(
        lambda n: (
            n.attrs.get("data-role") == "tool"
            and tool_call_id in (None, n.attrs.get("data-tool-call-id"))
        )
    )
    assert entry is not None, f"no tool entry {tool_call_id or ''} in the HTML"
    return "\n".join(entry_lines(entry))


# -- golden files ----------------------------------------------------------------------


def updating() -> bool:
    return bool(os.environ.get(UPDATE_ENV))


def check_golden(path: Path, actual: str) -> None:
    """`actual` equals the golden file, or (CHATUI_UPDATE_GOLDEN=1) becomes it."""
    if updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual)
        return
    assert path.exists(), f"no golden file {path}: run with {UPDATE_ENV}=1, then review it"
    assert actual == path.read_text(), f"{path} differs (if intended: {UPDATE_ENV}=1, review)"


def dump_json(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
