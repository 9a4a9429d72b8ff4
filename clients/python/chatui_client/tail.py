"""``chatui-tail PATH``: follow a Claude Code or Codex session file into chatui, live
(docs/events.md#sessions).

PATH is a session file, or a folder: then its newest session (``*.jsonl`` anywhere under
it, sub-agents' own ``agent-*.jsonl`` files aside), and the tail moves on to a newer one
when it appears. Each session becomes one conversation, titled by its first prompt. The
files newer Claude Code versions write a session's sub-agents to
(``<session>/subagents/agent-*.jsonl``) are followed with it, into the same conversation:
their records nest under the Task call that ran them.

The tail posts the file's complete lines as they are to ``POST …/events`` as
``{"dialect", "records", "state"}``; the server translates them — with the very translator
``import_transcript --format claude-code|codex`` uses — and answers with the translator's
``state`` for the next request. Event ids derive from the records' own ids, so nothing is
stored twice: after a restart the tail resumes from the offset it saved (its state file),
and even a tail that lost its state file re-sends only duplicates.

Configuration: ``CHATUI_URL`` and ``CHATUI_TOKEN`` (or ``--url`` / ``--token``), as for the
client. It needs only httpx and the standard library.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import ChatuiClient, ChatuiError

DIALECTS = ("claude-code", "codex")
#: Records per request, and bytes: well under the server's request limit (8 MiB).
MAX_RECORDS = 200
MAX_BATCH_BYTES = 2 * 1024 * 1024
#: Codex's rollout records are {timestamp, type, payload} of these types.
CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context"})


def default_state_file() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(base) / "chatui-tail" / "state.json"


def guess_dialect(path: Path) -> str:
    """Codex's files are `rollout-*.jsonl` of {type, payload} records; else Claude Code's."""
    if path.name.startswith("rollout-") or ".codex" in path.parts:
        return "codex"
    try:
        with path.open("rb") as handle:
            for line in handle:
                if line.strip():
                    record = json.loads(line)
                    if isinstance(record, dict) and record.get("type") in CODEX_TYPES:
                        return "codex"
                    break
    except (OSError, ValueError, RecursionError):
        pass
    return "claude-code"


def newest_session(folder: Path) -> Path | None:
    """The folder's most recently written session file."""
    newest: tuple[float, str] | None = None
    found = None
    for path in folder.rglob("*.jsonl"):
        if path.name.startswith("agent-") or "subagents" in path.parts:
            continue  # a sub-agent's own file: its records are its session's
        try:
            key = (path.stat().st_mtime, str(path))
        except OSError:
            continue
        if newest is None or key > newest:
            newest, found = key, path
    return found


@dataclass
class Session:
    """One session being followed: where it is in its file (and in its sub-agents' files)
    and in chatui."""

    path: Path
    dialect: str
    conversation: str = ""
    offset: int = 0
    state: dict[str, Any] = field(default_factory=dict)
    #: Claude Code's sub-agent files (`<session>/subagents/agent-*.jsonl`): name -> offset.
    sub_offsets: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "dialect": self.dialect,
            "conversation": self.conversation,
            "offset": self.offset,
            "state": self.state,
            "sub_offsets": self.sub_offsets,
        }

    def files(self) -> list[tuple[Path, int]]:
        """The session's files and where the tail is in each: the session file first,
        then the files Claude Code writes its sub-agents' records to, oldest first."""
        found = [(self.path, self.offset)]
        folder = self.path.with_suffix("") / "subagents"
        if self.dialect == "claude-code" and folder.is_dir():
            subs = sorted(folder.rglob("agent-*.jsonl"), key=_modified)
            found += [(sub, self.sub_offsets.get(str(sub.relative_to(folder)), 0)) for sub in subs]
        return found

    def moved(self, path: Path, offset: int) -> None:
        if path == self.path:
            self.offset = offset
        else:
            folder = self.path.with_suffix("") / "subagents"
            self.sub_offsets[str(path.relative_to(folder))] = offset


def _modified(path: Path) -> tuple[float, str]:
    try:
        return path.stat().st_mtime, str(path)
    except OSError:
        return 0.0, str(path)


class StateFile:
    """Where each followed file got to (offset, conversation, translator state), per server."""

    def __init__(self, path: Path, url: str):
        self.path = path
        self.url = url
        try:
            self.data = json.loads(path.read_text())
        except (OSError, ValueError):
            self.data = {}
        if not isinstance(self.data, dict):
            self.data = {}

    def _key(self, session: Path) -> str:
        return f"{self.url} {session.resolve()}"

    def load(self, path: Path, dialect: str) -> Session:
        saved = self.data.get(self._key(path))
        session = Session(path, dialect)
        if isinstance(saved, dict) and saved.get("dialect") == dialect:
            session.conversation = str(saved.get("conversation") or "")
            session.offset = int(saved.get("offset") or 0)
            session.state = saved.get("state") if isinstance(saved.get("state"), dict) else {}
            subs = saved.get("sub_offsets")
            if isinstance(subs, dict):
                session.sub_offsets = {
                    str(k): int(v) for k, v in subs.items() if isinstance(v, int)
                }
        return session

    def save(self, session: Session) -> None:
        self.data[self._key(session.path)] = session.as_dict()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.data))
        os.replace(temporary, self.path)  # never a half-written state file


