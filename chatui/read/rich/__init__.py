"""docs/rendering.md#rich-output: tool output as people read it (G17–G20), one dispatch.

`present_rich` picks at most one renderer for a finished tool entry's result — by
`details.kind` first, then by the shape of the result and of the call's arguments — and
returns plain view objects (chatui.read.rich.views) that the partials only display. It is
given text already masked (T3: mask first, then render), and every text it returns has its
mentions neutralised (T1). One module per renderer: `ansi` (G17), `diff` (G18), `code`
(G19), `records` (G20), `mcp` (G21: an MCP result's parts, each text part through the
same shape dispatch).

Bounds: a text longer than RICH_CHARS, or with more than RICH_LINES lines, stays the plain
G4 block (its full text then is fetched on demand anyway); Pygments and the parsers are
never given more.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chatui.ingest.attachments import is_call_tool_result
from chatui.secrets import mask_text

from .ansi import has_escapes, present_terminal
from .code import language_of, present_code
from .diff import is_diff, patch_paths, present_diff, present_edit
from .mcp import present_mcp
from .records import (
    looks_like_csv,
    parse_json,
    present_csv,
    present_details,
    present_object,
    present_objects,
)
from .views import DetailsView, DiffView, RichView

__all__ = ["NOTHING", "RICH_CHARS", "Rich", "present_details", "present_rich"]

#: The longest text rendered rich (characters) and its most lines.
RICH_CHARS = 32 * 1024
RICH_LINES = 2000
#: Argument names a file's path goes by (G19's read tools, G18's call line).
PATH_KEYS = ("path", "file_path", "filepath", "file", "filename", "target_file")
#: A tool that reads a file, by its name: its result with a path argument is the file (G19).
_READ_TOOL = re.compile(r"read|cat|view|open|show|get_?file|fetch_?file", re.IGNORECASE)


@dataclass(frozen=True)
class Rich:
    """What the dispatch found for one entry: the result's view (shown instead of the G4
    block), a patch argument's diff (shown under the call line), and the call's arguments
    as the call line should name them (the path instead of the patch: G18)."""

    view: RichView | None = None
    args_diff: DiffView | None = None
    call_args: Any = None  # None: the call line reads the args as given

    @property
    def diff_stat(self) -> str | None:
        """G18's "+12 −3" for the entry's header: the result's diff, else the patch's."""
        for view in (self.view, self.args_diff):
            if isinstance(view, DiffView):
                return view.stat
        return None


NOTHING = Rich()


def _fits(text: Any) -> bool:
    return isinstance(text, str) and 0 < len(text) <= RICH_CHARS and text.count("\n") < RICH_LINES


def _path_arg(args: Any) -> str | None:
    if isinstance(args, dict):
        for key in PATH_KEYS:
            if isinstance(args.get(key), str) and args[key].strip():
                return args[key]
    return None


def _patch_arg(args: Any) -> tuple[str, str] | None:
    """(key, patch) of an `apply_patch`-style argument: a string that is a diff."""
    if not isinstance(args, dict):
        return None
    for key, value in args.items():
        if isinstance(value, str) and "\n" in value and _fits(value) and is_diff(value):
            return key, value
    return None


def _by_kind(details: dict, content: str) -> RichView | None:
    """G18/G19 by `details.kind` (G9's kinds keep their rows; these add the view)."""
    kind = details.get("kind")
    if kind == "diff":
        text = details.get("diff") if isinstance(details.get("diff"), str) else content
        path = details.get("path") if isinstance(details.get("path"), str) else ""
        return present_diff(text, path) if _fits(text) else None
    if kind == "edit":
        old, new, path = details.get("old"), details.get("new"), details.get("path")
        if isinstance(old, str) and isinstance(new, str) and len(old) + len(new) <= RICH_CHARS:
            return present_edit(path if isinstance(path, str) else "", old, new)
        return None
    if kind == "file" and isinstance(details.get("path"), str):
        text = details.get("content") if isinstance(details.get("content"), str) else content
        return present_code(details["path"], text) if _fits(text) else None
    return None


def _mcp(
    tool_name: str, result: Any, mask: Any, url_of: Callable[[str], str] | None
) -> RichView | None:
    """G21: an MCP CallToolResult, each text part read as G17–G20 read a result."""
    if not is_call_tool_result(result):
        return None
    return present_mcp(result, lambda text: _by_shape(tool_name, None, text, text, mask), url_of)


def _by_shape(tool_name: str, args: Any, result: Any, content: str, mask: Any) -> RichView | None:
    """G17–G20 by what the result looks like."""
    if not _fits(content):
        return None
    if has_escapes(content):
        return present_terminal(content, mask=mask)
    if is_diff(content):
        view = present_diff(content)
        if view is not None:
            return view
    # The result as sent when the text is its JSON; a `{"text", "details"}` result's text
    # is text (docs/events.md#canonical-messages), read as JSON only if it is some.
    is_json_text = content.lstrip()[:1] in ("[", "{")
    data = result if isinstance(result, list | dict) and is_json_text else None
    if data is None and is_json_text:
        data = parse_json(content)
    if isinstance(data, list):
        return present_objects(data, content)
    if isinstance(data, dict):
        return present_object(data, content)
    # A read tool's one-line result is most often its status ("ok: 12 lines read"), not
    # the file: it stays inline (G4); `details.kind` `file` says so for one-line files.
    path = _path_arg(args) if "\n" in content.strip() else None
    if path and _READ_TOOL.search(tool_name) and language_of(path) is not None:
        return present_code(path, content)
    if looks_like_csv(content):
        return present_csv(content)
    return None


def _failed_output(meta: dict, content: str, error: str, mask: Any) -> RichView | None:
    """G17 for a failed command: its output in colour, only the error line red. A command
    (`details.kind` `command`, or output with escapes) shows as a terminal; the error line
    is the runtime's `error` when it is not the output itself, else the output's last line."""
    details = meta.get("details")
    is_command = isinstance(details, dict) and (
        details.get("kind") == "command" or "exit_code" in details
    )
    tool_error = meta.get("tool_error") if isinstance(meta.get("tool_error"), str) else ""
    result = meta.get("tool_result")
    # The output: a result sent beside the error, else the entry's text (the error itself)
    output = result if isinstance(result, str) and result.strip() else (content or error)
    if not _fits(output) or not (is_command or has_escapes(output)):
        return None
    line = tool_error.strip() if tool_error and output != tool_error else ""
    if "\n" in line:
        line = ""  # a long error is the output: its last line is red
    return present_terminal(output, error_line=line, mask=mask)


def present_rich(
    tool_name: str,
    meta: dict,
    content: str,
    *,
    error: str | None = None,
    whole: bool = True,
    mask_secrets: bool = True,
    attachment_url: Callable[[str], str] | None = None,
) -> Rich:
    """The rich views of a finished entry, from its masked `meta` and `content`.
    `error`: the error text when the entry failed. `whole`: False when `content` is only
    the head of a long text (nothing is rendered rich from a head). `mask_secrets`: as the
    display says (False only where a reader may see secrets). `attachment_url`: an MCP
    attachment's address on this conversation's pages, by its sha256 (G21)."""
    mask = mask_text if mask_secrets else None
    args = meta.get("args")
    patch = _patch_arg(args)
    args_diff = present_diff(patch[1]) if patch else None
    call_args = None
    if args_diff is not None:
        paths = patch_paths(patch[1])
        call_args = {k: v for k, v in args.items() if k != patch[0]}
        if paths and not _path_arg(call_args):
            call_args = {"path": ", ".join(paths), **call_args}
    view = None
    if whole:
        result = meta.get("tool_result")
        if error is not None:
            # G21 before G17: an MCP result's `isError` is its own error (G6), its parts shown
            view = _mcp(tool_name, result, mask, attachment_url)
            if view is None:
                view = _failed_output(meta, content, error, mask)
        else:
            details = meta.get("details")
            if isinstance(details, dict):
                view = _by_kind(details, content)
            if view is None:
                view = _mcp(tool_name, result, mask, attachment_url)
            if view is None:
                view = _by_shape(tool_name, args, result, content, mask)
    if view is None and args_diff is None:
        return NOTHING
    return Rich(view, args_diff, call_args)


def details_view(payload: Any) -> DetailsView | None:
    """G20's Details: the panel's JSON with multi-line strings as text blocks."""
    return present_details(payload)
