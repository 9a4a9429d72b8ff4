"""The demo's MCP tool (docs/rendering.md#g21): a bar chart drawn as a PNG in code (zlib and
struct: no imaging library) and returned as a real MCP `CallToolResult`, built with MCP's
own wire types (`mcp_types`, the package `mcp.types` re-exports): a text part, the image,
a resource link and structured content."""

from __future__ import annotations

import base64
import csv
import io
import struct
import zlib
from typing import Any

import mcp_types

#: The chart's size in pixels, its background, axis and bar colours (RGB).
WIDTH, HEIGHT = 360, 200
BACKGROUND = (255, 255, 255)
AXIS = (91, 98, 113)
BARS = ((37, 99, 235), (22, 163, 74), (234, 88, 12), (147, 51, 234))
SOURCE_URL = "https://en.wikipedia.org/wiki/List_of_largest_cities"


def png(pixels: list[bytearray], width: int, height: int) -> bytes:
    """An 8-bit RGB PNG of `pixels` (one bytearray of width × 3 bytes per row)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit, truecolour
    raw = b"".join(b"\x00" + bytes(row) for row in pixels)  # filter type 0 on each row
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def bar_chart(values: list[float], width: int = WIDTH, height: int = HEIGHT) -> bytes:
    """A PNG bar chart of `values` (non-negative), bars in turn of BARS' colours."""
    pixels = [bytearray(BACKGROUND * width) for _ in range(height)]

    def fill(x0: int, y0: int, x1: int, y1: int, colour: tuple[int, int, int]) -> None:
        for y in range(max(0, y0), min(height, y1)):
            pixels[y][max(0, x0) * 3 : min(width, x1) * 3] = bytes(colour) * (
                min(width, x1) - max(0, x0)
            )

    margin, base = 16, height - 16
    fill(margin, base, width - margin, base + 2, AXIS)  # the x axis
    top = max(values, default=0) or 1
    slot = (width - 2 * margin) // max(1, len(values))
    for n, value in enumerate(values):
        bar = max(1, round((base - margin) * max(0.0, value) / top))
        x = margin + n * slot + slot // 6
        fill(x, base - bar, x + slot - slot // 3, base, BARS[n % len(BARS)])
    return png(pixels, width, height)


def rows_of(text: str) -> list[dict[str, Any]]:
    """A CSV's rows, `population` as a number."""
    rows = list(csv.DictReader(io.StringIO(text)))
    for row in rows:
        row["population"] = int(row["population"]) if row.get("population", "").isdigit() else 0
    return rows


def cities_chart(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The MCP result of charting `rows` (`city` and `population` each): as a runtime would
    send an MCP server's answer, its JSON by MCP's own field names."""
    populations = [float(row.get("population") or 0) for row in rows]
    names = [str(row.get("city", "?")) for row in rows]
    image = bar_chart(populations)
    largest = max(range(len(rows)), key=populations.__getitem__) if rows else None
    result = mcp_types.CallToolResult(
        content=[
            mcp_types.TextContent(
                type="text",
                text=f"Population of {len(rows)} cities, largest first: {', '.join(names)}.",
            ),
            mcp_types.ImageContent(
                type="image", data=base64.b64encode(image).decode(), mime_type="image/png"
            ),
            mcp_types.ResourceLink(
                type="resource_link",
                uri=SOURCE_URL,
                name="largest-cities",
                title="Where the numbers come from",
                mime_type="text/html",
            ),
        ],
        structured_content={
            "cities": len(rows),
            "largest": names[largest] if largest is not None else None,
            "total_population": round(sum(populations)),
        },
        is_error=False,
    )
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)
