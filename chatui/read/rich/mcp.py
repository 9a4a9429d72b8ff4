"""G21 MCP results: a `CallToolResult` shown part by part (docs/rendering.md#g21).

Text parts go through the same shape dispatch as any result (G17–G20, the caller's
`read_text`); an embedded text resource is file contents (G19 by its URI's path); images
and audio are attachments (chatui.ingest.attachments took their bytes out at ingest: the
stored part holds a reference), shown in `<img>` / `<audio>` only when the bytes sniffed
are a raster image or audio the page may show, else offered as a download — SVG always.
A resource link is a link (http and https only; nothing is fetched to preview it).
`structuredContent` is G20. Whatever a part holds that is not MCP's shape is shown as a
malformed part, never an error of the page.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from chatui.ingest.attachments import (
    INLINE_AUDIO_TYPES,
    INLINE_IMAGE_TYPES,
    PART_TYPES,
    decode_base64,
    reference_of,
)
from chatui.text import clip, human_size, neutralise

from .ansi import plain
from .code import present_code
from .records import present_object, present_objects
from .views import McpPart, McpView, RichView

#: Most parts shown of one result, and characters of one text part or label.
MAX_PARTS = 50
TEXT_CHARS = 32 * 1024
LABEL_CHARS = 300
STRUCTURED_CHARS = 8 * 1024

#: A type as a reader names it ("PNG image").
_NAMES = {
    "image/png": "PNG image",
    "image/jpeg": "JPEG image",
    "image/gif": "GIF image",
    "image/webp": "WebP image",
    "image/avif": "AVIF image",
    "image/svg+xml": "SVG image",
    "audio/mpeg": "MP3 audio",
    "audio/wav": "WAV audio",
    "audio/ogg": "Ogg audio",
    "audio/flac": "FLAC audio",
    "audio/mp4": "M4A audio",
    "application/pdf": "PDF document",
}

ReadText = Callable[[str], "RichView | None"]
AttachmentUrl = Callable[[str], str]


def _label(value: Any) -> str:
    return neutralise(clip(value, LABEL_CHARS)) if isinstance(value, str) else ""


def _text(value: str) -> str:
    return neutralise(plain(clip(value, TEXT_CHARS)))


def _binary(
    part: dict, holder: dict, what: str, label: str, url_of: AttachmentUrl | None
) -> McpPart:
    """An image, audio or blob part: shown by the type its bytes are."""
    reference = reference_of(part)
    if reference is None:
        data = holder.get("blob" if part.get("type") == "resource" else "data")
        problem = "data that is not base64" if data is not None else "no data"
        if data is not None and decode_base64(data) is not None:
            problem = "data not stored"  # base64 the ingest did not take (an older row)
        return McpPart("malformed", label=label, note=f"{what} part with {problem}")
    media_type = reference["media_type"]
    name = _NAMES.get(media_type, media_type)
    note = f"{name} · {human_size(reference['size'])}"
    declared = holder.get("mimeType")
    if isinstance(declared, str) and declared.split(";")[0].strip().lower() != media_type:
        note += f" · declared {clip(declared, 80)}"
    if "omitted" in reference:
        return McpPart("omitted", label=label, note=f"{note} · not stored: over the size limit")
    url = url_of(reference["sha256"]) if url_of is not None else ""
    if not url:
        return McpPart("omitted", label=label, note=note)
    if media_type in INLINE_IMAGE_TYPES or media_type in INLINE_AUDIO_TYPES:
        kind = "image" if media_type in INLINE_IMAGE_TYPES else "audio"
        alt = label or name
        width, height = reference.get("width"), reference.get("height")
        pixels = (
            (width, height)
            if kind == "image" and _is_pixels(width) and _is_pixels(height)
            else None
        )
        return McpPart(kind, url=url, label=alt, note=note, alt=alt, pixels=pixels)
    return McpPart("download", url=url, label=label or f"{what} ({name})", note=note)


def _is_pixels(value: Any) -> bool:
    """A stored width or height (the log may hold anything a runtime forged)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 65535


