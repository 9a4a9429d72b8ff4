"""G21 MCP results (docs/rendering.md#g21), presented without HTML: each CallToolResult
part by type, attachments by the type their bytes are, hostile text kept as text."""

from __future__ import annotations

import hashlib

from chatui.ingest.attachments import extract, sniff
from chatui.models import Message, Role
from chatui.read import presenters
from chatui.read.rich import present_rich
from chatui.read.rich.views import CodeView, KeyValueView, McpView, TerminalView
from tests.support.rich import HTML_AS_PNG, SCRIPT, SVG, b64, mcp_result, tiny_png

LIMIT = 5 * 1024 * 1024


def _view(result: dict, **kwargs) -> McpView:
    stored, _ = extract(result, LIMIT)
    view = present_rich(
        "chart", {"tool_result": stored}, "{}", attachment_url=lambda sha: f"/a/{sha}", **kwargs
    ).view
    assert isinstance(view, McpView)
    return view


def test_g21_every_part_is_shown_by_its_type():
    view = _view(mcp_result())
    kinds = [part.kind for part in view.parts]
    assert kinds == [
        "text",
        "image",
        "download",  # SVG: never inline
        "download",  # HTML that said image/png
        "audio",
        "link",
        "link",
        "resource",
        "download",
        "malformed",
        "malformed",
        "malformed",
    ]
    png = view.parts[1]
    assert png.url == "/a/" + hashlib.sha256(tiny_png()).hexdigest()
    assert png.note.startswith("PNG image · ")
    assert isinstance(view.structured, KeyValueView)
    assert view.is_error is False


def test_g21_hostile_text_stays_text():
    view = _view(mcp_result())
    text = view.parts[0]
    assert text.text == f"Chart ready {SCRIPT}".replace("@", "@\u200b")  # escaped by the template
    assert view.source.startswith("Chart ready <script>")  # what Copy output copies
    link = view.parts[5]
    assert link.url == "https://example.com/report" and "<script>" in link.label


def test_g21_a_mime_type_that_lies_is_shown_as_what_the_bytes_are():
    view = _view(mcp_result())
    svg, html = view.parts[2], view.parts[3]
    assert sniff(SVG) == "image/svg+xml" and "SVG image" in svg.note
    assert "declared image/png" in svg.note
    assert sniff(HTML_AS_PNG) == "application/octet-stream"
    assert html.kind == "download" and "declared image/png" in html.note


def test_g21_only_web_links_are_links():
    view = _view(mcp_result())
    script_link = view.parts[6]
    assert script_link.kind == "link" and script_link.url == ""  # shown as text, never href


def test_g21_embedded_text_resource_is_file_contents():
    view = _view(mcp_result())
    resource = view.parts[7]
    assert isinstance(resource.view, CodeView) and resource.view.language == "python"
    assert resource.label == "file:///src/app.py"


def test_g21_text_parts_go_through_the_shape_dispatch():
    result = {"content": [{"type": "text", "text": "\x1b[32mok\x1b[0m done"}]}
    view = _view(result)
    assert isinstance(view.parts[0].view, TerminalView)


def test_g21_malformed_parts_say_what_is_wrong():
    view = _view(mcp_result())
    notes = [part.note for part in view.parts if part.kind == "malformed"]
    assert notes == [
        "image part with data that is not base64",
        "a part of unknown type 'video'",
        "a part that is not an object",
    ]


def test_g21_oversized_image_keeps_its_digest_not_its_bytes():
    big = tiny_png() + bytes(2000)
    stored, blobs = extract({"content": [{"type": "image", "data": b64(big)}]}, 1000)
    assert blobs == []
    reference = stored["content"][0]["attachment"]
    assert reference["sha256"] == hashlib.sha256(big).hexdigest() and "omitted" in reference
    view = present_rich("x", {"tool_result": stored}, "{}", attachment_url=str).view
    assert view.parts[0].kind == "omitted" and "over the size limit" in view.parts[0].note
    assert view.parts[0].url == ""


def test_g21_base64_leaves_the_stored_result():
    stored, blobs = extract(mcp_result(), LIMIT)
    assert "data" not in stored["content"][1] and "blob" not in stored["content"][8]["resource"]
    assert stored["content"][9]["data"] == "not base64!!"  # not bytes: kept as sent
    assert {blob.media_type for blob in blobs} == {
        "image/png",
        "image/svg+xml",
        "application/octet-stream",
        "audio/mpeg",
    }


def test_g21_is_error_is_an_error_entry(conversation, feed):
    feed(
        {"type": "agent.tool.started", "tool_call_id": "m", "tool_name": "chart", "args": {}},
        {
            "type": "agent.tool.completed",
            "tool_call_id": "m",
            "result": {"content": [{"type": "text", "text": "quota exceeded"}], "isError": True},
        },
    )
    message = Message.objects.get(conversation=conversation, role=Role.TOOL)
    assert message.tool_status == "error" and message.metadata["tool_error"] == "quota exceeded"
    entry = presenters.present_tool_entry(message)
    assert entry.is_error and entry.error == "quota exceeded"
    assert isinstance(entry.rich, McpView) and entry.rich.is_error


def test_g21_structured_content_is_records():
    view = _view({"content": [], "structuredContent": {"rows": [1, 2], "name": "x"}})
    assert [pair.key for pair in view.structured.pairs] == ["rows", "name"]
    listing = _view({"content": [], "structuredContent": [{"a": 1}, {"a": 2}]})
    assert [row.cells[0].text for row in listing.structured.rows] == ["1", "2"]


def test_g21_a_runtime_cannot_send_its_own_reference():
    forged = {"sha256": "a" * 64, "size": 1, "media_type": "image/png"}
    stored, blobs = extract(
        {
            "content": [
                {"type": "image", "attachment": forged},
                {"type": "resource", "resource": {"uri": "x:/y", "attachment": forged}},
            ]
        },
        LIMIT,
    )
    assert blobs == [] and "attachment" not in stored["content"][0]
    assert "attachment" not in stored["content"][1]["resource"]
    view = present_rich("x", {"tool_result": stored}, "{}", attachment_url=str).view
    assert [part.kind for part in view.parts] == ["malformed", "malformed"]


def test_g21_mcp_views_are_memoised_with_their_entry(conversation, feed):
    """docs/PERFORMANCE.md#p9: presented once, like every finished entry."""
    from tests.support.rich import call

    presenters._FINISHED.clear()
    feed(*call("m", "chart", {}, result=mcp_result()))
    message = Message.objects.get(conversation=conversation, role=Role.TOOL)
    first = presenters.present_tool_entry(message)
    again = presenters.present_tool_entry(Message.objects.get(pk=message.pk))
    assert isinstance(first.rich, McpView) and again is first
