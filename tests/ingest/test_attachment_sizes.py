"""G21 images hold their place (docs/rendering.md#g21): an image part's width and height
are read from its header at ingest and written on its `<img>`, so the page does not
shift when it loads (the CLS bench). Headers only: nothing is decoded."""

from __future__ import annotations

import struct

import pytest

from chatui.ingest.attachments import image_size
from chatui.ingest.service import ingest
from chatui.models import Event
from chatui.read.rich.mcp import present_mcp
from tests.support.rich import b64, tiny_png


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00" * 20


def jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
    sof = b"\xff\xc2" + struct.pack(">HBHH", 17, 8, height, width) + b"\x00" * 10
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


def webp_lossy(width: int, height: int) -> bytes:
    frame = b"\x00\x00\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height)
    return b"RIFF" + b"\x00" * 4 + b"WEBP" + b"VP8 " + b"\x00" * 4 + frame


def webp_lossless(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    return b"RIFF" + b"\x00" * 4 + b"WEBPVP8L" + b"\x00" * 4 + b"\x2f" + bits.to_bytes(4, "little")


@pytest.mark.parametrize(
    ("data", "media_type", "size"),
    [
        (tiny_png(), "image/png", (24, 16)),
        (gif(320, 200), "image/gif", (320, 200)),
        (jpeg(640, 480), "image/jpeg", (640, 480)),
        (webp_lossy(100, 50), "image/webp", (100, 50)),
        (webp_lossless(7, 9), "image/webp", (7, 9)),
    ],
)
def test_g21_an_images_size_is_read_from_its_header(data, media_type, size):
    assert image_size(data, media_type) == size


@pytest.mark.parametrize(
    ("data", "media_type"),
    [
        (b"\x89PNG\r\n\x1a\n", "image/png"),  # cut short
        (gif(0, 10), "image/gif"),  # no pixels
        (b"\xff\xd8\xff\xe0\x00\x01", "image/jpeg"),  # a segment length under 2
        (b"\xff\xd8" + b"\x00" * 40, "image/jpeg"),  # no marker
        (b"RIFF\x00\x00\x00\x00WEBPVP8Z", "image/webp"),
        (tiny_png(), "image/svg+xml"),  # not a raster type
    ],
)
def test_g21_a_header_that_does_not_say_gives_no_size(data, media_type):
    assert image_size(data, media_type) is None


def test_g21_the_page_holds_an_images_place_before_it_loads(conversation):
    result = {"content": [{"type": "image", "data": b64(tiny_png()), "mimeType": "image/png"}]}
    ingest(
        conversation,
        [
            {"type": "agent.tool.started", "tool_call_id": "c", "tool_name": "chart"},
            {"type": "agent.tool.completed", "tool_call_id": "c", "result": result},
        ],
    )
    stored = Event.objects.get(type="agent.tool.completed").payload["result"]["content"][0]
    assert (stored["attachment"]["width"], stored["attachment"]["height"]) == (24, 16)
    (part,) = present_mcp(stored_result(stored), lambda text: None, lambda sha: f"/a/{sha}").parts
    assert ' width="24" height="16" ' in part.html


def stored_result(part: dict) -> dict:
    return {"content": [part]}


def test_g21_a_forged_size_in_the_log_is_not_written(conversation):
    """The log may hold what a runtime forged in an older row: only whole numbers of
    pixels reach the attribute."""
    forged = {"type": "image", "attachment": {"sha256": "a" * 64, "size": 3,
              "media_type": "image/png", "width": '1" onload="alert(1)', "height": 5}}  # fmt: skip
    (part,) = present_mcp(stored_result(forged), lambda text: None, lambda sha: f"/a/{sha}").parts
    assert "onload" not in part.html and "width=" not in part.html
