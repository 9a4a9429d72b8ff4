"""A minimal asyncio WebSocket client (RFC 6455) for tests and benchmarks against daphne.

Enough for a viewer (text frames, ping/pong, close codes) and for a hostile client
(large or many frames, text or binary, a frame header announcing more than it sends),
with no package beyond what the project installs.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import struct

TEXT, BINARY, CLOSE, PING, PONG = 0x1, 0x2, 0x8, 0x9, 0xA


class WebSocketClosed(Exception):
    """The server sent a close frame; `code` is its close code."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def mask(payload: bytes, key: bytes) -> bytes:
    """XOR with the 4-byte key, as one big-integer operation (fast for MiBs)."""
    if not payload:
        return payload
    size = len(payload)
    repeated = (key * (size // 4 + 1))[:size]
    masked = int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")
    return masked.to_bytes(size, "big")


def frame_header(opcode: int, length: int, *, fin: bool = True) -> bytes:
    """A client frame's header up to (not including) the masking key."""
    first = (0x80 if fin else 0) | opcode
    if length < 126:
        return struct.pack("!BB", first, 0x80 | length)
    if length < 65536:
        return struct.pack("!BBH", first, 0x80 | 126, length)
    return struct.pack("!BBQ", first, 0x80 | 127, length)


def client_frame(opcode: int, payload: bytes) -> bytes:
    """One complete, masked client frame (clients must mask, RFC 6455 §5.3)."""
    key = os.urandom(4)
    return frame_header(opcode, len(payload)) + key + mask(payload, key)


class RawWebSocket:
    """Client side of RFC 6455 over asyncio streams."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader = reader
        self.writer = writer
        self.close_code: int | None = None
        self.frames = 0
        self.bytes = 0

    @classmethod
    async def connect(
        cls, port: int, path: str, *, cookie: str, origin: str, timeout: float = 30
    ) -> RawWebSocket:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, limit=2**24), timeout
        )
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {path} HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{port}\r\n"
            "Upgrade: websocket\r\n"
            "Connection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n"
            f"Origin: {origin}\r\n"
            f"Cookie: {cookie}\r\n\r\n"
        )
        writer.write(request.encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status + b" ":
            writer.close()
            raise ConnectionError(f"handshake refused: {status.decode(errors='replace')}")
        return cls(reader, writer)

    async def recv(self) -> str:
        """The next text message; answers pings; raises WebSocketClosed on a close frame
        (asyncio.IncompleteReadError when the server dropped the connection instead)."""
        message = b""
        while True:
            head = await self.reader.readexactly(2)
            fin, opcode = head[0] & 0x80, head[0] & 0x0F
            length = head[1] & 0x7F
            if length == 126:
                (length,) = struct.unpack("!H", await self.reader.readexactly(2))
            elif length == 127:
                (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
            if head[1] & 0x80:  # servers never mask, but be lenient
                key = await self.reader.readexactly(4)
                data = mask(await self.reader.readexactly(length), key)
            else:
                data = await self.reader.readexactly(length) if length else b""
            if opcode == PING:
                await self.send_frame(PONG, data)
                continue
            if opcode == PONG:
                continue
            if opcode == CLOSE:
                self.close_code = struct.unpack("!H", data[:2])[0] if len(data) >= 2 else 1005
                with contextlib.suppress(Exception):
                    await self.send_frame(CLOSE, data[:2])
                raise WebSocketClosed(self.close_code)
            message += data
            if fin:
                self.frames += 1
                self.bytes += len(message)
                return message.decode("utf-8", errors="replace")

    async def send_frame(self, opcode: int, payload: bytes) -> None:
        await self.send_raw(client_frame(opcode, payload))

    async def send_text(self, text: str) -> None:
        await self.send_frame(TEXT, text.encode())

    async def send_binary(self, data: bytes) -> None:
        await self.send_frame(BINARY, data)

    async def send_raw(self, data: bytes) -> None:
        """Bytes as they are: many prepared frames at once, or a partial frame."""
        self.writer.write(data)
        await self.writer.drain()

    async def close(self, code: int = 1000) -> None:
        with contextlib.suppress(Exception):
            await self.send_frame(CLOSE, struct.pack("!H", code))
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._drain_until_close(), 2)
        self.abort()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()

    def abort(self) -> None:
        """Drop the connection without a closing handshake."""
        self.writer.close()

    async def _drain_until_close(self) -> None:
        with contextlib.suppress(WebSocketClosed, asyncio.IncompleteReadError, ConnectionError):
            while True:
                await self.recv()


async def read_forever(ws: RawWebSocket) -> None:
    """Keep a viewer's socket drained (frames counted on `ws`) until it closes."""
    with contextlib.suppress(WebSocketClosed, asyncio.IncompleteReadError, ConnectionError):
        while True:
            await ws.recv()
