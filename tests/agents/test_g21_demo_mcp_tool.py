"""G21 in the demo agent (docs/rendering.md#g21): `chart_cities` answers as an MCP server
does — a CallToolResult built with MCP's own types, holding a PNG drawn in code, a resource
link and structured content — and ingest stores the PNG as an attachment."""

from __future__ import annotations

import asyncio
import base64
import struct
import zlib

import mcp.types
import pytest

from chatui.agents import start_run, wait_for_run
from chatui.agents.demo import DemoAgent
from chatui.agents.tools.charts import bar_chart, cities_chart
from chatui.ingest.attachments import sniff
from chatui.models import Attachment, Message

pytestmark = pytest.mark.django_db(transaction=True)


def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height from the IHDR chunk, and every row present once inflated."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat = data.index(b"IDAT")
    length = struct.unpack(">I", data[idat - 4 : idat])[0]
    raw = zlib.decompress(data[idat + 4 : idat + 4 + length])
    assert len(raw) == height * (1 + width * 3)
    return width, height


def test_g21_chart_is_a_real_png_and_a_valid_mcp_result():
    png = bar_chart([5, 3, 8], width=40, height=30)
    assert _png_size(png) == (40, 30) and sniff(png) == "image/png"
    result = cities_chart(
        [{"city": "Tokyo", "population": 37}, {"city": "Delhi", "population": 28}]
    )
    parsed = mcp.types.CallToolResult.model_validate(result)  # the SDK reads it back
    kinds = [part.type for part in parsed.content]
    assert kinds == ["text", "image", "resource_link"]
    assert parsed.structured_content == {"cities": 2, "largest": "Tokyo", "total_population": 65}
    assert base64.b64decode(result["content"][1]["data"])[:8] == b"\x89PNG\r\n\x1a\n"


def test_g21_demo_agent_charts_the_cities_as_an_mcp_result(conversation):
    async def main() -> None:
        start_run(conversation, "chart the cities", agent=DemoAgent(delay=0))
        assert await wait_for_run(conversation.pk, timeout=30)

    asyncio.run(main())
    chart = Message.objects.get(conversation=conversation, tool_name="chart_cities")
    assert chart.tool_status == "success"
    image = chart.metadata["tool_result"]["content"][1]
    assert "data" not in image and image["attachment"]["media_type"] == "image/png"
    stored = Attachment.objects.get(pk=image["attachment"]["sha256"])
    assert _png_size(bytes(stored.data)) == (360, 200)
