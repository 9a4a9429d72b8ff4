"""MCP results' binary parts as attachments (docs/rendering.md#g21, docs/events.md#mcp-results).

A tool result shaped as MCP's `CallToolResult` may carry images, audio and embedded blob
resources as base64 text. At ingest (`normalise_event`), each such part's bytes are
decoded, addressed by their sha256 and replaced in the stored payload by a reference
(`extract`); ingest writes the bytes once (`store`, an `Attachment` row per distinct
sha256) in the event's transaction, with an `AttachmentUse` row saying this conversation
holds them. The event log thus keeps the result as received with each base64 string
replaced by `{"sha256", "size", "media_type"}`: the chain hashes that payload, and so
commits to the bytes through their digest, and no page, export or replay ever carries
the base64 again.

The media type is sniffed from the bytes (`sniff`), never taken from the declared
`mimeType`: a part that says `image/png` and holds SVG or HTML is SVG or HTML here, and
the attachment view serves only a short list of raster images and audio inline.
A part whose bytes exceed `CHATUI_MAX_ATTACHMENT_BYTES` keeps its reference (digest,
size, `omitted`) but not its bytes; a part whose data is not base64 is kept as sent and
shown as malformed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models.signals import post_delete, pre_delete

from chatui.models import Attachment, AttachmentUse, Conversation, Event

#: The `content` part types of MCP's CallToolResult (2025-06-18).
PART_TYPES = ("text", "image", "audio", "resource_link", "resource")
#: Where a part keeps its base64 bytes: image and audio parts in `data`, an embedded
#: resource in `resource.blob`.
REFERENCE_KEY = "attachment"
#: The error text of an MCP result with `isError: true` and no text part to say why.
MCP_ERROR = "the tool reported an error"

#: Sniffed types a page may show in `<img>` or `<audio>` (and the view serves inline).
#: Everything else — SVG included: it can hold script — is a download.
INLINE_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"})
INLINE_AUDIO_TYPES = frozenset({"audio/mpeg", "audio/wav", "audio/ogg", "audio/flac", "audio/mp4"})
OCTET_STREAM = "application/octet-stream"

_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


@dataclass(frozen=True)
class Blob:
    """One binary part's bytes, as ingest stores them."""

    sha256: str
    data: bytes
    media_type: str


def is_call_tool_result(value: Any) -> bool:
    """A result shaped as MCP's CallToolResult: an object whose `content` is a list, with
    at least one part of an MCP type, or MCP's `structuredContent` / `isError` beside it.
    (A `{"content": [...]}` of anything else is left to the other renderers.)"""
    if not isinstance(value, dict) or not isinstance(value.get("content"), list):
        return False
    if "structuredContent" in value or isinstance(value.get("isError"), bool):
        return True
    return any(
        isinstance(part, dict) and part.get("type") in PART_TYPES for part in value["content"]
    )


def is_error_result(value: Any) -> bool:
    """MCP's `isError: true`: the tool failed (G6), whatever the event said."""
    return is_call_tool_result(value) and value.get("isError") is True


def error_text(value: dict) -> str:
    """An MCP error result's text: its text parts, joined (MCP puts the error there)."""
    texts = [
        part["text"]
        for part in value.get("content", ())
        if isinstance(part, dict)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
    ]
    return "\n".join(texts).strip()


def sniff(data: bytes) -> str:
    """The media type the bytes are, from their first bytes (magic numbers); SVG by its
    root element; else application/octet-stream. A short list on purpose: only what the
    page may show inline needs to be known exactly; anything unknown is a download."""
    head = data[:64]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in (b"avif", b"avis"):
            return "image/avif"
        if brand in (b"M4A ", b"M4B "):
            return "audio/mp4"
        return OCTET_STREAM  # video, or a brand not known here: a download
    if head.startswith(b"OggS"):
        return "audio/ogg"
    if head.startswith(b"fLaC"):
        return "audio/flac"
    if head.startswith(b"ID3") or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE6 == 0xE2):
        return "audio/mpeg"  # an ID3 tag, or an MPEG audio layer III frame header
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if _is_svg(data[:4096]):
        return "image/svg+xml"
    return OCTET_STREAM


