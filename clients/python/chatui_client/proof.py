"""The verifiable log's arithmetic (docs/auditing.md#verifying-a-log), without Django.

chatui's server and `chatui-verify` share this one module, so what ingest writes and
what an auditor checks offline are the same definitions:

- an event's **content hash**: SHA-256 of the RFC 8785 (JSON Canonicalization Scheme)
  form of the event as the events API serves it, `{seq, type, event_id, run_id,
  timestamp, payload}`;
- its **chain hash**: SHA-256(previous chain hash ‖ content hash), over the raw 32-byte
  digests, with 32 zero bytes before a conversation's first event;
- **checkpoints**: C2SP signed notes (https://c2sp.org/signed-note) over the text
  `origin / conversation id / size / chain hash / time`, signed with Ed25519.

Needs `rfc8785` and `cryptography` (`pip install "chatui-client[verify]"`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

#: Before a conversation's first event.
GENESIS = bytes(32)
#: C2SP signed-note's signature type byte for Ed25519.
ED25519 = b"\x01"
#: The signature line's prefix: an em dash and a space.
SIGNATURE_PREFIX = "\u2014 "
# RFC 8785 leaves integers beyond an IEEE 754 double's exact range undefined; chatui writes
# them in full decimal digits, as JSON itself does (docs/auditing.md#the-canonical-form).
_SAFE_INT = 2**53 - 1


# -- the canonical form ----------------------------------------------------------------


def canonical(value: Any, *, payload_text: str | None = None) -> bytes:
    """RFC 8785's canonical form of decoded JSON, as UTF-8 bytes.

    Python's own C encoder with sorted keys and no white space writes exactly RFC 8785's
    bytes (the same escapes, integers as digits, most floats) unless the value holds a
    float with an exponent or none after its point (RFC 8785 writes numbers as ECMAScript
    does) or a key beyond U+E000 (RFC 8785 sorts keys by UTF-16 code unit, Python by code
    point). Nearly every event holds neither, and ingest hashes every event
    (docs/PERFORMANCE.md#p9): those are written by the C encoder, the rest by `rfc8785`,
    the reference. tests/ingest/test_chain.py checks the two agree on generated JSON.

    `payload_text`: the encoder's text of `value["payload"]` when the caller has it (an
    OTLP span's, written once for its body hash and column, docs/PERFORMANCE.md#p8),
    spliced in rather than encoded again. The members around it are scalars, so
    `"payload":null` occurs once in their text, as the member itself: inside a string
    its quotes would be escaped."""
    if payload_text is None:
        text = _ENCODER.encode(value)
    else:
        head = _ENCODER.encode({**value, "payload": None})
        text = head.replace('"payload":null', '"payload":' + payload_text, 1)
    if _writes_a_differing_float(text) or (
        not text.isascii() and max(text) >= "\ue000" and not _keys_sort_alike(value)
    ):
        return _rfc8785(value)
    return text.encode()


def _writes_a_differing_float(text: str) -> bool:
    """Whether the encoder's `text` may hold a float RFC 8785 writes otherwise (then the
    slower way is taken): integral ("2.0", "-0.0") or with an exponent ("1e+16",
    "1.5e-07": Python writes a lower-case "e" and a sign), each a whole token, so before
    ",", "}", "]" or the end. Any other float is written alike: `rfc8785` formats
    str(float) and changes only those. Text in a string may look the same ("v2.0]",
    "see-1]"): that only costs the slower way.

    Each expression begins with a character that is rare in JSON text (".", "+", "-"),
    which `re` finds by a quick scan; "e", common in any text, is looked for only
    before a match: ~7 µs on an OTLP span's ~5 KB, against ~18 µs when "e+", "e-" and
    ".0" were searched as substrings and then by expressions (docs/PERFORMANCE.md#p8)."""
    if _INTEGRAL_FLOAT.search(text) is not None:
        return True
    if "+" in text and _POSITIVE_EXPONENT.search(text) is not None:
        return True
    return any(text[match.start() - 1] == "e" for match in _SIGNED_DIGITS.finditer(text, 1))


_INTEGRAL_FLOAT = re.compile(r"\.0(?=[,}\]]|$)")
_POSITIVE_EXPONENT = re.compile(r"e\+\d+(?=[,}\]]|$)")
# A negative number's digits or a negative exponent's: the character before tells.
_SIGNED_DIGITS = re.compile(r"-\d+(?=[,}\]]|$)")
_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def _keys_sort_alike(value: Any) -> bool:
    """Every key sorts the same by code point as by UTF-16 code unit (none beyond U+E000)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            for key, child in item.items():
                if not key.isascii() and max(key) >= "\ue000":
                    return False
                stack.append(child)
        elif type(item) is list:
            stack.extend(item)
    return True


def _rfc8785(value: Any) -> bytes:
    """rfc8785's bytes, with integers beyond ±(2**53 − 1) (which it refuses) written as
    their digits: each is first swapped for a string no event holds (a random nonce),
    then the quoted string for the digits."""
    nonce = secrets.token_hex(16)
    digits: list[bytes] = []

    def swap(item: Any) -> Any:
        if type(item) is dict:
            return {key: swap(child) for key, child in item.items()}
        if type(item) is list:
            return [swap(child) for child in item]
        if type(item) is int and not -_SAFE_INT <= item <= _SAFE_INT:
            digits.append(str(item).encode())
            return f"{nonce}:{len(digits) - 1}"
        return item

    text = rfc8785.dumps(swap(value))
    for index, number in enumerate(digits):
        text = text.replace(f'"{nonce}:{index}"'.encode(), number, 1)
    return text


def content_hash(content: dict[str, Any], *, payload_text: str | None = None) -> bytes:
    """SHA-256 of an event's canonical form (`content`: as the events API serves it;
    `payload_text` as `canonical` takes it)."""
    return hashlib.sha256(canonical(content, payload_text=payload_text)).digest()


def chain_hash(previous: bytes, content: bytes) -> bytes:
    return hashlib.sha256(previous + content).digest()


# -- signed notes (C2SP signed-note, Ed25519) -----------------------------------------


def key_hash(name: str, public_key: bytes) -> bytes:
    """The 4 bytes that tie a signature line to its key: SHA-256(name ‖ \\n ‖ 0x01 ‖ key)."""
    return hashlib.sha256(name.encode() + b"\n" + ED25519 + public_key).digest()[:4]


def _check_name(name: str) -> str:
    if not name or any(c.isspace() or c == "+" for c in name) or not name.isprintable():
        raise ValueError(f"a key name must be printable, without spaces or '+': {name!r}")
    return name


def verifier_key(name: str, public_key: bytes) -> str:
    """C2SP's verifier key text: `name+hash+base64(0x01 ‖ public key)`."""
    _check_name(name)
    encoded = base64.b64encode(ED25519 + public_key).decode()
    return f"{name}+{key_hash(name, public_key).hex()}+{encoded}"


