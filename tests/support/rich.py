"""Tool calls whose results render rich (docs/rendering.md#rich-output), each carrying
hostile text (HTML, script, htmx attributes) where its renderer shows text: shared by the
presenter, template, surface and browser tests of G17–G20."""

from __future__ import annotations

from typing import Any

SCRIPT = '<script>alert("x")</script><img src=x onerror=alert(1) hx-get="/x">'

#: G17: colours, a title and a cursor move, a progress bar redrawn by "\r", a link (OSC 8).
TERMINAL = (
    "\x1b]0;window title\x07\x1b[2J\x1b[H"
    "test_a \x1b[32mPASSED\x1b[0m\n"
    f"test_b \x1b[1;31mFAILED\x1b[0m {SCRIPT}\n"
    "\x1b[38;2;250;20;20mtruecolour\x1b[0m \x1b[38;5;33mxterm\x1b[0m\n"
    "10%\r55%\r100% done\n"
    "\x1b]8;;https://example.com\x1b\\a link\x1b]8;;\x1b\\"
)

#: G18: git's unified diff with a hostile line.
UNIFIED_DIFF = (
    "diff --git a/src/app.py b/src/app.py\n"
    "index 1111111..2222222 100644\n"
    "--- a/src/app.py\n"
    "+++ b/src/app.py\n"
    "@@ -1,4 +1,5 @@\n"
    " import os\n"
    "-print('old')\n"
    f"+print('{SCRIPT}')\n"
    "+print('new')\n"
    " x = 1\n"
    " y = 2\n"
)

#: G18: Codex's apply_patch argument.
PATCH = (
    "*** Begin Patch\n"
    "*** Update File: docs/notes.md\n"
    "@@ ## Notes\n"
    "-old line\n"
    f"+{SCRIPT}\n"
    "+another line\n"
    " kept\n"
    "*** End Patch"
)

#: G19: a Python file with script in a string and a comment.
CODE = f'def greet(name):\n    """Say hello."""\n    return "{SCRIPT}"  # {SCRIPT}\n'

#: G20: CSV with a header row and a hostile cell.
CSV = f'name,count,note\nalpha,3,"{SCRIPT.replace(chr(34), chr(39))}"\nbeta,12,plain\ngamma,7,\n'

RECORDS = [{"id": n, "name": f"row {n}", "note": SCRIPT if n == 1 else ""} for n in range(60)]


def call(call_id: str, tool_name: str, args: dict, **completed: Any) -> list[dict]:
    """One tool call, started and completed with `completed`'s fields."""
    return [
        {
            "type": "agent.tool.started",
            "tool_call_id": call_id,
            "tool_name": tool_name,
            "args": args,
        },
        {"type": "agent.tool.completed", "tool_call_id": call_id, **completed},
    ]


def rich_events() -> list[dict]:
    """One call per renderer (a user message first, so the batch has its own place)."""
    return [
        {"type": "user.message", "content": "Show me everything rich"},
        *call("g17", "run_tests", {"command": "pytest"}, result=TERMINAL),
        *call(
            "g17f",
            "run_cmd",
            {"command": "make"},
            result="\x1b[32mcompiled\x1b[0m a.o\nlinking",
            error="make: *** [all] Error 2",
            details={"kind": "command", "command": "make", "exit_code": 2},
        ),
        *call("g18", "git_diff", {}, result=UNIFIED_DIFF),
        *call("g18p", "apply_patch", {"input": PATCH}, result="Done"),
        *call(
            "g18e",
            "edit_file",
            {"path": "src/app.py"},
            result="edited",
            details={
                "kind": "edit",
                "path": "src/app.py",
                "old": "a\nb\n",
                "new": f"a\n{SCRIPT}\n",
            },
        ),
        *call("g19", "read_file", {"path": "src/greet.py"}, result=CODE),
        *call("g20", "query", {"sql": "select 1"}, result=RECORDS),
        *call("g20c", "export_csv", {"table": "t"}, result=CSV),
        *call("g20o", "lookup", {"id": 1}, result={"name": SCRIPT, "bio": "line 1\nline 2"}),
    ]


# -- G21: MCP results (docs/rendering.md#g21) ---------------------------------------------


def b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


def tiny_png() -> bytes:
    """A real PNG (chatui's own encoder: the demo's), 24 × 16 pixels."""
    from chatui.agents.tools.charts import bar_chart

    return bar_chart([3, 1, 2], width=24, height=16)


#: An SVG that would run script if a browser rendered it as a document.
SVG = (
    b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)">'
    b"<script>alert(2)</script></svg>"
)
#: HTML dressed as an image (a MIME type that lies).
HTML_AS_PNG = b"<html><body><script>alert(3)</script></body></html>"


def mcp_result(*, is_error: bool = False) -> dict:
    """A CallToolResult with every kind of part, hostile text where text is shown."""
    return {
        "content": [
            {"type": "text", "text": f"Chart ready {SCRIPT}"},
            {"type": "image", "data": b64(tiny_png()), "mimeType": "image/png"},
            {"type": "image", "data": b64(SVG), "mimeType": "image/png"},
            {"type": "image", "data": b64(HTML_AS_PNG), "mimeType": "image/png"},
            {
                "type": "audio",
                "data": b64(b"ID3\x03\x00\x00\x00" + bytes(64)),
                "mimeType": "audio/mpeg",
            },
            {
                "type": "resource_link",
                "uri": "https://example.com/report",
                "name": f"report {SCRIPT}",
            },
            {"type": "resource_link", "uri": "javascript:alert(4)", "name": "click me"},
            {
                "type": "resource",
                "resource": {
                    "uri": "file:///src/app.py",
                    "mimeType": "text/x-python",
                    "text": CODE,
                },
            },
            {
                "type": "resource",
                "resource": {"uri": "file:///blob.bin", "blob": b64(b"\x00\x01\x02")},
            },
            {"type": "image", "data": "not base64!!", "mimeType": "image/png"},
            {"type": "video", "data": "AAAA"},
            "a bare string",
        ],
        "structuredContent": {"rows": 3, "note": SCRIPT},
        "isError": is_error,
    }
