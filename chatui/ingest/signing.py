"""The Ed25519 key that signs checkpoints, kept in a file, never in the database
(docs/auditing.md#the-signing-key).

`CHATUI_SIGNING_KEY_FILE` holds it in C2SP's signer-key text form
(`PRIVATE+KEY+name+hash+base64(0x01 ‖ seed)`, as Go's golang.org/x/mod/sumdb/note writes
it), so the key's name (the checkpoints' origin) stays with the key. Absent, it is made
once, mode 0600, named after `CHATUI_PUBLIC_URL`'s host. Read once per process.
"""

from __future__ import annotations

import base64
import os
import threading
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

from chatui_client.proof import ED25519, Signer, key_hash
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings

PREFIX = "PRIVATE+KEY+"
_MAKING = threading.Lock()


def key_file() -> Path:
    return Path(settings.CHATUI_SIGNING_KEY_FILE)


def default_name() -> str:
    """The origin a new key is named after: the deployment's public host."""
    host = urlsplit(settings.CHATUI_PUBLIC_URL).netloc
    return host.replace("+", "-") or "chatui"


@cache
def signer() -> Signer:
    """This deployment's signing key, made on first use. OSError when the file cannot be
    read or made, ValueError when it holds no key."""
    path = key_file()
    with _MAKING:
        if not path.exists():
            _make(path, default_name())
    return parse(path.read_text())


def verifier_key() -> str:
    return signer().verifier_key


def parse(text: str) -> Signer:
    parts = text.strip().split("+", 4)  # base64 may hold "+"
    if len(parts) != 5 or "+".join(parts[:2]) + "+" != PREFIX:
        raise ValueError("the signing key file does not hold a PRIVATE+KEY+… signer key")
    name, hex_id, encoded = parts[2:]
    raw = base64.b64decode(encoded, validate=True)
    if len(raw) != 33 or raw[:1] != ED25519:
        raise ValueError("the signing key is not an Ed25519 key")
    key = Ed25519PrivateKey.from_private_bytes(raw[1:])
    made = Signer(name, key)
    if bytes.fromhex(hex_id) != made.key_id:
        raise ValueError("the signing key's hash does not match its name and key")
    return made


def _make(path: Path, name: str) -> None:
    key = Ed25519PrivateKey.generate()
    seed = key.private_bytes_raw()
    public = key.public_key().public_bytes_raw()
    encoded = base64.b64encode(ED25519 + seed).decode()
    text = f"{PREFIX}{name}+{key_hash(name, public).hex()}+{encoded}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = path.with_name(f"{path.name}.{os.getpid()}")
    # Created with mode 0600, written, then moved into place: no reader sees half a key,
    # and another process that made one first keeps its own (link fails if it exists).
    descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    try:
        os.link(fresh, path)
    except FileExistsError:
        pass
    finally:
        fresh.unlink()
