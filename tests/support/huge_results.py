"""Tool results too big to carry in a page, each line hostile (the page's size bound)."""

from __future__ import annotations

RESULT_BYTES = 900_000


#: What a hostile runtime puts in every line: script, htmx attributes, a secret (T3).
HOSTILE = (
    "<script>alert('bound')</script> "
    '<div hx-get="/accounts/logout/" hx-trigger="load">hx-load</div> '
    "key sk-live0123456789abcdefWXYZ tail"
)


def huge_result(tag: str, size: int = RESULT_BYTES) -> str:
    """About `size` bytes of lines, each hostile, ending with a line only the whole text has."""
    lines, total, number = [], 0, 0
    while total < size:
        line = f"{tag} line {number:05d} {HOSTILE}"
        lines.append(line)
        total += len(line) + 1
        number += 1
    lines.append(f"{tag} THE END")
    return "\n".join(lines)
