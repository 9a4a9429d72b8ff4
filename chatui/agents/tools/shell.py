"""`run_command`'s simulated shell: a few read-only commands over the sandbox; no
process is ever started, and arguments and output are capped.
"""

from __future__ import annotations

import re
import shlex

from chatui.text import first_line

from .base import ToolError
from .sandbox import MAX_READ_BYTES, Sandbox

#: The simulated shell's limits: operands per command, and characters of output.
MAX_SHELL_ARGS = 20
MAX_SHELL_OUTPUT = MAX_READ_BYTES


class SimulatedShell:
    """A few read-only commands over the sandbox; no process is ever started."""

    COMMANDS = ("cat", "echo", "false", "grep", "head", "ls", "pwd", "tail", "true", "wc")

    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox

    def run(self, command: str) -> tuple[int, str]:
        try:
            argv = shlex.split(command)
        except ValueError as problem:
            return 2, f"sh: {problem}"
        if not argv:
            return 0, ""
        if any(token in ("|", "&&", ";", ">", ">>", "<") for token in argv):
            return 2, "sh: pipes and redirections are not supported in the demo shell"
        name, args = argv[0], argv[1:]
        if name not in self.COMMANDS:
            return (
                127,
                f"sh: {first_line(name, 60)}: command not found (try: {', '.join(self.COMMANDS)})",
            )
        if len(args) > MAX_SHELL_ARGS:
            return 2, f"{name}: too many arguments (at most {MAX_SHELL_ARGS})"
        try:
            code, output = getattr(self, "_" + name)(args)
        except ToolError as problem:
            return 1, f"{name}: {problem}"
        except ValueError as problem:  # e.g. `head -n x`
            return 2, f"{name}: invalid argument: {first_line(str(problem), 120)}"
        if len(output) > MAX_SHELL_OUTPUT:
            output = output[:MAX_SHELL_OUTPUT] + "\n… (output cut)"
        return code, output

    def _true(self, args: list[str]) -> tuple[int, str]:
        return 0, ""

    def _false(self, args: list[str]) -> tuple[int, str]:
        return 1, ""

    def _pwd(self, args: list[str]) -> tuple[int, str]:
        return 0, "/sandbox"

    def _echo(self, args: list[str]) -> tuple[int, str]:
        return 0, " ".join(args)

    def _ls(self, args: list[str]) -> tuple[int, str]:
        folder = self.sandbox.folder(args[0] if args else ".")
        names = sorted(
            entry.name + ("/" if entry.is_dir() else "")
            for entry in folder.iterdir()
            if not entry.name.startswith(".")
        )
        return 0, "\n".join(names)

    def _cat(self, args: list[str]) -> tuple[int, str]:
        if not args:
            return 1, "cat: missing file operand"
        return 0, "".join(self.sandbox.read_text(path)[1] for path in args).rstrip("\n")

    def _lines_option(self, args: list[str]) -> tuple[int, list[str]]:
        count, rest = 10, list(args)
        if rest[:1] == ["-n"] and len(rest) > 1:
            count, rest = int(rest[1]), rest[2:]
        elif rest and re.fullmatch(r"-\d+", rest[0]):
            count, rest = int(rest[0][1:]), rest[1:]
        return count, rest

    def _head(self, args: list[str]) -> tuple[int, str]:
        count, paths = self._lines_option(args)
        if not paths:
            return 1, "head: missing file operand"
        return 0, "\n".join(self.sandbox.read_text(paths[0])[1].splitlines()[:count])

    def _tail(self, args: list[str]) -> tuple[int, str]:
        count, paths = self._lines_option(args)
        if not paths:
            return 1, "tail: missing file operand"
        lines = self.sandbox.read_text(paths[0])[1].splitlines()
        return 0, "\n".join(lines[-count:] if count else [])

    def _wc(self, args: list[str]) -> tuple[int, str]:
        flags = [arg for arg in args if arg.startswith("-")]
        paths = [arg for arg in args if not arg.startswith("-")]
        if not paths:
            return 1, "wc: missing file operand"
        rows = []
        for path in paths:
            shown, text, size = self.sandbox.read_text(path)
            counts = {"-l": text.count("\n"), "-w": len(text.split()), "-c": size}
            picked = [counts[flag] for flag in flags if flag in counts] or list(counts.values())
            rows.append(" ".join(str(number) for number in picked) + f" {shown}")
        return 0, "\n".join(rows)

    def _grep(self, args: list[str]) -> tuple[int, str]:
        ignore_case = "-i" in args
        rest = [arg for arg in args if arg != "-i"]
        if len(rest) < 2:
            return 2, "usage: grep [-i] PATTERN FILE..."
        pattern, paths = rest[0], rest[1:]
        hits = []
        for path in paths:
            shown, text, _ = self.sandbox.read_text(path)
            for line in text.splitlines():
                haystack, needle = (
                    (line.lower(), pattern.lower()) if ignore_case else (line, pattern)
                )
                if needle in haystack:
                    hits.append(f"{shown}:{line}" if len(paths) > 1 else line)
        return (0, "\n".join(hits)) if hits else (1, "")