@dataclass(frozen=True)
class Verifier:
    name: str
    key_id: bytes
    public_key: Ed25519PublicKey

    @classmethod
    def parse(cls, text: str) -> Verifier:
        """A verifier key as `/api/v1/keys` serves it; ValueError naming what is wrong."""
        parts = text.strip().split("+", 2)  # base64 may hold "+"
        if len(parts) != 3:
            raise ValueError("a verifier key has three parts: name+hash+key")
        name, hex_id, encoded = parts
        _check_name(name)
        try:
            raw = base64.b64decode(encoded, validate=True)
            key_id = bytes.fromhex(hex_id)
        except ValueError:
            raise ValueError("the verifier key's hash or key is not valid hex / base64") from None
        if len(raw) != 33 or raw[:1] != ED25519:
            raise ValueError("the verifier key is not an Ed25519 key (type 0x01, 32 bytes)")
        if key_id != key_hash(name, raw[1:]):
            raise ValueError("the verifier key's hash does not match its name and key")
        return cls(name, key_id, Ed25519PublicKey.from_public_bytes(raw[1:]))


class Signer:
    """An Ed25519 key with its C2SP name."""

    def __init__(self, name: str, private_key: Ed25519PrivateKey) -> None:
        self.name = _check_name(name)
        self.private_key = private_key
        self.public_key = private_key.public_key().public_bytes_raw()
        self.key_id = key_hash(name, self.public_key)

    @property
    def verifier_key(self) -> str:
        return verifier_key(self.name, self.public_key)

    def sign(self, text: str) -> str:
        """`text` (lines, ending in a newline) as a signed note."""
        if not text.endswith("\n") or "\n\n" in text:
            raise ValueError("a note's text ends with a newline and has no blank line")
        signature = self.private_key.sign(text.encode())
        encoded = base64.b64encode(self.key_id + signature).decode()
        return f"{text}\n{SIGNATURE_PREFIX}{self.name} {encoded}\n"


def open_note(note: str, verifier: Verifier) -> str:
    """The text of a signed note whose signature by `verifier` holds; ValueError if none."""
    text, separator, signatures = note.rpartition("\n\n")
    if not separator:
        raise ValueError("not a signed note: no blank line before the signatures")
    text += "\n"
    for line in signatures.splitlines():
        if not line.startswith(SIGNATURE_PREFIX):
            raise ValueError(f"not a signature line: {line[:60]!r}")
        name, _, encoded = line[len(SIGNATURE_PREFIX) :].partition(" ")
        try:
            raw = base64.b64decode(encoded, validate=True)
        except ValueError:
            raise ValueError("a signature is not valid base64") from None
        if name != verifier.name or raw[:4] != verifier.key_id:
            continue  # another key's signature
        try:
            verifier.public_key.verify(raw[4:], text.encode())
        except InvalidSignature:
            raise ValueError(f"the signature by {name} does not hold") from None
        return text
    raise ValueError(f"no signature by the key {verifier.name}")


