"""The read-only sandbox folder the file tools work in: every path resolves inside it;
`..`, absolute paths and symlinks cannot leave it.
"""

from __future__ import annotations

import os
from pathlib import Path

from .base import ToolError

SANDBOX_DIR = Path(__file__).resolve().parent.parent / "sandbox"
MAX_READ_BYTES = 64 * 1024


class Sandbox:
    """A read-only folder. Paths are relative to it; "/" means its root."""

    def __init__(self, root: Path | str = SANDBOX_DIR):
        self.root = Path(root).resolve()

    def resolve(self, path: str) -> Path:
        if not isinstance(path, str):
            raise ToolError("path must be a string")
        if "\x00" in path:
            raise ToolError("path must not contain NUL bytes")
        relative = path.strip().replace("\\", "/").lstrip("/") or "."
        target = (self.root / relative).resolve()
        if not target.is_relative_to(self.root):
            raise ToolError(f"path escapes the sandbox: {path}")
        return target

    def display(self, target: Path) -> str:
        relative = target.relative_to(self.root).as_posix()
        return "." if relative in ("", ".") else relative

    def file(self, path: str) -> Path:
        target = self.resolve(path)
        if not target.is_file():
            raise ToolError(f"no such file in the sandbox: {path}")
        return target

    def folder(self, path: str) -> Path:
        target = self.resolve(path)
        if not target.is_dir():
            raise ToolError(f"no such folder in the sandbox: {path}")
        return target

    def read_text(self, path: str) -> tuple[str, str, int]:
        """(display path, text, full size in bytes); the text is cut at 64 KiB."""
        target = self.file(path)
        size = target.stat().st_size
        with target.open("rb") as handle:
            data = handle.read(MAX_READ_BYTES)
        if b"\x00" in data:
            raise ToolError(f"not a text file: {path}")
        return self.display(target), data.decode("utf-8", errors="replace"), size

    def files(self, under: str = ".") -> list[Path]:
        """Every regular file under `under`, sorted, never leaving the sandbox."""
        start = self.resolve(under)
        if start.is_file():
            return [start]
        if not start.is_dir():
            raise ToolError(f"no such file or folder in the sandbox: {under}")
        found = []
        for folder, dirs, names in os.walk(start, followlinks=False):
            dirs[:] = sorted(name for name in dirs if not name.startswith("."))
            for name in sorted(names):
                if name.startswith("."):
                    continue
                path = Path(folder, name).resolve()
                if path.is_relative_to(self.root) and path.is_file():
                    found.append(path)
        return found