def _link(part: dict) -> McpPart:
    uri = part.get("uri")
    if not isinstance(uri, str) or not uri.strip():
        return McpPart("malformed", note="resource link without a URI")
    name = part.get("title") or part.get("name")
    label = _label(name) if isinstance(name, str) and name.strip() else _label(uri)
    bits = [_label(uri)] if label != _label(uri) else []
    if isinstance(part.get("description"), str) and part["description"].strip():
        bits.append(_label(part["description"]))
    if isinstance(part.get("mimeType"), str):
        bits.append(_label(part["mimeType"]))
    # Only the web's own schemes are links: never javascript:, data: or file:.
    scheme = urlsplit(uri.strip()).scheme.lower() if "\n" not in uri else ""
    url = uri.strip() if scheme in ("http", "https") and len(uri) <= 2000 else ""
    return McpPart("link", url=url, label=label, note=" · ".join(bits))


def _resource(part: dict, url_of: AttachmentUrl | None) -> McpPart:
    resource = part.get("resource")
    if not isinstance(resource, dict):
        return McpPart("malformed", note="resource part without a resource")
    uri = resource.get("uri") if isinstance(resource.get("uri"), str) else ""
    if isinstance(resource.get("text"), str):
        text = resource["text"]
        path = urlsplit(uri).path if uri else ""
        name = posixpath.basename(path)
        view = present_code(path, text) if name and len(text) <= TEXT_CHARS else None
        if view is not None:  # a language G19 knows
            return McpPart("resource", view=view, label=_label(uri))
        return McpPart("resource", text=_text(text), label=_label(uri))
    return _binary(part, resource, "resource", _label(uri), url_of)


def _part(part: Any, read_text: ReadText, url_of: AttachmentUrl | None) -> McpPart:
    if not isinstance(part, dict):
        return McpPart("malformed", note="a part that is not an object")
    kind = part.get("type")
    if kind == "text":
        text = part.get("text")
        if not isinstance(text, str):
            return McpPart("malformed", note="text part without text")
        view = read_text(text) if len(text) <= TEXT_CHARS else None
        return McpPart("text", text="" if view else _text(text), view=view)
    if kind == "image":
        return _binary(part, part, "image", _label(part.get("alt")), url_of)
    if kind == "audio":
        return _binary(part, part, "audio", "", url_of)
    if kind == "resource_link":
        return _link(part)
    if kind == "resource":
        return _resource(part, url_of)
    shown = kind if isinstance(kind, str) else json.dumps(kind)
    return McpPart("malformed", note=f"a part of unknown type {clip(shown, 80)!r}")


def present_mcp(result: dict, read_text: ReadText, url_of: AttachmentUrl | None) -> McpView:
    """G21: `result` (a CallToolResult as stored, masked: chatui.ingest.attachments
    `is_call_tool_result`) as its view. `read_text` renders a text part as G17–G20 would
    (None: plain text); `url_of` gives an attachment's address by its sha256."""
    content = result["content"]
    parts = [_part(part, read_text, url_of) for part in content[:MAX_PARTS]]
    if len(content) > MAX_PARTS:
        parts.append(McpPart("malformed", note=f"{len(content) - MAX_PARTS} more parts not shown"))
    structured = result.get("structuredContent")
    structured_view = structured_text = None
    if isinstance(structured, dict):
        structured_view = present_object(structured, "")
    elif isinstance(structured, list):
        structured_view = present_objects(structured, "")
    if structured is not None and structured_view is None and structured not in ({}, []):
        encoded = json.dumps(structured, ensure_ascii=False, indent=2, default=str)
        structured_text = neutralise(clip(encoded, STRUCTURED_CHARS))
    texts = [
        part["text"]
        for part in content
        if isinstance(part, dict)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
    ]
    source = neutralise(plain("\n".join(texts)))
    chars = len(source) + sum(len(part.text) + len(part.note) for part in parts)
    chars += sum(view.chars for view in (part.view for part in parts) if view is not None)
    return McpView(
        parts=tuple(parts),
        structured=structured_view,
        structured_text=structured_text,
        is_error=result.get("isError") is True,
        source=source,
        chars=chars,
    )


__all__ = ["PART_TYPES", "present_mcp"]