# -- checkpoints ------------------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    conversation_id: str
    size: int
    chain_hash: str
    time: str

    def text(self) -> str:
        return (
            f"{self.origin}\nconversation {self.conversation_id}\nsize {self.size}\n"
            f"chain {self.chain_hash}\ntime {self.time}\n"
        )

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        lines = text.splitlines()
        if len(lines) != 5:
            raise ValueError("a checkpoint has five lines")
        fields = {}
        for line, name in zip(lines[1:], ("conversation", "size", "chain", "time"), strict=True):
            label, _, value = line.partition(" ")
            if label != name or not value:
                raise ValueError(f"a checkpoint's line should be '{name} …': {line[:60]!r}")
            fields[name] = value
        if not fields["size"].isdigit():
            raise ValueError("a checkpoint's size is not a number")
        return cls(
            lines[0], fields["conversation"], int(fields["size"]), fields["chain"], fields["time"]
        )


# -- walking a chain --------------------------------------------------------------------

#: The type of the event that records an erasure (docs/auditing.md#erasing-content), and
#: its payload's list of what it erased: `[{"seq", "content_hash"}, …]`.
ERASURE_TYPE = "audit.erasure"
ERASED_KEY = "erased"


@dataclass(frozen=True)
class Link:
    """One event as a chain walker sees it: its seq as stored (or exported), its
    canonical content to recompute the content hash from (None: taken by its kept hash,
    as for a masked line), and its stored hashes, hex."""

    seq: Any
    content: dict[str, Any] | None
    content_hash: Any
    chain_hash: Any


@dataclass
class Walk:
    #: The last seq whose chain holds (0: none).
    through: int
    #: The first seq that fails, with why; None when every link holds.
    failed_at: int | None = None
    reason: str = ""
    #: Content hashes recomputed from their content (not masked, not erased).
    recomputed: int = 0
    #: seq -> chain hash (hex), for the seqs asked for (`keep`).
    chain_at: dict[int, str] | None = None

    @property
    def ok(self) -> bool:
        return self.failed_at is None


def erasure_claims(seq: int, payload: Any) -> dict[int, tuple[int, str]]:
    """What an `audit.erasure` event at `seq` erased: erased seq -> (seq, its content
    hash as the erasure recorded it). Anything malformed claims nothing (and so erases
    nothing: the events stay checked by their content)."""
    listed = payload.get(ERASED_KEY) if isinstance(payload, dict) else None
    claims: dict[int, tuple[int, str]] = {}
    for item in listed if isinstance(listed, list) else ():
        if isinstance(item, dict) and type(item.get("seq")) is int and item["seq"] < seq:
            claims[item["seq"]] = (seq, str(item.get("content_hash")))
    return claims


def walk_chain(
    links: Iterable[Link],
    *,
    erased: Mapping[int, tuple[int, str]] | None = None,
    keep: Callable[[int], bool] | None = None,
    missing: Callable[[int, Link], str] | None = None,
    after: int = 0,
    previous_hex: str = "",
) -> Walk:
    """Check a conversation's chain, in seq order from 1 (docs/auditing.md#verifying-a-log):
    no seq missing, each content hash recomputed from its content where it is given, each
    chain hash from the one before. `verify_log` (database rows) and `chatui-verify`
    (export lines) both walk with this.

    `erased`: what the log's `audit.erasure` events erased (`erasure_claims`): such an
    event's content is a tombstone, so its content hash is taken as kept — when it is the
    one its erasure recorded (else its content is checked as any event's: a log imported
    with its tombstones hashed them as they are), and only while that erasure itself is
    within what holds.
    `keep(seq)`: remember the chain hash there (the checkpoints' sizes). `missing`: the
    reason when a seq is not where it should be. `after`, `previous_hex`: the links
    continue a chain already checked through seq `after`, whose chain hash there is
    `previous_hex` (the admin's verdict, from where it last held)."""
    erased = erased or {}
    chain_at: dict[int, str] = {}
    previous, seq, recomputed = bytes.fromhex(previous_hex) if after else GENESIS, after, 0

    def failed(at: int, reason: str) -> Walk:
        # An event let through as erased by an erasure at or after the failure was let
        # through by something that does not hold: what holds ends before it.
        relied = [k for k, (by, _) in erased.items() if after < k < at and by >= at]
        return Walk(min([at, *relied]) - 1, at, reason, recomputed, chain_at)

    for link in links:
        seq += 1
        if link.seq != seq:
            return failed(
                seq, missing(seq, link) if missing else "this event is missing from the log"
            )
        try:
            stored = bytes.fromhex(link.content_hash)
        except (TypeError, ValueError):
            return failed(seq, "its content hash is missing or not hex")
        if len(stored) != 32:
            return failed(seq, "its content hash is missing or not hex")
        claim = erased.get(seq)
        if claim is not None and claim[1] == link.content_hash:
            pass  # erased: its tombstone is not what was hashed
        elif link.content is not None:
            if content_hash(link.content) != stored:
                return failed(seq, "its content does not match its content hash")
            recomputed += 1
        previous = chain_hash(previous, stored)
        if previous.hex() != link.chain_hash:
            return failed(seq, "its chain hash does not follow from the event before")
        if keep is None or keep(seq):
            chain_at[seq] = link.chain_hash
    return Walk(seq, None, "", recomputed, chain_at)
