"""The demo's keyword planner: which tools a user's words ask for (see KEYWORDS in
demo.py, whose rows it implements). The demo agent and the `delegate` sub-agent plan with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


def wants(text: str, *words: str) -> bool:
    """Does `text` hold one of `words` as a whole word (any case)?"""
    lower = text.lower()
    return any(re.search(rf"\b{re.escape(word)}\b", lower) for word in words)


@dataclass
class Planned:
    name: str
    args: dict[str, Any] = field(default_factory=dict)


#: A verb and the token after it; `_path_in` takes the path from the token. (One
#: regex for both backtracked quadratically on "read ....": 5 s for 20,000 dots,
#: on the event loop.)
_READ = re.compile(r"\b(?:read|open|cat|show)\s+(?:the\s+)?(?:file\s+)?([\w./-]+)")
_FOLDER = re.compile(r"[\w-]+/")


def plan_tools(text: str) -> list[Planned]:
    """Pick tools from the user's words. Fixed order; see KEYWORDS in demo.py."""
    plan: list[Planned] = []

    if wants(text, "delegate", "subagent", "sub-agent"):
        # The whole request goes to the sub-agent, which plans its own tools.
        task = re.sub(r"\b(?:delegate|sub-?agent)\b[:,]?\s*", "", text, flags=re.I).strip()
        return [Planned("delegate", {"task": task or "list the files"})]
    if wants(text, "list", "ls", "files"):
        where = re.search(r"\b(?:in|under)\s+(?:the\s+)?([\w./-]+)", text, re.I)
        folder = where.group(1).strip("/") if where else "."
        if folder.lower() in ("", "sandbox", "root", "folder"):
            folder = "."
        plan.append(Planned("list_files", {"path": folder}))
    for path in _read_paths(text):
        plan.append(Planned("read_file", {"path": path}))
    search = re.search(
        r"\b(?:search|grep|find)\s+(?:for\s+)?[\"'“]?(.+?)[\"'”]?(?=\s+(?:in|and|then)\b|[,.?!]|$)",
        text,
        re.I,
    )
    if search and search.group(1).strip().lower() not in ("files", "the files"):
        plan.append(Planned("search_text", {"query": search.group(1).strip()}))
    calc = re.search(
        r"\b(?:calculate|calc|compute|evaluate)\s+(.+?)(?=\s+(?:and|then)\b|,\s|[?!]?\s*$)",
        text,
        re.I,
    )
    if calc:
        plan.append(Planned("calculate", {"expression": calc.group(1).strip()}))
    if wants(text, "slow", "progress"):
        plan.append(Planned("slow_task", {"steps": 5}))
    if wants(text, "command", "shell") or "`" in text:
        quoted = re.search(r"`([^`]+)`", text)
        plan.append(
            Planned(
                "run_command", {"command": quoted.group(1) if quoted else "wc -l notes/todo.txt"}
            )
        )
    url = re.search(r"https?://[^\s)>\"']+", text)
    if url or wants(text, "fetch", "download", "web"):
        plan.append(
            Planned(
                "fetch_url", {"url": url.group(0).rstrip(".,;") if url else "https://example.com/"}
            )
        )
    if wants(text, "stats", "words"):
        plan.append(Planned("word_stats", {"path": "README.md"}))
    if wants(text, "table", "csv", "cities"):
        plan.append(Planned("query_csv", {"path": "data/cities.csv", "limit": 10}))
    if wants(text, "image", "picture", "draw"):
        plan.append(Planned("image_generation", {"prompt": text.strip()[:200]}))
    if wants(text, "chart", "plot", "mcp"):
        plan.append(Planned("chart_cities", {"path": "data/cities.csv", "limit": 8}))
    if wants(text, "flaky", "retry"):
        plan.append(Planned("flaky_lookup", {"key": "features.retries"}))
    if wants(text, "fail", "failing", "broken"):
        plan.append(Planned("read_file", {"path": "notes/missing.txt"}))
    return plan


def _read_paths(text: str) -> list[str]:
    """The paths after read/open/cat/show, in order, in one linear pass."""
    paths: list[str] = []
    position = 0
    while (match := _READ.search(text, position)) is not None:
        path = _path_in(match.group(1))
        if path is None:
            position = match.start() + 1  # a verb may end this token: "x-read notes/a.txt"
        else:
            paths.append(path)
            position = match.start(1) + len(path)
    return paths


def _path_in(token: str) -> str | None:
    """The path a token starts with: up to its last word character when that much
    holds a "." or "/" ("notes/todo.txt", "a.py."), else a folder ("notes/")."""
    path = token.rstrip("./-")
    if "." in path or "/" in path:
        return path
    folder = _FOLDER.match(token)
    return folder.group() if folder else None
