"""chatui-verify FILE --key KEY: an events export checked offline
(docs/auditing.md#verifying-an-export).

    chatui-verify conversation.events.jsonl --key "chatui.example.org+1a2b3c4d+AQ…"
    chatui-verify conversation.events.jsonl --key key.txt   # a file holding the key

KEY is the verifier key `GET /api/v1/keys` serves (its `public_key`), or a file holding it
(that endpoint's JSON answer too). Checked, with no server and no Django:

- the events' seqs run 1, 2, 3, … with no gap;
- each event's content hash, recomputed from the line where the export carries the payload
  as stored (an unmasked export; a masked line is taken by its kept content hash);
- each chain hash from the one before (32 zero bytes before the first);
- every checkpoint's Ed25519 signature by KEY, and that the chain hash it signed is the
  exported log's at its size.

Exit status 0 when all hold (events after the last checkpoint are named: chained, not
signed), 1 at the first that does not (its seq and why), 2 for unusable input.
Needs `pip install "chatui-client[verify]"` (rfc8785 and cryptography).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROOF_KEY = "chatui_proof"
CHECKPOINT_KEY = "chatui_checkpoint"


class Failure(Exception):
    """The export does not verify: at `seq`, for `reason`."""

    def __init__(self, seq: int, reason: str) -> None:
        super().__init__(f"fails at seq {seq}: {reason}")
        self.seq = seq


@dataclass(frozen=True)
class Report:
    events: int
    recomputed: int
    signed_through: int
    signed_at: str

    def __str__(self) -> str:
        checked = f"{self.recomputed} of {self.events} content hashes recomputed from their payload"
        line = f"ok: {self.events} events, chain holds ({checked})"
        line += f"; signed through seq {self.signed_through} at {self.signed_at}"
        if self.signed_through < self.events:
            line += f"; seq {self.signed_through + 1}–{self.events} chained but not yet signed"
        return line


def read_key(given: str) -> str:
    """The verifier key from `--key`: the key itself, or a file holding it (or holding
    `/api/v1/keys`' JSON)."""
    path = Path(given)
    text = path.read_text() if "+" not in given and path.is_file() else given
    text = text.strip()
    if text.startswith("{"):
        keys = json.loads(text).get("keys") or []
        if not keys:
            raise ValueError("the key file's JSON lists no keys")
        text = keys[0]["public_key"]
    return text


def verify_lines(lines: list[str], key: str) -> Report:
    """Check an events export's lines; Failure at the first that does not hold,
    ValueError for input that is no export."""
    from .proof import (
        ERASURE_TYPE,
        Checkpoint,
        Link,
        Verifier,
        erasure_claims,
        open_note,
        walk_chain,
    )

    verifier = Verifier.parse(key)
    links: list[tuple[int, Link]] = []  # (line number, link)
    checkpoints: list[dict[str, Any]] = []
    erased: dict[int, tuple[int, str]] = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        line = json.loads(text)
        if not isinstance(line, dict):
            raise ValueError(f"line {number} is not a JSON object")
        if CHECKPOINT_KEY in line:
            checkpoints.append(line[CHECKPOINT_KEY])
            continue
        if checkpoints:
            raise ValueError(f"line {number}: an event after the checkpoints")
        proof = line.get(PROOF_KEY)
        if not isinstance(proof, dict):
            raise ValueError(f"line {number} carries no {PROOF_KEY}: not a chatui events export")
        envelope = set(proof.get("envelope", ())) | {PROOF_KEY}
        payload = {key: value for key, value in line.items() if key not in envelope}
        content = {
            "seq": proof.get("seq"),
            "type": proof.get("type"),
            "event_id": proof.get("event_id"),
            "run_id": proof.get("run_id"),
            "timestamp": proof.get("timestamp"),
            "payload": payload,
        }
        if proof.get("type") == ERASURE_TYPE and type(proof.get("seq")) is int:
            # What it erased is taken as it says; the walk checks each claim against the
            # erased event's hash, and this line against its own (docs/auditing.md#erasing-content).
            erased.update(erasure_claims(proof["seq"], payload))
        link = Link(
            proof.get("seq"),
            None if proof.get("masked") else content,
            proof.get("content_hash"),
            proof.get("chain_hash"),
        )
        links.append((number, link))

    def missing(seq: int, link: Link) -> str:
        number = links[seq - 1][0]
        return f"event {seq} is missing (line {number} says {link.seq})"

    walk = walk_chain((link for _, link in links), erased=erased, missing=missing)
    if not walk.ok:
        raise Failure(walk.failed_at or 0, walk.reason)
    seq, recomputed, chain_at = walk.through, walk.recomputed, walk.chain_at or {}
    if not checkpoints:
        raise Failure(seq, "no signed checkpoint in the export: nothing vouches for the chain")
    signed_through, signed_at, conversation = 0, "", None
    for checkpoint in checkpoints:
        size = checkpoint.get("size") if isinstance(checkpoint, dict) else None
        try:
            signed = Checkpoint.parse(open_note(str(checkpoint.get("note")), verifier))
        except (ValueError, AttributeError) as problem:
            raise Failure(
                size or 0, f"its checkpoint is not signed by the key: {problem}"
            ) from None
        if conversation is None:
            conversation = signed.conversation_id
        if signed.conversation_id != conversation:
            raise Failure(signed.size, "a checkpoint of another conversation")
        if signed.size > seq:
            raise Failure(seq + 1, f"missing: a checkpoint was signed through seq {signed.size}")
        if chain_at.get(signed.size) != signed.chain_hash:
            raise Failure(signed.size, "the log differs from what was signed at this seq")
        signed_through, signed_at = max(signed_through, signed.size), signed.time
    return Report(seq, recomputed, signed_through, signed_at)


def parser() -> argparse.ArgumentParser:
    described = argparse.ArgumentParser(
        prog="chatui-verify",
        description="Verify a chatui events export offline: its hash chain and signed checkpoints.",
    )
    described.add_argument("file", help="the events export (JSONL), or - for standard input")
    described.add_argument(
        "--key", required=True, help="the verifier key (GET /api/v1/keys), or a file holding it"
    )
    return described


def main(argv: list[str] | None = None) -> int:
    options = parser().parse_args(argv)
    try:
        import cryptography  # noqa: F401
        import rfc8785  # noqa: F401
    except ImportError:
        print(
            'chatui-verify: needs rfc8785 and cryptography: pip install "chatui-client[verify]"',
            file=sys.stderr,
        )
        return 2
    try:
        key = read_key(options.key)
        if options.file == "-":
            text = sys.stdin.read()
        else:
            text = Path(options.file).read_text(encoding="utf-8")
        report = verify_lines(text.split("\n"), key)
    except Failure as failure:
        print(f"chatui-verify: {failure}", file=sys.stderr)
        return 1
    except (OSError, ValueError, KeyError) as problem:
        print(f"chatui-verify: {problem}", file=sys.stderr)
        return 2
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