class Tail:
    def __init__(self, client: ChatuiClient, states: StateFile, options: argparse.Namespace):
        self.client = client
        self.states = states
        self.options = options
        self.stopping = False

    def log(self, text: str) -> None:
        print(f"chatui-tail: {text}", file=sys.stderr, flush=True)

    def open(self, path: Path) -> Session:
        dialect = self.options.format or guess_dialect(path)
        session = self.states.load(path, dialect)
        if self.options.conversation:
            session.conversation = self.options.conversation
        if not session.conversation:
            session.conversation = self.client.create_conversation(self.options.title)["id"]
            self.states.save(session)
        self.log(f"following {path} ({dialect}) → {self.client.web_url(session.conversation)}")
        return session

    def pending_lines(self, path: Path, offset: int) -> tuple[int, list[tuple[int, Any]]]:
        """(where reading starts, [(offset after the line, record)]) for each complete line
        of `path` after `offset`; a line that is not a JSON object gives None (it is
        reported and passed over). A file shorter than `offset` was replaced: read whole."""
        try:
            size = path.stat().st_size
        except OSError:
            return offset, []
        if size < offset:
            self.log(f"{path} shrank; reading it from the start")
            offset = 0
        if size == offset:
            return offset, []
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read(min(size - offset, 64 * 1024 * 1024))
        lines = []
        position = offset
        for raw in data.split(b"\n")[:-1]:  # the last piece has no newline yet: not complete
            position += len(raw) + 1
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except (ValueError, RecursionError):
                record = None
            lines.append((position, record if isinstance(record, dict) else None))
        return offset, lines

    def send(self, session: Session, *, end: bool = False) -> int:
        """Post what the session's files hold past their saved offsets (the session file
        first, then its sub-agents'); the number of records sent. `end`: then end it."""
        sent = 0
        for path, offset in session.files():
            sent += self._send_file(session, path, offset)
        if end:
            answer = self._post(session, [], True)
            if answer is not None:
                session.state = answer.get("state") or {}
                self.states.save(session)
        return sent

    def _send_file(self, session: Session, path: Path, offset: int) -> int:
        sent = 0
        offset, lines = self.pending_lines(path, offset)
        while lines:
            batch: list[dict[str, Any]] = []
            size = 0
            while lines and len(batch) < MAX_RECORDS:
                position, record = lines[0]
                if record is None:
                    self.log(f"{path}: a line before byte {position} is not a JSON object")
                else:
                    encoded = len(json.dumps(record))
                    if batch and size + encoded > MAX_BATCH_BYTES:
                        break
                    batch.append(record)
                    size += encoded
                offset = position
                lines.pop(0)
            if batch:
                answer = self._post(session, batch, False)
                if answer is None:
                    batch = []  # refused: passed over, reported
                else:
                    session.state = answer.get("state") or {}
            # Saved only once the server stored the batch: a crash re-sends it (duplicates).
            session.moved(path, offset)
            self.states.save(session)
            sent += len(batch)
        return sent

    def _post(
        self, session: Session, batch: list[dict[str, Any]], end: bool
    ) -> dict[str, Any] | None:
        try:
            return self.client.post_records(
                session.conversation, session.dialect, batch, state=session.state, end=end
            )
        except ChatuiError as error:
            if error.status is None or error.status >= 500 or error.status in (401, 404):
                raise  # the server is gone, or this conversation: nothing to pass over
            self.log(f"the server refused {len(batch)} record(s): {error}")
            return None

    def run(self) -> int:
        path = Path(self.options.path).expanduser()
        folder = path if path.is_dir() else None
        current = newest_session(folder) if folder else path
        while current is None and not self.stopping:  # an empty folder: wait for a session
            if self.options.once:
                self.log(f"no session file in {folder}")
                return 1
            time.sleep(self.options.interval)
            current = newest_session(folder) if folder else None
        if current is None:
            return 0
        session = self.open(current)
        while not self.stopping:
            sent = self.send(session)
            if sent:
                self.log(f"{sent} record(s) from {session.path.name}")
            if folder is not None:
                newer = newest_session(folder)
                if newer is not None and newer != session.path:
                    self.send(session, end=True)  # its last run ends
                    session = self.open(newer)
                    continue
            if self.options.once:
                if self.options.end:
                    self.send(session, end=True)
                break
            if not sent:
                time.sleep(self.options.interval)
        return 0


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(
        prog="chatui-tail",
        description="Follow a Claude Code or Codex session file into chatui, live.",
    )
    parse.add_argument("path", help="a session file (.jsonl), or a folder: its newest session")
    parse.add_argument("--format", choices=DIALECTS, help="default: guessed from the file")
    parse.add_argument("--url", help="chatui's URL (default: $CHATUI_URL)")
    parse.add_argument("--token", help="an API token (default: $CHATUI_TOKEN)")
    parse.add_argument("--conversation", help="post into this conversation, not a new one")
    parse.add_argument("--title", default="", help="a new conversation's title")
    parse.add_argument(
        "--state",
        type=Path,
        default=None,
        help="where the tail saves its place (default: $XDG_STATE_HOME/chatui-tail/state.json)",
    )
    parse.add_argument("--interval", type=float, default=0.5, help="seconds between looks")
    parse.add_argument("--once", action="store_true", help="send what is there, then stop")
    parse.add_argument("--end", action="store_true", help="with --once: the session is over")
    return parse


def main(argv: list[str] | None = None) -> int:
    options = parser().parse_args(argv)
    try:
        client = ChatuiClient(options.url, options.token)
    except ValueError as error:
        print(f"chatui-tail: {error}", file=sys.stderr)
        return 2
    tail = Tail(client, StateFile(options.state or default_state_file(), client.url), options)

    def stop(signum: int, frame: Any) -> None:
        tail.stopping = True

    signal.signal(signal.SIGTERM, stop)
    try:
        return tail.run()
    except KeyboardInterrupt:
        return 0
    except ChatuiError as error:
        print(f"chatui-tail: {error}", file=sys.stderr)
        return 1
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