def image_size(data: bytes, media_type: str) -> tuple[int, int] | None:
    """A raster image's width and height in pixels, read from its header (PNG's IHDR,
    GIF's screen descriptor, JPEG's first SOF marker, WebP's VP8/VP8L/VP8X chunk), so the
    page can hold the image's place before it loads (no layout shift); None when the
    header does not say. Only headers are read: nothing is decoded. (Pillow would do it,
    for a 10 MB dependency and a decoder we would then have to keep safe.)"""
    try:
        if media_type == "image/png" and data[12:16] == b"IHDR":
            size = struct.unpack(">II", data[16:24])
        elif media_type == "image/gif":
            size = struct.unpack("<HH", data[6:10])
        elif media_type == "image/jpeg":
            size = _jpeg_size(data)
        elif media_type == "image/webp":
            size = _webp_size(data)
        else:
            return None
    except struct.error:
        return None
    if size is None or not (0 < size[0] <= 65535 and 0 < size[1] <= 65535):
        return None
    return size


#: JPEG's start-of-frame markers (baseline, progressive, …): they carry the size.
_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        if length < 2:
            return None
        at += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and data[20:21] == b"\x2f":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return None


def _is_svg(head: bytes) -> bool:
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return (text.startswith(b"<") and b"<svg" in text) or text.startswith(b"<svg")


def decode_base64(text: Any) -> bytes | None:
    """The bytes of a base64 string (standard alphabet, padding optional, whitespace
    ignored), or None when it is not one."""
    if not isinstance(text, str):
        return None
    compact = "".join(text.split())
    if not _BASE64.fullmatch(compact):
        return None
    try:
        return base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def _reference(data: bytes, limit: int, found: list[Blob]) -> dict[str, Any]:
    digest = hashlib.sha256(data).hexdigest()
    media_type = sniff(data)
    reference: dict[str, Any] = {"sha256": digest, "size": len(data), "media_type": media_type}
    if (pixels := image_size(data, media_type)) is not None:
        reference["width"], reference["height"] = pixels
    if len(data) > limit:
        reference["omitted"] = f"larger than the {limit}-byte limit"
    else:
        found.append(Blob(digest, data, media_type))
    return reference


def extract(result: Any, limit: int) -> tuple[Any, list[Blob]]:
    """`result` with each binary part's base64 replaced by its reference, and the bytes
    to store. Not a CallToolResult, or one without binary parts: returned as it is."""
    if not is_call_tool_result(result):
        return result, []
    found: list[Blob] = []
    parts: list[Any] = []
    changed = False
    for part in result["content"]:
        new = part
        # A reference is chatui's own: one a runtime sends is dropped, so a page never
        # points at bytes by a digest and a type that ingest did not derive itself.
        if isinstance(part, dict) and part.get("type") in ("image", "audio"):
            data = decode_base64(part.get("data"))
            if data is not None or REFERENCE_KEY in part:
                new = {k: v for k, v in part.items() if k not in ("data", REFERENCE_KEY)}
            if data is not None:
                new[REFERENCE_KEY] = _reference(data, limit, found)
            elif "data" in part:
                new["data"] = part["data"]  # not base64: kept as sent, shown as malformed
        elif isinstance(part, dict) and part.get("type") == "resource":
            resource = part.get("resource")
            data = decode_base64(resource.get("blob")) if isinstance(resource, dict) else None
            if data is not None or (isinstance(resource, dict) and REFERENCE_KEY in resource):
                inner = {k: v for k, v in resource.items() if k not in ("blob", REFERENCE_KEY)}
                if data is not None:
                    inner[REFERENCE_KEY] = _reference(data, limit, found)
                elif "blob" in resource:
                    inner["blob"] = resource["blob"]
                new = {**part, "resource": inner}
        changed = changed or new is not part
        parts.append(new)
    if not changed:
        return result, []
    return {**result, "content": parts}, found


def reference_of(part: Any) -> dict[str, Any] | None:
    """A stored part's attachment reference (its own, or its embedded resource's), when
    it is well formed: a 64-hex sha256, a size and a media type."""
    if not isinstance(part, dict):
        return None
    holder = part.get("resource") if part.get("type") == "resource" else part
    reference = holder.get(REFERENCE_KEY) if isinstance(holder, dict) else None
    if not isinstance(reference, dict):
        return None
    digest, size = reference.get("sha256"), reference.get("size")
    if not (isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest)):
        return None
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return None
    if not isinstance(reference.get("media_type"), str):
        return None
    return reference


def store(conversation_id: Any, found: Iterable[tuple[int, Blob]]) -> None:
    """Write the bytes not stored yet, and which of them this conversation holds (from
    the seq of the first event that brought them). In ingest's transaction; concurrent
    ingests of the same bytes both succeed (conflicts ignored: the rows are the same)."""
    first: dict[str, tuple[int, Blob]] = {}
    for seq, blob in found:
        first.setdefault(blob.sha256, (seq, blob))
    if not first:
        return
    known = set(Attachment.objects.filter(sha256__in=list(first)).values_list("sha256", flat=True))
    Attachment.objects.bulk_create(
        [
            Attachment(
                sha256=digest, data=blob.data, size=len(blob.data), media_type=blob.media_type
            )
            for digest, (_, blob) in first.items()
            if digest not in known
        ],
        ignore_conflicts=True,
    )
    AttachmentUse.objects.bulk_create(
        [
            AttachmentUse(conversation_id=conversation_id, attachment_id=digest, seq=seq)
            for digest, (seq, _) in first.items()
        ],
        ignore_conflicts=True,
    )


def digests_in(value: Any) -> set[str]:
    """The sha256 of every attachment a stored payload references, wherever it sits."""
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            reference = reference_of(item)
            if reference is not None:
                found.add(reference["sha256"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def release_unreferenced(conversation_id: Any) -> None:
    """After an erasure (docs/auditing.md#erasing-content): the conversation stops
    holding the attachments its log no longer references, and bytes that no
    conversation holds any more are deleted. In the erasure's transaction."""
    held: set[str] = set()
    payloads = Event.objects.filter(conversation_id=conversation_id).values_list(
        "payload", flat=True
    )
    for payload in payloads.iterator():
        held |= digests_in(payload)
    released = AttachmentUse.objects.filter(conversation_id=conversation_id).exclude(
        attachment_id__in=held
    )
    digests = list(released.values_list("attachment_id", flat=True))
    released.delete()
    Attachment.objects.filter(sha256__in=digests, uses__isnull=True).delete()


# -- a deleted conversation lets go of its attachments -------------------------------


def note_held_attachments(sender: Any, instance: Any, **kwargs: Any) -> None:
    """Before a conversation is deleted: the digests it holds (its `AttachmentUse` rows
    go with it, by cascade, before `forget_unheld_attachments` runs)."""
    instance.chatui_held_attachments = list(
        AttachmentUse.objects.filter(conversation_id=instance.pk).values_list(
            "attachment_id", flat=True
        )
    )


def forget_unheld_attachments(sender: Any, instance: Any, **kwargs: Any) -> None:
    """After a conversation is deleted (the admin, a user's deletion): bytes no other
    conversation holds are deleted with it, in the same transaction, as an erasure's are
    (`release_unreferenced`). Bytes another conversation holds stay."""
    digests = getattr(instance, "chatui_held_attachments", None)
    if digests:
        Attachment.objects.filter(sha256__in=digests, uses__isnull=True).delete()


pre_delete.connect(
    note_held_attachments, sender=Conversation, dispatch_uid="chatui.attachments.note_held"
)
post_delete.connect(
    forget_unheld_attachments, sender=Conversation, dispatch_uid="chatui.attachments.forget"
)
