"""Messages → view objects: docs/rendering.md#render-rules's render rules as plain Python data.

Templates only display what these frozen dataclasses hold; every decision
(what is shown, how it is cut, batched, nested, titled) is made here, once, for
the first page load, the live partials and the admin alike. Nothing here builds
HTML except the sanitised Markdown of assistant text (chatui.read.markdown), and
nothing touches the database: presenters work on the Message objects given,
which must be one *contiguous* slice of a conversation ordered by position.
Each text field is typed by what its text is (chatui.read.display): a `Display` passed
to the presenting functions masks secrets (T3, always unless it reveals them) and
may transform every shown text (the admin marks invisible characters, chatui.read.reveal).

Decisions where the spec is silent (each is also noted where it is made):

- Status lines never split a tool batch. A status that falls inside a batch is
  rendered right after that batch. Ephemeral statuses (thinking, info) come and
  go during a run (S3); if they split batches, a live page and a fresh load
  after reconciliation would disagree, and G2 ("a new entry appears in the
  existing block") would break on every thinking line.
- Nested tools (G13) are not top-level entries and do not affect batching;
  failures and pending tools are counted over the whole tree.
- S1: a run's meta line sums `duration_ms` and `tokens` over all assistant
  steps of the run in the slice (shown or hidden: the hidden steps that only
  called tools cost time and tokens too) and sits under the run's last shown
  assistant message, once that message is final. Assistant messages without a
  run_id are their own run.

Why it is long: every render rule of docs/rendering.md#render-rules is decided here and nowhere
else, so the view dataclasses and the rules that fill them stay side by side; splitting them
would scatter one rule's data from its logic.
"""

from __future__ import annotations

import json
import json.encoder
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any, ClassVar

from django.conf import settings
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.safestring import SafeString

from chatui.db.internals import MAKE_ITERENCODE
from chatui.db.lru import BoundedLRU
from chatui.ingest.attachments import MCP_ERROR, error_text, is_error_result
from chatui.ingest.values import (
    MAX_ATTEMPTS,
    MAX_DURATION_MS,
    MAX_TOKENS,
    contract_number,
    details_failure,
)
from chatui.ingest.visibility import is_assistant_shown, shows_reasoning
from chatui.models import Message, Role, StatusType, ToolStatus
from chatui.secrets import mask_head
from chatui.text import (
    ELLIPSIS,
    TOOL_NAME_CHARS,
    clip,
    collapse_newlines,
    format_duration,
    format_elapsed,
    format_tokens,
    human_size,
    humanise_tool_name,
    neutralise,
    unneutralise,
)

from .cost import format_cost, run_cost
from .display import MASKED, AttrText, Display, Html, Key, Text, ToolText
from .markdown import render_markdown
from .outcomes import Outcome, outcome_of
from .rich import NOTHING, present_details, present_rich
from .rich.ansi import plain as plain_terminal_text
from .rich.views import (
    DetailsView,
    DiffView,
    KeyValueView,
    McpView,
    RecordsView,
    RichView,
    TerminalView,
)
from .windows import BATCH_WINDOW, PENDING, BatchHead

# -- limits (docs/rendering.md#g3, #g4, #g12) ------------------------------------------------
ARG_VALUE_CHARS = 250
ARGS_CHARS = 1200
INLINE_RESULT_CHARS = 80
RESULT_BLOCK_CHARS = 500
RESULT_BLOCK_LINES = 8
OUTPUT_TAIL_LINES = 8
OUTPUT_TAIL_CHARS = 1000
ERROR_CHARS = 500
KIND_VALUE_CHARS = 200
KIND_PREVIEW_LINES = 3
#: G22: the header's one-line preview of a result or error.
PREVIEW_LINE_CHARS = 120
#: A finished tool's result text longer than this (and than the page's inline bound)
#: is "long": the page shows its head and fetches the rest on demand, so only the head
#: is masked (`_shown_heads`, issue 28). Far above the inline bound (16 KiB), which no
#: such text fits however its secrets' masks shorten it.
LONG_RESULT_CHARS = 64 * 1024
#: Masked characters of a long text the page shows from: the G4 block (8 lines, 500
#: characters) and the start of the Details JSON (G8), with room for "\r\n" breaks.
SHOWN_HEAD_CHARS = 1024
# Deeper nesting than this is shown flat under the deepest level: the page and
# the recursion both stay bounded whatever parent ids a runtime sends.
MAX_NESTING_DEPTH = 6

# What a stored number shows when it is not one ingest accepts today (a row from
# before the limits of chatui.ingest.events, or written by hand): never a crash.
MALFORMED = "—"


# -- view objects -------------------------------------------------------------


class TemplateView:
    """A view the templates read. Django's template engine tries a name as a key
    first and as an attribute only when that raises: here the key is the attribute,
    which saves a raised exception per name a render reads (about 40 in a tool entry
    of a live frame, docs/PERFORMANCE.md#p2). A name the view lacks still fails as before."""

    __slots__ = ()

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)


@dataclass(frozen=True)
class MessageView(TemplateView):
    """What every message shown on its own (user, assistant, status) carries."""

    dom_id: Key
    pk: int
    message_id: Key
    timestamp: datetime
    timestamp_iso: Key
    # The time shown ("H:i") and its hover title ("Y-m-d H:i:s e"), in the active time
    # zone: formatted here, not by the template's `date` filter, which reads the active
    # language and time zone (asgiref Locals, behind one lock per Local) twice per use —
    # half a 200-message transcript's render, and worse on several threads at once
    # (docs/SCALING.md#cluster-under-fire).
    time_shown: Key
    time_title: Key
    updated_seq: int

    @staticmethod
    def fields_of(message: Message) -> dict[str, Any]:
        """The constructor arguments these fields take from `message`."""
        return {
            "dom_id": message.dom_id,
            "pk": message.pk,
            "message_id": message.message_id,
            "timestamp": message.timestamp,
            "timestamp_iso": _iso(message.timestamp),
            **shown_times(message.timestamp),
            "updated_seq": message.updated_seq,
        }


@dataclass(frozen=True)
class UserView(MessageView):
    """R1: the user's text, raw; the template escapes it and keeps line breaks."""

    kind: ClassVar[str] = "user"
    role: ClassVar[str] = "user"
    text: Text


@dataclass(frozen=True)
class AssistantView(MessageView):
    """R2/R3: sanitised Markdown; S1 meta line under the run's final shown message."""

    kind: ClassVar[str] = "assistant"
    role: ClassVar[str] = "assistant"
    html: Html
    is_streaming: bool
    meta_line: Text | None
    run_id: Key
    validation: Text | None = None  # T2: an old <validation> block, shown as its own block
    # While streaming: the raw text, shown escaped; deltas append to it
    # (docs/rendering.md#streaming-text). The Markdown is rendered once, when the message ends.
    text: Text = ""
    # R6: the model's reasoning before the answer (escaped plain text), its block's title,
    # and whether the answer's own text shows (a message may be reasoning only).
    reasoning: Text | None = None
    reasoning_title: Text = ""
    reasoning_encrypted: bool = False
    shows_text: bool = True


@dataclass(frozen=True)
class ContinuationView(TemplateView):
    should_continue: bool
    stop_reason: Text
    resolved_by: Text


@dataclass(frozen=True)
class StatusView(MessageView):
    """R5/S2: one inline status line; the flags tell the template how to draw it."""

    kind: ClassVar[str] = "status"
    role: ClassVar[str] = "status"
    status_type: Key
    text: Text
    continuation: ContinuationView | None
    is_spinner: bool  # thinking
    is_toast: bool  # info
    is_banner: bool  # error: red banner
    is_run_error: bool  # S2: carries [data-run-error]
    is_ephemeral: bool  # removed when the run ends (S3)


@dataclass(frozen=True)
class ResultView(TemplateView):
    """G4: a tool's display text, inline (`call → text`) or as a cut block."""

    text: ToolText
    inline: bool
    note: Text | None  # "… (N more lines)" / "… (truncated, 2.3 KB)"
    truncated: bool
    full_size: Text  # human-readable size of the whole text
    full_text: ToolText | None = None  # G16: the whole text, when `text` is cut
    # P3: the whole text is beyond the entry's inline bound (`_bounded`): the page
    # fetches it on demand (chatui.web.tool_text_views) and `full_text` is None.
    deferred: bool = False


@dataclass(frozen=True)
class KindRow(TemplateView):
    label: Text
    value: ToolText
    is_failure: bool = False


@dataclass(frozen=True)
class KindView(TemplateView):
    """G9: what `details.kind` adds to an entry, as label/value rows."""

    kind: Key  # file | command | fetch | subagent | custom
    rows: tuple[KindRow, ...]
    failed: bool  # non-zero exit code, HTTP status >= 400


@dataclass(frozen=True)
class ToolEntryView(TemplateView):
    """R4: one tool call with its result, state, and nested children (G13)."""

    kind: ClassVar[str] = "tool"
    role: ClassVar[str] = "tool"
    dom_id: Key
    pk: int
    message_id: Key
    tool_call_id: Key  # raw: only ever an (escaped) attribute value
    tool_name: ToolText
    title: ToolText  # G10
    # queued | running | awaiting_approval | success | error | denied | skipped | cancelled
    status: Key
    is_pending: bool  # G5
    is_error: bool  # G6
    call_line: ToolText  # G3
    result: ResultView | None  # G4; the error text on error; None while pending or empty
    error: ToolText | None  # G6: the error text (cut at ERROR_CHARS), errors only
    duration_text: Text | None  # G7
    details_json: ToolText | None  # G8
    kind_view: KindView | None  # G9
    progress: float | None  # G12, pending only, 0..1
    progress_percent: int | None
    progress_line: ToolText | None  # G11, pending only
    output_tail: ToolText | None  # G12, pending only
    retry_line: ToolText | None  # G14
    children: tuple[ToolEntryView, ...]  # G13
    depth: int
    started_at: datetime
    started_at_iso: Key
    elapsed_text: Text | None  # G5, pending only
    updated_seq: int
    is_skipped: bool = False  # [001] skipped: muted, neither success nor error
    no_result: bool = False  # T2: its run ended (or it was imported) with no result
    preview_note: Text | None = None  # [001] the result is only the runtime's preview
    pks: tuple[int, ...] = ()  # G14: every attempt's message pk (this one's last)
    attempt_history: Text | None = None  # G14: "failed once, succeeded on 2/3"
    args_text: AttrText | None = None  # G16: what Copy args copies
    failure: Text | None = None  # G15: why details make this a failure ("exit code 2")
    # docs/rendering.md#approvals: asked for a person's decision
    approval: ApprovalView | None = None
    # P3, a page's size bound (`_bounded`): what the entry leaves out of the page is
    # fetched from `texts_url` + "output" / "details" / "args" (chatui.web.tool_text_views).
    texts_url: Key | None = None  # set when anything is left out
    details_size: Text | None = None  # Details left out: its full size ("1.8 MB")
    args_deferred: bool = False  # Copy args fetches the args
    # W4: what this entry counts as on every surface (chatui.read.outcomes)
    outcome: Key = Outcome.PENDING
    # docs/rendering.md#rich-output (chatui.read.rich): the result as people read it, shown
    # instead of the G4 block; a patch argument's diff; G18's "+12 −3"; G20's Details.
    rich: RichView | None = None
    args_diff: DiffView | None = None
    diff_stat: Text | None = None
    details_view: DetailsView | None = None
    # G22: the header's one line — the result's (or error's) first line once it ended,
    # the progress line while it runs (docs/rendering.md#g22).
    preview_line: ToolText | None = None

    @property
    def is_running(self) -> bool:
        return self.is_pending and self.status == ToolStatus.RUNNING

    @property
    def is_queued(self) -> bool:
        return self.is_pending and self.status == ToolStatus.QUEUED

    @property
    def pending_word(self) -> str | None:
        """W3: "running" (with a clock) or "waiting" (queued: no clock, nothing runs yet)."""
        if not self.is_pending:
            return None
        return "running" if self.status == ToolStatus.RUNNING else "waiting"

    @property
    def is_cancelled(self) -> bool:
        """W5: its run was stopped by a person before it ended: muted, never a failure."""
        return self.status == ToolStatus.CANCELLED

    @property
    def icon(self) -> str:
        """The head's mark (G5, G6, docs/rendering.md#approvals, [001] skipped, T2), by
        precedence: a W7 icon's name (chatui/icons/, `{% icon %}`)."""
        if self.is_error:
            return "circle-x"
        if self.status == "denied":
            return "ban"
        if self.status == "awaiting_approval":
            return "hand"
        # W3: waiting is not running — a hollow dashed circle, muted; a spinning loader.
        if self.is_running:
            return "loader-circle"
        if self.is_pending:
            return "circle-dashed"
        if self.is_skipped or self.no_result or self.is_cancelled:
            return "minus"
        return "check"

    # What the template tests, each one name: a live frame renders entries one by one
    # and every name in a condition costs a template lookup (docs/PERFORMANCE.md#p2).

    @property
    def inline_result(self) -> ResultView | None:
        """G4: the result shown after the call line (`call → text`); not on errors."""
        result = self.result
        if result is None or not result.inline or self.is_error or self.rich is not None:
            return None
        return result

    @property
    def block_result(self) -> ResultView | None:
        """G4: the result shown as a block under the call (the error is shown instead)."""
        result = self.result
        return result if result is not None and not result.inline else None

    @property
    def has_output(self) -> bool:
        """A result or an error: what Copy output copies."""
        return self.result is not None or self.is_error

    @property
    def has_actions(self) -> bool:
        """G8/G16: Copy output, Copy args or Details are shown."""
        return bool(self.details_json or self.args_text or self.args_deferred or self.has_output)

    @property
    def output_deferred(self) -> bool:
        """The shown block result's full text is fetched on demand (Copy output too)."""
        result = self.result
        return result is not None and result.deferred and not self.is_error


@dataclass(frozen=True)
class LiveLineView(TemplateView):
    """docs/rendering.md#watching-a-run "Watching a run": the running entry as its batch's summary
    shows it."""

    title: ToolText
    progress_line: ToolText | None
    started_at_iso: Key
    elapsed_text: Text | None


@dataclass(frozen=True)
class ApprovalView(TemplateView):
    """docs/rendering.md#approvals: why the runtime asks, and what was decided (by whom, when)."""

    reason: ToolText
    is_awaiting: bool  # Approve / Deny are shown (to those who may decide)
    decision: Key | None  # approved | denied | expired
    line: ToolText | None  # "Approved by alice · 14:02" / "Denied by alice: too risky"
    decide_url: Key  # the page form's action for this entry
    expires_at_iso: Key


@dataclass(frozen=True)
class ToolBatchView(TemplateView):
    """G1/G2/G6: consecutive top-level tool entries in one <details> block."""

    kind: ClassVar[str] = "tool_batch"
    dom_id: Key
    entries: tuple[ToolEntryView, ...]
    count: int  # top-level entries: data-count
    title: ToolText
    has_error: bool
    failed_count: int
    failed_text: Text | None  # "1 failed"
    running_count: int
    open: bool
    updated_seq: int
    skipped_text: Text | None = None  # "1 skipped" (docs/events.md#agent-tool-completed), muted
    # docs/rendering.md#watching-a-run: "List Files, Read File +3"; None for a batch of one
    names_text: ToolText | None = None
    running_text: Text | None = None  # "2 running"
    queued_text: Text | None = None  # "9 waiting" (W3: queued, not running)
    # docs/rendering.md#watching-a-run: the running entry, shown in the summary
    live: LiveLineView | None = None
    awaiting_text: Text | None = None  # "1 awaiting approval" (docs/rendering.md#approvals)
    denied_text: Text | None = None  # "1 denied", muted (docs/rendering.md#approvals)
    cancelled_text: Text | None = None  # "1 cancelled", muted (W5: not a failure)
    expired_text: Text | None = None  # "1 expired", muted (W4: not folded into denied)
    # docs/rendering.md#long-transcripts/P3: a batch shows at most its latest BATCH_WINDOW top-level
    # entries; "show N earlier calls" fetches the ones before `earlier_before` (a position).
    earlier_count: int = 0
    earlier_before: int | None = None
    conversation_id: Any = None
    start_pk: int | None = None  # the batch's first top-level tool message
    hidden_pks: frozenset[int] = frozenset()  # tool messages not shown (nested too)
    # W1 calm: open because it is where its going run is (nothing shown after it yet),
    # even between its tools; chatui.js closes it once the run moves past it.
    held: bool = False
    # G22: a batch of one is a single card: its summary shows the entry's outcome icon,
    # duration and one-line preview.
    single: ToolEntryView | None = None

    @property
    def summary_id(self) -> str:
        return f"{self.dom_id}-summary"

    @property
    def entries_id(self) -> str:
        return f"{self.dom_id}-entries"


Item = UserView | AssistantView | StatusView | ToolBatchView


# -- small text helpers -------------------------------------------------------


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def pretty_json(value: Any) -> str:
    """`json.dumps(value, indent=2, ensure_ascii=False, default=str)`, the same text.

    With an indent, json encodes in Python and builds its encoding functions anew on
    every call, which cost more than encoding an entry's args and result (G8, G16: each
    tool event's frame prints them twice, docs/PERFORMANCE.md#p2). They are built once per thread
    here (they keep the containers being encoded, to find circular references)."""
    if isinstance(value, str):
        return json.encoder.encode_basestring(value)  # as JSONEncoder.encode does
    encoder = getattr(_PRETTY, "encoder", None)
    if encoder is None:
        encoder = _PRETTY.encoder = _pretty_encoder()
    markers, iterencode = encoder
    markers.clear()  # a value that raised may have left its containers in
    return "".join(iterencode(value, 0))


_PRETTY = threading.local()


def _pretty_encoder() -> tuple[dict, Any]:
    """What `JSONEncoder(indent=2, ensure_ascii=False, default=str).iterencode` builds,
    with CPython's private `json.encoder._make_iterencode`; where there is none, the
    public encoder's own `iterencode` (the same text, its functions built per call)."""
    markers: dict = {}
    if _MAKE_ITERENCODE is None:
        encoder = json.JSONEncoder(indent=2, ensure_ascii=False, default=str)
        return markers, lambda value, _level: encoder.iterencode(value)
    iterencode = _MAKE_ITERENCODE(
        markers, str, json.encoder.encode_basestring, 2, _float_text, ": ", ",", False, False, True
    )
    return markers, iterencode


_MAKE_ITERENCODE = MAKE_ITERENCODE  # CPython's private encoder loop (chatui.db.internals)


def _float_text(value: float) -> str:
    """JSONEncoder's float text with allow_nan (its default)."""
    if value != value:
        return "NaN"
    if value == json.encoder.INFINITY:
        return "Infinity"
    if value == -json.encoder.INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def duration_text(value: Any) -> str | None:
    """G7 for a stored `duration_ms`: None when none was sent, MALFORMED when it is
    not a duration ingest accepts. The one place a stored duration is formatted."""
    if value is None:
        return None
    ms = contract_number(value, MAX_DURATION_MS)
    return MALFORMED if ms is None else format_duration(ms)


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def shown_times(moment: datetime) -> dict[str, str]:
    """A message's shown time and its title, as `{{ moment|date:"H:i" }}` and
    `{{ moment|date:"Y-m-d H:i:s e" }}` would render them (tests/read/test_presenters.py),
    formatted directly: Django's `dateformat` costs ~30 µs a call."""
    local = timezone.localtime(moment) if timezone.is_aware(moment) else moment
    zone = (local.tzname() or "") if local.tzinfo is not None else ""
    return {
        "time_shown": f"{local.hour:02d}:{local.minute:02d}",
        "time_title": (
            f"{local.year:04d}-{local.month:02d}-{local.day:02d} "
            f"{local.hour:02d}:{local.minute:02d}:{local.second:02d} {zone}"
        ),
    }


# -- G3 call line ---------------------------------------------------------------


def _arg_value(value: Any) -> str:
    text = value if isinstance(value, str) else compact_json(value)
    return clip(collapse_newlines(text), ARG_VALUE_CHARS)


def format_args(args: Any) -> str:
    """key=value in insertion order; strings bare, other values compact JSON."""
    if isinstance(args, dict):
        text = ", ".join(
            f"{clip(collapse_newlines(str(key)), ARG_VALUE_CHARS)}={_arg_value(value)}"
            for key, value in args.items()
        )
    elif args is None:
        text = ""
    else:
        text = _arg_value(args)
    return clip(text, ARGS_CHARS)


def call_line(tool_name: str, args: Any = None, args_summary: str | None = None) -> str:
    """G3: `tool_name(args)`, args_summary winning over args when given."""
    if isinstance(args_summary, str) and args_summary.strip():
        inner = clip(collapse_newlines(args_summary.strip()), ARGS_CHARS)
    else:
        inner = format_args(args)
    return f"{clip(tool_name, TOOL_NAME_CHARS)}({inner})"


# -- G4 results -----------------------------------------------------------------


def _normalise_text(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").rstrip()


def truncate_block(
    text: str, *, max_chars: int = RESULT_BLOCK_CHARS, max_lines: int = RESULT_BLOCK_LINES
) -> tuple[str, str | None]:
    """At most `max_lines` lines and `max_chars` chars, plus the note saying what was cut.

    A cut inside the kept lines says "truncated" with the full size; otherwise
    dropped lines are counted.
    """
    lines = text.split("\n")
    shown = "\n".join(lines[:max_lines])
    if len(shown) > max_chars:
        return shown[:max_chars], f"{ELLIPSIS} (truncated, {human_size(len(text.encode()))})"
    hidden = len(lines) - max_lines
    if hidden > 0:
        return shown, f"{ELLIPSIS} ({hidden} more line{'' if hidden == 1 else 's'})"
    return shown, None


def present_result(text: str) -> ResultView | None:
    """G4: None when there is nothing to show (never an empty box). G17: escape codes are
    never shown, not even where the text is not rendered as a terminal (too long)."""
    text = _normalise_text(plain_terminal_text(text))
    if not text.strip():
        return None
    size = human_size(len(text.encode()))
    if "\n" not in text and len(text) <= INLINE_RESULT_CHARS:
        return ResultView(neutralise(text), inline=True, note=None, truncated=False, full_size=size)
    shown, note = truncate_block(text)
    return ResultView(
        neutralise(shown),
        inline=False,
        note=note,
        truncated=note is not None,
        full_size=size,
        full_text=neutralise(text) if note else None,  # G16: expands in place
    )


# -- G11/G12 live output ----------------------------------------------------------


def split_output(output: str) -> tuple[str | None, str | None]:
    """(output tail, last "→ " line): "→ " lines are progress, not output (G11)."""
    kept: list[str] = []
    arrow: str | None = None
    for line in _normalise_text(output).split("\n"):
        if line.lstrip().startswith("→ "):
            arrow = line.strip()
        else:
            kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    tail = "\n".join(kept[-OUTPUT_TAIL_LINES:])[-OUTPUT_TAIL_CHARS:]
    return (tail or None), arrow


# -- G9 kinds ---------------------------------------------------------------------


def _kind_text(value: Any) -> str:
    text = value if isinstance(value, str) else compact_json(value)
    return neutralise(clip(collapse_newlines(text), KIND_VALUE_CHARS))


def _preview(value: str) -> str:
    shown, note = truncate_block(
        _normalise_text(value), max_chars=KIND_VALUE_CHARS, max_lines=KIND_PREVIEW_LINES
    )
    return neutralise(shown + (ELLIPSIS if note else ""))


def _int_like(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,6}", value.strip()):
        return int(value)
    return None


def _optional_row(details: dict[str, Any], key: str, label: str) -> list[KindRow]:
    """[001] a key AgentSpine's details may carry (TOOL_UI.md): one row when present."""
    value = details.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return []
    return [KindRow(label, _kind_text(value))]


def _file_rows(details: dict[str, Any]) -> list[KindRow]:
    rows = []
    if details.get("path") is not None:
        rows.append(KindRow("Path", _kind_text(details["path"])))
    rows.extend(_optional_row(details, "mime_type", "Type"))
    # The preview is the file content when the tool sent it; the result itself
    # is already shown by G4, so it is not repeated here.
    if isinstance(details.get("content"), str) and details["content"].strip():
        rows.append(KindRow("Preview", _preview(details["content"])))
    return rows


def _command_rows(details: dict[str, Any]) -> list[KindRow]:
    rows = []
    command = details.get("command", details.get("cmd"))
    if isinstance(command, list):
        command = " ".join(str(part) for part in command)
    if command is not None:
        rows.append(KindRow("Command", _kind_text(command)))
    rows.extend(_optional_row(details, "cwd", "Directory"))
    if details.get("exit_code") is not None:
        failed = details_failure({"exit_code": details["exit_code"]}) is not None  # G15
        rows.append(KindRow("Exit code", _kind_text(details["exit_code"]), failed))
    return rows


def _fetch_rows(details: dict[str, Any]) -> list[KindRow]:
    rows = []
    if details.get("url") is not None:
        rows.append(KindRow("URL", _kind_text(details["url"])))
    status = details.get("status_code", details.get("status"))
    if status is not None:
        failed = details_failure({"status_code": status}) is not None  # G15
        rows.append(KindRow("HTTP status", _kind_text(status), failed))
    rows.extend(_optional_row(details, "mime_type", "Type"))
    return rows


def _state_name(item: Any) -> str:
    if isinstance(item, dict):
        for key in ("state", "status", "to", "name"):
            if item.get(key) is not None:
                return str(item[key])
    return item if isinstance(item, str) else compact_json(item)


def _subagent_rows(details: dict[str, Any]) -> list[KindRow]:
    rows = []
    run_id = next(
        (details[key] for key in ("run_id", "session_id", "id") if details.get(key) is not None),
        None,
    )
    if run_id is not None:
        rows.append(KindRow("Run", _kind_text(run_id)))
    # The child's own session: where an auditor goes to read what the subagent did.
    rows.extend(_optional_row(details, "child_session_id", "Child session"))
    states = next(
        (
            details[key]
            for key in ("states", "transitions", "state_transitions")
            if isinstance(details.get(key), list)
        ),
        None,
    )
    if states:
        rows.append(KindRow("States", _kind_text(" → ".join(map(_state_name, states)))))
    elif details.get("state", details.get("status")) is not None:
        rows.append(KindRow("State", _kind_text(details.get("state", details.get("status")))))
    return rows


KIND_ROWS = {
    "file": _file_rows,
    "command": _command_rows,
    "fetch": _fetch_rows,
    "subagent": _subagent_rows,
}


#: [001] details without `kind`: the first of these whose keys it has.
KIND_BY_KEYS = (
    (("exit_code", "command"), "command"),
    (("url", "status_code"), "fetch"),
    (("path",), "file"),
)


def _kinds_by_keys(details: dict[str, Any]) -> list[str]:
    """[001] Every kind whose keys a kind-less details object has, the first one naming it:
    `{"path": …, "exit_code": 0}` shows both its exit code and its path."""
    return [k for keys, k in KIND_BY_KEYS if any(key in details for key in keys)]


def present_kind(details: Any, call: str = "") -> KindView | None:
    """G9 by details.kind; unknown kinds are "custom"; unknown keys are ignored.

    `custom` shows `details.summary`; without one there is no kind view, since
    the G4 result right above already is the result preview.
    """
    if not isinstance(details, dict):
        return None
    given = details.get("kind")
    kind = given if isinstance(given, str) and given in KIND_ROWS else "custom"
    read_as = [kind]
    if given is None:  # [001] no kind: read by its keys
        read_as = _kinds_by_keys(details) or read_as
        kind = read_as[0]
    rows: list[KindRow] = []
    summary = _kind_text(details["summary"]) if details.get("summary") is not None else ""
    if summary and summary not in call:  # a summary that repeats the call line says nothing
        rows.append(KindRow("Summary", summary))
    for each in read_as:
        rows.extend(KIND_ROWS.get(each, lambda _: [])(details))
    if not rows:
        return None
    return KindView(kind, tuple(rows), failed=any(row.is_failure for row in rows))


# -- tool entries -----------------------------------------------------------------


def _details_json(meta: dict[str, Any]) -> str | None:
    """G8: full args and full result (and error, details), pretty-printed."""
    payload = _details_payload(meta)
    return neutralise(pretty_json(payload)) if payload else None


def _details_payload(meta: dict[str, Any]) -> dict[str, Any]:
    payload: dict[str, Any] = {}
    if meta.get("args") not in (None, {}, [], ""):  # a queued call with no args: no empty toggle
        payload["args"] = meta["args"]
    elif meta.get("args_summary"):
        payload["args_summary"] = meta["args_summary"]
    if "tool_result" in meta:
        payload["result"] = meta["tool_result"]
    if meta.get("tool_error"):
        payload["error"] = meta["tool_error"]
    if "details" in meta:
        payload["details"] = meta["details"]
    return payload


def _retry_line(meta: dict[str, Any], title: str) -> str | None:
    """G14: attempt > 1 → "⟳ Title — Retrying (2/3)"."""
    attempt = contract_number(_int_like(meta.get("attempt")), MAX_ATTEMPTS)
    if attempt is None or attempt <= 1:
        return None
    count = str(attempt)
    if meta.get("max_attempts"):
        limit = contract_number(_int_like(meta["max_attempts"]), MAX_ATTEMPTS)
        count += f"/{MALFORMED if limit is None else limit}"
    return f"⟳ {title} — Retrying ({count})"


def _live_fields(meta: dict[str, Any]) -> dict[str, Any]:
    """G11/G12: progress bar, progress line and output tail of a pending tool."""
    # A malformed stored progress shows no bar rather than a wrong one.
    fraction = contract_number(meta.get("progress"), 1)
    if fraction is not None:
        fraction = float(fraction)
    output = meta.get("output")
    # G17: a running command's live tail shows no escape code, its progress bar as it stands
    output = plain_terminal_text(output) if isinstance(output, str) else output
    tail, arrow = split_output(output) if isinstance(output, str) else (None, None)
    message = meta.get("progress_message")
    line = message.strip() if isinstance(message, str) and message.strip() else arrow
    return {
        "progress": fraction,
        "progress_percent": None if fraction is None else round(fraction * 100),
        "progress_line": neutralise(line) if line else None,
        "output_tail": neutralise(tail) if tail else None,
    }


def progress_line(metadata: dict[str, Any], display: Display = MASKED) -> str | None:
    """G11: a pending tool's progress line, as its entry shows it (W2's strip too)."""
    meta, _ = display.message_text(Role.TOOL, metadata or {}, "")
    return _live_fields(meta)["progress_line"]


_NO_LIVE = {"progress": None, "progress_percent": None, "progress_line": None, "output_tail": None}


def present_tool_entry(
    message: Message, *, now: datetime | None = None, display: Display = MASKED
) -> ToolEntryView:
    """R4: one tool message → its entry, shown as `display` says."""
    return display.show(_tool_entry(message, now=now, display=display))


def _tool_entry(
    message: Message,
    *,
    now: datetime | None,
    display: Display,
    children: Sequence[ToolEntryView] = (),
    depth: int = 0,
) -> ToolEntryView:
    """R4: one tool message → its entry; `children` are its nested tools' entries.

    A finished entry without children is presented once (`_FINISHED`): a live frame
    presents the whole batch around the entry that changed, and a tool step would
    otherwise cost as much as every entry before it (docs/PERFORMANCE.md, tool steps)."""
    key = _finished_key(message, display, depth) if not children else None
    if key is None:
        return _present_entry(message, now=now, display=display, children=children, depth=depth)
    found = _FINISHED.get(key)
    if found is None:
        found = _present_entry(message, now=now, display=display, depth=depth)
        if _text_size(found) <= MEMO_ENTRY_CHARS:
            _FINISHED.put(key, found)
    return found


#: Entries holding more text than this are presented each time rather than kept.
MEMO_ENTRY_CHARS = 8192


#: Presented finished entries (`_finished_key`), shared by the writer threads.
_FINISHED: BoundedLRU[tuple, ToolEntryView] = BoundedLRU(2048)


def _finished_key(message: Message, display: Display, depth: int) -> tuple | None:
    """What a finished entry's view depends on, or None while it may still change
    with the clock (a pending tool's elapsed time). A message only changes through
    the projection, which stamps the event's seq on it (`updated_seq`), and within
    one conversation's log the state after a given event is always the same: so a
    message at the same position with the same `updated_seq` shows the same, in the
    live tables and in replay's scratch projections alike. The rest of the key guards
    against ids reused across databases (replay's in-memory copy, a re-import)."""
    if message.tool_status in PENDING or message.pk is None:
        return None
    return (
        message._state.db,
        message.conversation_id,
        message.pk,
        message.position,
        message.updated_seq,
        message.timestamp,
        len(message.content),
        display.mask_secrets,  # all an entry takes from `display` (its transform comes later)
        display.hide_tool_io,
        display.attachment_base,  # G21: a share link's page serves attachments itself
        depth,
        inline_chars(),  # a setting: tests change it
    )


def _text_size(entry: ToolEntryView) -> int:
    full = entry.result.full_text if entry.result is not None else None
    texts = (entry.args_text, entry.details_json, entry.error, entry.call_line, full)
    rich = sum(view.chars for view in (entry.rich, entry.args_diff) if view is not None)
    return sum(len(text) for text in texts if text) + rich


def _present_entry(
    message: Message,
    *,
    now: datetime | None,
    display: Display,
    children: Sequence[ToolEntryView] = (),
    depth: int = 0,
    bounded: bool = True,
) -> ToolEntryView:
    # T3: secrets are masked here (unless `display` reveals them), the one place tool
    # text becomes presentable. Of a long result, only the head the page shows is.
    status = str(message.tool_status or ToolStatus.RUNNING)
    long = _long_text(message) if bounded and status not in PENDING else None
    result_size = None  # a long string result's size when the entry holds only its head
    if long is None:
        meta, content = display.message_text(message.role, message.metadata or {}, message.content)
    else:
        meta, content, result_size = _shown_heads(message, display)
    no_result = status in PENDING and bool(meta.get("no_result_recorded"))
    pending = status in PENDING and not no_result  # T2: no timer once its run ended
    # G15 one honest outcome: details saying exit ≠ 0 or HTTP ≥ 400 fail the entry even
    # when an older row was stored as a success (projection applies the same rule).
    failure = _failure(meta) if status == ToolStatus.SUCCESS else None
    is_error = status == ToolStatus.ERROR or failure is not None
    status = ToolStatus.ERROR if is_error else status
    title = neutralise(humanise_tool_name(message.tool_name))
    error_text = (meta.get("tool_error") or content or failure) if is_error else None
    # docs/rendering.md#rich-output: from the masked text (T3 first, then render); a patch
    # argument is named by its path in the call line (G18).
    rich = NOTHING
    if status not in PENDING:
        rich = present_rich(
            message.tool_name,
            meta,
            content,
            error=error_text,
            whole=long is None,
            mask_secrets=display.mask_secrets,
            attachment_url=_attachment_urls(message.conversation_id, display),
        )
    args = meta.get("args") if rich.call_args is None else rich.call_args
    call = neutralise(call_line(message.tool_name, args, meta.get("args_summary")))
    # The display text of docs/events.md#canonical-messages is `content`; nothing is shown until the
    # tool ends (G5).
    if status in PENDING or status == ToolStatus.CANCELLED:
        result = None  # W5: a cancelled call has no output to show or copy
    elif long is not None and len(content) == SHOWN_HEAD_CHARS:
        result = _long_result(content, long)
    # else a long text whose secrets masked it shorter than its head: `content` is it all
    else:
        result = present_result(content or (error_text or ""))
    details, args_text = _details_json(meta), _args_text(meta)
    details_size = None
    if details is not None and result_size is not None:
        # The Details hold the result's head: their size is the whole one's.
        head_size = len(json.encoder.encode_basestring(meta["tool_result"]).encode())
        details_size = len(details.encode()) - head_size + result_size
    left_out: dict[str, Any] = {}
    if bounded:
        result, details, args_text, left_out = _bounded(
            message, result, details, args_text, shows_result=not is_error, whole=details_size
        )
    started = message.timestamp
    live = _live_fields(meta) if pending else _NO_LIVE
    # G20: the Details with multi-line strings as text blocks (only when shown whole)
    shows_blocks = details is not None and "details_size" not in left_out and "\\n" in details
    return ToolEntryView(
        dom_id=message.dom_id,
        pk=message.pk,
        message_id=message.message_id,
        tool_call_id=message.tool_call_id,
        tool_name=neutralise(clip(message.tool_name, TOOL_NAME_CHARS)),
        title=title,
        status=status,
        is_pending=pending,
        is_error=is_error,
        call_line=call,
        result=result,
        error=neutralise(clip(error_text, ERROR_CHARS)) if error_text else None,
        duration_text=duration_text(meta.get("tool_duration_ms")),
        details_json=details,
        kind_view=present_kind(meta.get("details"), call),
        retry_line=_retry_line(meta, title),
        children=tuple(children),
        depth=depth,
        started_at=started,
        started_at_iso=_iso(started),
        elapsed_text=(
            format_elapsed(((now or timezone.now()) - started).total_seconds()) if pending else None
        ),
        updated_seq=message.updated_seq,
        is_skipped=status == ToolStatus.SKIPPED,
        no_result=no_result,
        preview_note=_preview_note(meta, content if long is None else message.content),
        pks=(message.pk,),
        args_text=args_text,
        failure=failure,
        approval=present_approval(message, meta),
        outcome=outcome_of(message.tool_status, message.metadata),
        rich=rich.view,
        args_diff=rich.args_diff,
        diff_stat=rich.diff_stat,
        details_view=present_details(_details_payload(meta)) if shows_blocks else None,
        # G22: while pending, the header's line is its progress line (G11)
        preview_line=live["progress_line"]
        if pending
        else _preview_line(status, error_text, content, rich.view),
        **left_out,
        **live,
    )


def _failure(meta: dict[str, Any]) -> str | None:
    """G15, and G21's `isError: true` (an older row stored as a success: the projection
    applies the same rules)."""
    failure = details_failure(meta.get("details"))
    if failure is None and is_error_result(meta.get("tool_result")):
        failure = error_text(meta["tool_result"]) or MCP_ERROR
    return failure


def _attachment_urls(conversation_id: Any, display: Display) -> Callable[[str], str]:
    """G21: an MCP attachment's address on the conversation's pages, or on the share link's
    page `display` is for (its access checked there: chatui.web.attachment_views)."""
    base = display.attachment_base
    if base is not None:
        return lambda sha256: base + sha256
    return lambda sha256: reverse("chatui:attachment", args=[conversation_id, sha256])


# -- long results (issue 28, finding 4) ---------------------------------------------


def _long_text(message: Message) -> str | None:
    """A finished tool's result text as G4 reads it (`_normalise_text`), when it is too
    long for any page to inline (LONG_RESULT_CHARS, and the page's inline bound)."""
    limit = max(LONG_RESULT_CHARS, inline_chars())
    if len(message.content) <= limit:
        return None
    text = message.content  # `_normalise_text`, cheaper for a text without "\r"
    text = _normalise_text(text) if "\r" in text else text.rstrip()
    return text if len(text) > limit else None  # not when it is mostly trailing space


def _shown_heads(message: Message, display: Display) -> tuple[dict[str, Any], str, int | None]:
    """A long result's message as `display.message_text` shows it, but of its content
    and of a long string `tool_result` only their first SHOWN_HEAD_CHARS: all the page
    shows of them, G4's block and the start of the Details (the whole is fetched on
    demand, and masked whole there: chatui.web.tool_text_views). T3 holds: `mask_head`
    is exactly the start of the whole text masked, for every rule. Also the size of
    the Details' JSON string of the whole `tool_result` when only its head is kept: its
    bytes as stored and its escaped line feeds (other escapes, rarer, and masking's
    few bytes not counted: encoding it costs more than the rest of the entry)."""
    metadata = message.metadata or {}
    result = metadata.get("tool_result")
    long_result = isinstance(result, str) and len(result) > SHOWN_HEAD_CHARS
    if long_result:
        metadata = {key: value for key, value in metadata.items() if key != "tool_result"}
    meta, _ = display.message_text(message.role, metadata, "")
    result_size = None
    if long_result:
        meta = {**meta, "tool_result": _shown_head(result, display)}
        result_size = _utf8_size(result) + result.count("\n") + 2
    return meta, _shown_head(message.content, display), result_size


def _shown_head(text: str, display: Display) -> str:
    if not display.mask_secrets:
        return text[:SHOWN_HEAD_CHARS]
    return mask_head(text, SHOWN_HEAD_CHARS)


def _long_result(head: str, text: str) -> ResultView:
    """G4 for a long result: the block `present_result` shows of the whole text masked
    (its first 8 lines, at most 500 characters), from the masked head; the note counts
    the lines and size of the text as stored (`text`, normalised): masking keeps line
    breaks (a carriage return inside a quoted secret aside) and changes a secret's few
    bytes. The whole is beyond the page's inline bound: fetched on demand (G16)."""
    if head.endswith("\r"):  # maybe half of a "\r\n": the line ends in the next character
        head = head[:-1]
    head = plain_terminal_text(head)  # G17: no escape code shown
    lines = head.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # not stripped: cut
    shown = "\n".join(lines[:RESULT_BLOCK_LINES])
    size = human_size(_utf8_size(text))
    if len(shown) > RESULT_BLOCK_CHARS:
        shown, note = shown[:RESULT_BLOCK_CHARS], f"{ELLIPSIS} (truncated, {size})"
    else:
        hidden = text.count("\n") + 1 - RESULT_BLOCK_LINES
        note = f"{ELLIPSIS} ({hidden} more line{'' if hidden == 1 else 's'})"
    return ResultView(
        neutralise(shown), inline=False, note=note, truncated=True, full_size=size, deferred=True
    )


def _utf8_size(text: str) -> int:
    """`len(text.encode())` without encoding an ASCII text (Python knows it is one)."""
    return len(text) if text.isascii() else len(text.encode())


def inline_chars() -> int:
    """How many characters of full result text, Copy-args text and Details JSON one
    entry carries in the page, together (`CHATUI_TOOL_TEXT_INLINE_CHARS`)."""
    return settings.CHATUI_TOOL_TEXT_INLINE_CHARS


def _bounded(
    message: Message,
    result: ResultView | None,
    details: str | None,
    args_text: str | None,
    *,
    shows_result: bool,
    whole: int | None = None,
) -> tuple[ResultView | None, str | None, str | None, dict[str, Any]]:
    """P3, a page's size bound (issue 28): the texts an entry inlines in full — its
    result text (G16), Copy args' text and the Details JSON (G8, which repeats both) —
    share one budget of `inline_chars()`. Kept in that order, each whole or not at all;
    one left out is fetched when the reader opens or copies it, so a page of 200 entries
    stays a few MB whatever the results (before: 60 results of 900 KB, a 108 MB page).
    The Details left out keep a short preview; the result's is its cut block (G4).
    `whole`: the Details' size in bytes when `details` holds only the head of a long
    result (`_shown_heads`): then they are left out whatever the budget."""
    budget = inline_chars()
    left_out: dict[str, Any] = {}
    if result is not None and result.full_text is not None:
        if len(result.full_text) <= budget:
            if shows_result:  # an error entry shows its error instead: no page bytes
                budget -= len(result.full_text)
        else:  # not kept in a view (nor in the memo of entries) either, shown or not
            result = replace(result, full_text=None, deferred=True)
    if args_text is not None:
        if len(args_text) <= budget:
            budget -= len(args_text)
        else:
            args_text, left_out["args_deferred"] = None, True
    if details is not None and (len(details) > budget or whole is not None):
        left_out["details_size"] = human_size(len(details.encode()) if whole is None else whole)
        details = truncate_block(details)[0]
    if left_out or (result is not None and result.deferred):
        url = reverse("chatui:tool-text", args=[message.conversation_id, message.pk, "output"])
        left_out["texts_url"] = url.removesuffix("output")
    return result, details, args_text, left_out


#: The texts an entry may leave out of the page (`_bounded`), by their URL's last part.
TEXT_PARTS = ("output", "details", "args")


def full_tool_text(message: Message, part: str, *, display: Display = MASKED) -> str | None:
    """The whole text of one of a tool entry's `TEXT_PARTS`, exactly as an entry without
    the page's bound would carry it (masked and transformed as `display` says), or None
    when the entry has no such text."""
    entry = display.show(_present_entry(message, now=None, display=display, bounded=False))
    if part == "output":
        result = entry.result
        return None if result is None else (result.full_text or result.text)
    if part == "details":
        return entry.details_json
    if part == "args":
        return entry.args_text
    raise ValueError(f"no such part of a tool entry: {part!r}")


def _args_text(meta: dict[str, Any]) -> str | None:
    """G16: Copy args copies the full args as JSON (or the runtime's summary of them)."""
    if meta.get("args") not in (None, {}, [], ""):
        return neutralise(pretty_json(meta["args"]))
    summary = meta.get("args_summary")
    return neutralise(summary) if isinstance(summary, str) and summary.strip() else None


def present_approval(message: Message, meta: dict[str, Any]) -> ApprovalView | None:
    """docs/rendering.md#approvals: the reason, the buttons while awaiting, then the decision
    line."""
    approval = meta.get("approval")
    if not isinstance(approval, dict):
        return None
    decision = approval.get("decision")
    decision = decision if decision in ("approved", "denied", "expired") else None
    return ApprovalView(
        reason=neutralise(clip(str(approval.get("reason") or ""), ERROR_CHARS)),
        is_awaiting=message.tool_status == ToolStatus.AWAITING_APPROVAL,
        decision=decision,
        line=approval_line(approval) if decision else None,
        decide_url=reverse("chatui:decide-tool", args=[message.conversation_id, message.pk]),
        expires_at_iso=str(approval.get("expires_at") or ""),
    )


def approval_line(approval: dict[str, Any]) -> str:
    """ "Approved by alice · 14:02", "Denied by alice: too risky", "Expired · no decision"."""
    decision = approval.get("decision")
    if decision == "expired":
        return "Expired · no decision"
    who = neutralise(clip(str(approval.get("decided_by") or "someone"), TOOL_NAME_CHARS))
    note = neutralise(clip(collapse_newlines(str(approval.get("note") or "")), ERROR_CHARS))
    if decision == "denied":
        return f"Denied by {who}" + (f": {note}" if note else "")
    line = f"Approved by {who}"
    when = _clock(approval.get("decided_at"))
    if when:
        line += f" · {when}"
    return line + (f": {note}" if note else "")


def _clock(raw: Any) -> str | None:
    """ "14:02" in the site's time zone, or None for a missing or bad time."""
    try:
        moment = parse_datetime(raw) if isinstance(raw, str) else None
    except ValueError:
        moment = None
    if moment is None:
        return None
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, UTC)
    return timezone.localtime(moment).strftime("%H:%M")


def _preview_line(
    status: str, error_text: str | None, content: str, view: RichView | None = None
) -> str | None:
    """G22: one line a reader need not open the entry for — a failed command's red error
    line (G17: the line that says why, not its output's first), the error's first line, or
    the result's first non-blank line with its terminal escapes gone (G17); for a result
    read as records, a key/value list or an MCP result (G20, G21), what it holds, never
    its JSON; nothing for an outcome that has no output (cancelled, denied, skipped,
    awaiting: the status word says it). `content` is already masked (T3); the template
    escapes it (T1)."""
    if status in (ToolStatus.CANCELLED, ToolStatus.DENIED, ToolStatus.AWAITING_APPROVAL):
        return None
    red = _error_line(view) if error_text else None
    text = red or (error_text if error_text else (_structured_preview(view) or content))
    if not text or not text.strip():
        return None
    if "\x1b" in text or "\r" in text:
        text = plain_terminal_text(text)
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return neutralise(clip(" ".join(line.split()), PREVIEW_LINE_CHARS)) if line else None


def _error_line(view: RichView | None) -> str | None:
    """The error line of a failed command shown as a terminal (G17), as plain text."""
    if not isinstance(view, TerminalView):
        return None
    line = next((line for line in reversed(view.lines) if line.is_error), None)
    if line is None:
        return None
    return unneutralise("".join(span.text for span in line.spans))  # neutralised again


def _structured_preview(view: RichView | None) -> str | None:
    """What a structured result holds, in words: "3 rows: id, name, email", "id: 7 ·
    name: Ada", an MCP result's first text (else its parts' kinds). Its texts are the
    view's, masked already (T3)."""
    if isinstance(view, RecordsView):
        rows = f"{len(view.rows)} row" + ("" if len(view.rows) == 1 else "s")
        if view.more_text:
            rows += f" shown, {view.more_text}"
        return f"{rows}: " + ", ".join(column.name for column in view.columns)
    if isinstance(view, KeyValueView):
        return " · ".join(f"{pair.key}: {pair.value}" for pair in view.pairs[:4])
    if isinstance(view, McpView):
        if view.source.strip():
            return view.source
        if view.parts:
            return ", ".join(part.kind for part in view.parts)
        return _structured_preview(view.structured) or view.structured_text
    return None


def _preview_note(meta: dict[str, Any], content: str) -> str | None:
    """[001] AgentSpine sends a preview of the result, cut at about 200 characters
    with "...": when it was cut, say so. An uncut preview is the whole result."""
    if not meta.get("result_is_preview") or not content.rstrip().endswith(("...", "…")):
        return None
    return f"preview — the runtime sent {len(content)} characters"


def iter_entries(entries: Iterable[ToolEntryView]) -> Iterator[ToolEntryView]:
    """Every entry, nested ones included, depth first in display order."""
    for entry in entries:
        yield entry
        if entry.children:  # most have none: no generator made for them (a batch's walk)
            yield from iter_entries(entry.children)


# -- G13 nesting ------------------------------------------------------------------


@dataclass
class _ToolTree:
    """Which tool messages are top-level, and the children of each (by pk)."""

    roots: set[int] = field(default_factory=set)
    children: dict[int, list[Message]] = field(default_factory=dict)

    @classmethod
    def build(cls, messages: Sequence[Message]) -> _ToolTree:
        tools = [m for m in messages if m.role == Role.TOOL]
        by_call_id: dict[str, Message] = {}
        for tool in tools:
            if tool.tool_call_id:
                by_call_id.setdefault(tool.tool_call_id, tool)
        tree = cls()
        parent_of: dict[int, Message] = {}
        for tool in tools:
            parent = by_call_id.get(tool.parent_tool_call_id) if tool.parent_tool_call_id else None
            if parent is None or parent.pk == tool.pk:
                tree.roots.add(tool.pk)  # no parent in this slice: shown at top level
            else:
                parent_of[tool.pk] = parent
                tree.children.setdefault(parent.pk, []).append(tool)
        tree._break_cycles(tools, parent_of)
        return tree

    def _break_cycles(self, tools: list[Message], parent_of: dict[int, Message]) -> None:
        """Tools only reachable through a parent cycle become top-level (in order)."""
        if not parent_of:
            return  # no nesting: every tool is top-level already
        seen: set[int] = set()

        def visit(pk: int) -> None:
            stack = [pk]
            while stack:
                current = stack.pop()
                if current not in seen:
                    seen.add(current)
                    stack.extend(child.pk for child in self.children.get(current, ()))

        for pk in self.roots:
            visit(pk)
        for tool in tools:
            if tool.pk not in seen:
                self.children[parent_of[tool.pk].pk].remove(tool)
                self.roots.add(tool.pk)
                visit(tool.pk)

    def descendants(self, pk: int) -> list[Message]:
        found: list[Message] = []
        stack = list(reversed(self.children.get(pk, [])))
        while stack:
            current = stack.pop()
            found.append(current)
            stack.extend(reversed(self.children.get(current.pk, [])))
        return found


def _present_subtree(
    message: Message, tree: _ToolTree, now: datetime, display: Display, depth: int = 0
) -> ToolEntryView:
    if depth >= MAX_NESTING_DEPTH:
        flat = tuple(
            _tool_entry(child, now=now, display=display, depth=depth + 1)
            for child in tree.descendants(message.pk)
        )
        return _tool_entry(message, now=now, display=display, children=flat, depth=depth)
    children = tuple(
        _present_subtree(child, tree, now, display, depth + 1)
        for child in tree.children.get(message.pk, ())
    )
    return _tool_entry(message, now=now, display=display, children=children, depth=depth)


# -- top-level entries kept between live frames ---------------------------------------


@dataclass(frozen=True)
class KeptRoot:
    """A top-level entry as a live frame presented it, and the messages it shows."""

    view: ToolEntryView
    pks: frozenset[int]  # its own message's and its nested tools'
    timed: bool  # something in it is pending: its clock moves, so it is never lent


@dataclass
class KeptRoots:
    """Top-level entries of one tool batch, carried from a live frame to the next
    (chatui.live.batch_cache). Presenting is a function of an entry's messages (and of the
    clock while one pends): an entry none of whose messages changed (`dirty`) and
    whose nesting is the same is lent as it was, so a tool event's frame presents the
    entries it changed, not the whole batch (docs/PERFORMANCE.md tool steps). Frames show
    `MASKED` text only: what is kept was presented that way."""

    views: dict[int, KeptRoot] = field(default_factory=dict)
    dirty: frozenset[int] = frozenset()
    presented: dict[int, KeptRoot] = field(default_factory=dict)  # filled by this call
    tally: _Tally | None = None  # the batch's counts, as this call presented it

    def views_of(
        self, roots: list[Message], tree: _ToolTree, now: datetime, display: Display
    ) -> list[ToolEntryView]:
        """The entries of top-level `roots`, lent when they may be (one call a batch:
        this runs for every entry at every frame, so it is kept tight)."""
        views, presented, dirty, children = self.views, self.presented, self.dirty, tree.children
        shown: list[ToolEntryView] = []
        for message in roots:
            pk = message.pk
            old = views.get(pk)
            if children.get(pk):
                pks = frozenset((pk, *(tool.pk for tool in tree.descendants(pk))))
                stale = old is None or old.pks != pks or not pks.isdisjoint(dirty)
            else:  # most entries
                pks = None
                stale = old is None or len(old.pks) != 1 or pk in dirty
            if stale or old.timed:
                view = _present_subtree(message, tree, now, display)
                timed = any(entry.is_pending for entry in iter_entries((view,)))
                old = KeptRoot(view, pks or frozenset((pk,)), timed)
            presented[pk] = old
            shown.append(old.view)
        return shown


@dataclass(frozen=True)
class FlatBatch:
    """A presented tool batch with no nested call and no numbered attempt: each of its
    entries is one top-level tool message, in order (chatui.live.batch_cache)."""

    view: ToolBatchView
    tally: _Tally
    views: dict[int, KeptRoot]
    timed: frozenset[int]  # entries pending: their clock moves (so does a running one)

    @classmethod
    def of(cls, view: ToolBatchView, tally: _Tally, views: dict[int, KeptRoot]) -> FlatBatch:
        return cls(view, tally, views, frozenset(pk for pk, kept in views.items() if kept.timed))


def flat_batch_after(
    before: FlatBatch,
    dirty: Iterable[int],
    rows: Sequence[Message],
    index: dict[int, int],
    roots: int,
    head: BatchHead | None,
    held: bool = False,
) -> FlatBatch | None:
    """`before` with the changes since: the entries of the `dirty` tool messages (and
    of the pending ones: their clock moves) presented anew, new ones added, those
    that left the window (docs/rendering.md#long-transcripts: now counted in `head`) dropped, and
    the summary counted from the old counts, not from every entry. `rows` are the batch's
    messages now (`index`: pk → place), `roots` of them tools, all top-level. None
    when the batch is not what this follows (it is then presented in full)."""
    entries = list(before.view.entries)
    dropped = 0
    while dropped < len(entries) and entries[dropped].pk not in index:
        dropped += 1
    gone = [entry.pk for entry in entries[:dropped]]
    entries = entries[dropped:]
    at = {entry.pk: n for n, entry in enumerate(entries)}
    if not index.keys() >= at.keys():
        return None
    redo = {pk for pk in dirty if pk in index and rows[index[pk]].role == Role.TOOL}
    redo |= before.timed - set(gone)
    added = sorted((rows[index[pk]] for pk in redo if pk not in at), key=lambda m: m.position)
    if len(entries) + len(added) != roots:
        return None  # an entry this does not know of
    if added and entries and added[0].position < rows[index[entries[-1].pk]].position:
        return None  # not all after the entries: presented in order in full
    tally = replace(before.tally)
    views = dict(before.views)
    for pk, entry in zip(gone, before.view.entries, strict=False):
        tally.count(entry, -1)
        del views[pk]
    now = timezone.now()
    running: list[tuple[int, ToolEntryView]] = []  # every running entry is redone (timed)
    timed = set(before.timed) - set(gone)
    for pk in redo:
        view = _present_subtree(rows[index[pk]], _NO_TREE, now, MASKED)
        if pk in at:
            tally.count(entries[at[pk]], -1)
            entries[at[pk]] = view
        tally.count(view)
        tally.updated_seq = max(tally.updated_seq, view.updated_seq)
        views[pk] = KeptRoot(view, frozenset((pk,)), view.is_pending)
        (timed.add if view.is_pending else timed.discard)(pk)
    for n, message in enumerate(added, start=len(entries)):
        at[message.pk] = n
    entries += [views[message.pk].view for message in added]
    for pk in redo:
        if views[pk].view.is_running:
            running.append((at[pk], views[pk].view))
    tally.first_running = min(running, key=lambda found: found[0])[1] if running else None
    first = rows[index[entries[0].pk]]
    view = _batch_view(
        tuple(entries),
        tally,
        head,
        hidden=[],
        earlier=0,
        first=first,
        shown_position=first.position,
        held=held,
    )
    return FlatBatch(view, tally, views, frozenset(timed))


#: A batch without nesting: no entry has children.
_NO_TREE = _ToolTree()


def is_flat(message: Message) -> bool:
    """A tool message a flat batch may hold: top-level, not a numbered attempt (G14
    merges those), or any other message (they are not entries)."""
    if message.role != Role.TOOL:
        return True
    return not message.parent_tool_call_id and _attempt(message) is None


def _root_views(
    roots: list[Message],
    tree: _ToolTree,
    now: datetime,
    display: Display,
    kept: KeptRoots | None,
) -> list[ToolEntryView]:
    if kept is None or display.mask_secrets is not True or display.transform is not None:
        return [_present_subtree(message, tree, now, display) for message in roots]
    return kept.views_of(roots, tree, now, display)


# -- batches ----------------------------------------------------------------------


def _attempt(message: Message) -> int | None:
    attempt = (message.metadata or {}).get("attempt")
    if attempt is None:  # most calls: asked of every entry of a batch at every frame
        return None
    return contract_number(_int_like(attempt), MAX_ATTEMPTS)


def _retries(previous: Message, previous_view: ToolEntryView, message: Message) -> bool:
    """G14: `message` is attempt n+1 of the failed attempt n (same tool and args)."""
    before, now = previous.metadata or {}, message.metadata or {}
    attempt, last = _attempt(message), _attempt(previous)
    return (
        previous_view.is_error
        and attempt is not None
        and last is not None
        and attempt == last + 1
        and message.tool_name == previous.tool_name
        and now.get("args") == before.get("args")
        and now.get("args_summary") == before.get("args_summary")
    )


def _times(count: int) -> str:
    return {1: "once", 2: "twice"}.get(count, f"{count} times")


def _attempt_history(chain: list[ToolEntryView], final: Message) -> str:
    """G14: "failed once, succeeded on 2/3"; failures a later attempt recovered."""
    failed = len(chain) - 1
    last = chain[-1]
    meta = final.metadata or {}
    limit = contract_number(_int_like(meta.get("max_attempts")), MAX_ATTEMPTS)
    attempt = f"{_attempt(final)}" + (f"/{limit}" if limit else "")
    if last.is_error:
        return f"failed {_times(failed + 1)}"
    if last.is_pending:
        return f"failed {_times(failed)}, attempt {attempt} running"
    return f"failed {_times(failed)}, succeeded on {attempt}"


def _merge_attempts(roots: list[Message], views: list[ToolEntryView]) -> list[ToolEntryView]:
    """G14: consecutive attempts of one call become one entry, shown as its latest
    attempt under the first attempt's DOM id (stable while the retries arrive), with
    every attempt's nested calls (G13), in order: what an earlier attempt called stays
    in view."""
    if all(_attempt(message) is None for message in roots):
        return list(views)  # no numbered attempt: nothing to merge (most batches)
    chains: list[tuple[list[Message], list[ToolEntryView]]] = []
    for message, view in zip(roots, views, strict=True):
        # The latest chain this attempt continues, if any. Not only the entry right
        # before: a runtime that announces a step's calls up front (the demo agent)
        # queues them all, so attempt 2 lands after its queued siblings.
        # Only a numbered attempt continues one (`_retries`): checking the others against
        # every chain made a giant batch's entries cost quadratic time (docs/PERFORMANCE.md#p1,
        # #p3).
        chain = None
        if _attempt(message) is not None:
            retried = (c for c in reversed(chains) if _retries(c[0][-1], c[1][-1], message))
            chain = next(retried, None)
        if chain is None:
            chains.append(([message], [view]))
        else:
            chain[0].append(message)
            chain[1].append(view)
    merged = []
    for messages, chain in chains:
        if len(chain) == 1:
            merged.append(chain[0])
            continue
        merged.append(
            replace(
                chain[-1],
                dom_id=chain[0].dom_id,
                pks=tuple(view.pk for view in chain),
                attempt_history=_attempt_history(chain, messages[-1]),
                children=tuple(child for view in chain for child in view.children),
            )
        )
    return merged


_TITLE = attrgetter("title")


def _names_text(entries: Sequence[ToolEntryView], shown: int = 2) -> str | None:
    """docs/rendering.md#watching-a-run: the batch's distinct tool titles, "List Files, Read File
    +3"."""
    if len(entries) < 2:
        return None  # a batch of one is titled with its tool already
    titles = list(dict.fromkeys(map(_TITLE, entries)))
    text = ", ".join(titles[:shown])
    return f"{text} +{len(titles) - shown}" if len(titles) > shown else text


def _live_line(running: ToolEntryView | None) -> LiveLineView | None:
    """docs/rendering.md#watching-a-run: the first running entry (nested ones too) with its progress
    and clock."""
    if running is None:
        return None
    return LiveLineView(
        title=running.title,
        progress_line=running.progress_line,
        started_at_iso=running.started_at_iso,
        elapsed_text=running.elapsed_text,
    )


def _counted(count: int, word: str) -> str | None:
    return f"{count} {word}" if count else None


def _batch(
    roots: list[Message],
    tree: _ToolTree,
    now: datetime,
    display: Display,
    head: BatchHead | None = None,
    kept: KeptRoots | None = None,
    held: bool = False,
) -> ToolBatchView:
    """The batch of top-level `roots` (after `head`, its part not loaded); only the
    latest BATCH_WINDOW are presented, the earlier ones are counted from their
    columns, without presenting them (P3)."""
    earlier, shown = roots[:-BATCH_WINDOW], roots[-BATCH_WINDOW:]
    views = _root_views(shown, tree, now, display, kept)
    entries = tuple(_merge_attempts(shown, views))
    every = _Tally.of(iter_entries(entries))
    if kept is not None:
        kept.tally = every
    hidden = [tool for root in earlier for tool in (root, *tree.descendants(root.pk))]
    return _batch_view(
        entries,
        every,
        head,
        hidden=hidden,
        earlier=len(earlier),
        first=roots[0],
        shown_position=shown[0].position,
        held=held,
    )


def _batch_view(
    entries: tuple[ToolEntryView, ...],
    every: _Tally,
    head: BatchHead | None,
    *,
    hidden: list[Message],
    earlier: int,
    first: Message,
    shown_position: int,
    held: bool = False,
) -> ToolBatchView:
    """The batch of `entries` (`every` counts them, nested ones too), after `earlier`
    top-level entries not shown (`hidden`, their messages) and `head`; `first` is the
    batch's first top-level message loaded, `shown_position` the first shown's. `held`:
    the batch is where its going run is (W1: open between its tools)."""
    outcomes = _Outcomes(every.failed, every.skipped, every.pending) + _Outcomes.of_messages(hidden)
    if head is not None:
        outcomes += _Outcomes(head.failed, head.skipped, head.running, head.updated_seq)
    earlier_count = earlier + (head.roots if head else 0)
    start_pk = head.start_pk if head else first.pk
    # Pending entries outside the window (rare: the latest ones run) count as running.
    hidden_pending = outcomes.running - every.pending
    running = every.running + hidden_pending
    count = len(entries) + earlier_count
    opened = outcomes.failed > 0 or running > 0 or every.awaiting > 0
    return ToolBatchView(
        dom_id=f"b-{start_pk}",  # the first top-level entry's pk: stable as the batch grows
        entries=entries,
        count=count,
        title=f"{count} tool calls" if count > 1 else entries[0].title,
        has_error=outcomes.failed > 0,
        failed_count=outcomes.failed,
        failed_text=_counted(outcomes.failed, "failed"),
        skipped_text=_counted(outcomes.skipped, "skipped"),
        running_count=running,
        running_text=_counted(running, "running"),
        queued_text=_counted(every.queued, "waiting"),  # W3: waiting is not running
        names_text=_names_text(entries),
        live=_live_line(every.first_running),
        # G6: a batch holding an error renders expanded; docs/rendering.md#watching-a-run: so does
        # one holding a running entry, until none runs (a fresh load then shows it closed again),
        # and one waiting for a person (docs/rendering.md#approvals: its buttons must be in sight).
        # W1 calm: and the batch its going run is in (nothing shown after it yet) stays
        # open between its tools, never closing and re-opening.
        open=opened or held,
        held=held and not opened,  # open only because the run is in it
        single=entries[0] if count == 1 and entries else None,
        awaiting_text=_counted(every.awaiting, "awaiting approval"),
        denied_text=_counted(every.denied, "denied"),
        expired_text=_counted(every.expired, "expired"),
        cancelled_text=_counted(every.cancelled, "cancelled"),
        updated_seq=max(outcomes.updated_seq, every.updated_seq),
        earlier_count=earlier_count,
        earlier_before=shown_position if earlier_count else None,
        conversation_id=first.conversation_id,
        start_pk=start_pk,
        hidden_pks=frozenset(tool.pk for tool in hidden),
    )


@dataclass
class _Tally:
    """A batch's shown entries (nested ones too) counted in one walk: the summary asks
    each of them this much at every live frame of a tool step (docs/PERFORMANCE.md)."""

    failed: int = 0
    skipped: int = 0
    pending: int = 0
    running: int = 0
    queued: int = 0
    awaiting: int = 0
    denied: int = 0
    expired: int = 0
    cancelled: int = 0
    updated_seq: int = 0
    # in display order (docs/rendering.md#watching-a-run live line)
    first_running: ToolEntryView | None = None

    def count(self, entry: ToolEntryView, sign: int = 1) -> None:
        """Add (or take away) one entry; `first_running` and `updated_seq` are left to
        the caller (a maximum is not taken away). Failures, denials, expiries and
        cancellations are counted by the entry's final outcome (W4)."""
        outcome = entry.outcome
        self.failed += sign * (outcome == Outcome.FAILED)
        self.skipped += sign * entry.is_skipped
        if entry.is_pending:
            self.pending += sign
            if entry.status == ToolStatus.RUNNING:
                self.running += sign
            elif entry.status == ToolStatus.QUEUED:
                self.queued += sign
        if entry.status == ToolStatus.AWAITING_APPROVAL:
            self.awaiting += sign
        elif outcome == Outcome.DENIED:
            self.denied += sign
        elif outcome == Outcome.EXPIRED:
            self.expired += sign
        elif outcome == Outcome.CANCELLED:
            self.cancelled += sign

    @classmethod
    def of(cls, entries: Iterable[ToolEntryView]) -> _Tally:
        tally = cls()
        for entry in entries:
            tally.count(entry)
            tally.updated_seq = max(tally.updated_seq, entry.updated_seq)
            running = entry.is_pending and entry.status == ToolStatus.RUNNING
            if running and tally.first_running is None:
                # the first in display order (docs/rendering.md#watching-a-run live line)
                tally.first_running = entry
        return tally


@dataclass(frozen=True)
class _Outcomes:
    """A batch summary's counts (docs/events.md#agent-tool-completed: skipped is its own outcome,
    beside failed)."""

    failed: int = 0
    skipped: int = 0
    running: int = 0
    updated_seq: int = 0

    def __add__(self, other: _Outcomes) -> _Outcomes:
        return _Outcomes(
            self.failed + other.failed,
            self.skipped + other.skipped,
            self.running + other.running,
            max(self.updated_seq, other.updated_seq),
        )

    @classmethod
    def of_messages(cls, tools: Iterable[Message]) -> _Outcomes:
        """The counts of tool rows that are not presented (a giant batch's part outside
        its window, docs/rendering.md#long-transcripts), from the columns, exactly as
        `selectors._batch_head` counts them in SQL: an empty status is pending, and a pending call
        whose run ended without its result (`no_result_recorded`, which the projection only
        ever writes as true) is not running."""
        failed = skipped = running = updated_seq = 0
        for tool in tools:
            status = tool.tool_status
            failed += outcome_of(status, tool.metadata) == Outcome.FAILED  # W4
            skipped += status == ToolStatus.SKIPPED
            if status in PENDING or not status:
                running += (tool.metadata or {}).get("no_result_recorded") is not True
            updated_seq = max(updated_seq, tool.updated_seq)
        return cls(failed, skipped, running, updated_seq)


def count_unpresented(tools: Iterable[Message]) -> tuple[int, int, int, int]:
    """(failed, skipped, running, latest updated_seq) of tool rows not presented, as
    a batch summary counts them (`_Outcomes.of_messages`; chatui.live.batch_cache)."""
    outcomes = _Outcomes.of_messages(tools)
    return outcomes.failed, outcomes.skipped, outcomes.running, outcomes.updated_seq


# -- users, assistants, statuses ----------------------------------------------------


#: A run's total: a number, MALFORMED when a step's stored value is not one ingest
#: accepts, or None when no step sent one.
Total = int | float | str | None


def meta_line(duration_ms: Total, tokens: Total, cost: str | None = None) -> str | None:
    """S1: "Assistant · 1.2s · 650 tokens", with what is known; S4: " · $0.0042" when
    CHATUI_PRICES prices the run (chatui.read.cost)."""
    parts = ["Assistant"]
    if duration_ms == MALFORMED:
        parts.append(MALFORMED)
    elif duration_ms is not None:
        parts.append(format_duration(duration_ms, compact=True))
    if tokens == MALFORMED:
        parts.append(f"{MALFORMED} tokens")
    elif tokens is not None:
        parts.append(format_tokens(tokens))
    if cost:
        parts.append(cost)
    return " · ".join(parts) if len(parts) > 1 else None


def run_total(values: Iterable[Any], limit: int, *, integral: bool = False) -> Total:
    """S1: the sum of a run's steps' values; MALFORMED when one would be refused today."""
    sent = [value for value in values if value is not None]
    if not sent:
        return None
    valid = [contract_number(value, limit, integral=integral) for value in sent]
    return MALFORMED if None in valid else sum(valid)


def _meta_lines(messages: Sequence[Message], shown: set[int]) -> dict[int, str]:
    """S1: message pk → meta line, for the last shown (final) assistant message of each run."""
    runs: dict[str, list[Message]] = {}
    for message in messages:
        if message.role == Role.ASSISTANT:
            runs.setdefault(message.run_id or f"#{message.pk}", []).append(message)
    lines: dict[int, str] = {}
    for steps in runs.values():
        visible = [step for step in steps if step.pk in shown]
        if not visible or not visible[-1].is_final:
            continue
        metas = [step.metadata or {} for step in steps]
        line = meta_line(
            run_total((meta.get("duration_ms") for meta in metas), MAX_DURATION_MS),
            run_total((meta.get("tokens") for meta in metas), MAX_TOKENS, integral=True),
            format_cost(run_cost(metas)),
        )
        if line:
            lines[visible[-1].pk] = line
    return lines


def present_user(message: Message) -> UserView:
    return UserView(**MessageView.fields_of(message), text=message.content)


#: T2: an assistant message that is one legacy `<validation>` block, as the importer keeps it.
VALIDATION_BLOCK = re.compile(r"<validation>(?P<text>.*)</validation>", re.DOTALL)


def present_assistant(
    message: Message, meta: str | None = None, *, shows_text: bool = True
) -> AssistantView:
    validation = VALIDATION_BLOCK.fullmatch(message.content.strip()) if message.is_final else None
    streaming = not message.is_final
    shows_html = shows_text and not (validation or streaming)
    return AssistantView(
        **MessageView.fields_of(message),
        validation=validation.group("text").strip() if validation else None,
        html=render_markdown(message.content) if shows_html else SafeString(""),
        text=message.content if streaming and shows_text else "",
        is_streaming=streaming and shows_text,
        meta_line=meta,
        run_id=message.run_id,
        shows_text=shows_text,
        **_reasoning(message),
    )


def _reasoning(message: Message) -> dict[str, Any]:
    """R6: "Thinking…" while it streams, "Thought for 4 s" after (or "Thought" when its
    length is not known); encrypted reasoning shows only that it happened."""
    if not shows_reasoning(message):
        return {}
    meta = message.metadata or {}
    encrypted = bool(meta.get("reasoning_encrypted")) and not meta["reasoning"].strip()
    ended = _moment_of(meta.get("reasoning_ended_at"))
    started = _moment_of(meta.get("reasoning_started_at"))
    if ended is None and not message.is_final:
        title = "Thinking…"
    elif ended is not None and started is not None and ended >= started:
        seconds = max(1, round((ended - started).total_seconds()))
        title = f"Thought for {seconds} s"
    else:
        title = "Thought"
    if encrypted:
        title = "Encrypted reasoning"
    return {
        "reasoning": "" if encrypted else meta["reasoning"],
        "reasoning_title": title,
        "reasoning_encrypted": encrypted,
    }


def _moment_of(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _continuation(meta: dict[str, Any]) -> ContinuationView | None:
    data = meta.get("continuation")
    if not isinstance(data, dict):
        return None
    return ContinuationView(
        should_continue=bool(data.get("should_continue")),
        stop_reason=str(data.get("stop_reason", "")),
        resolved_by=str(data.get("resolved_by", "")),
    )


def present_status(message: Message, display: Display = MASKED) -> StatusView:
    # T3: a status line is masked as tool text is: a failed run's error_message (the
    # red banner) may quote a token as readily as a tool's error does.
    meta, text = display.message_text(message.role, message.metadata or {}, message.content)
    kind = message.status_type or meta.get("status_type") or "info"
    return StatusView(
        **MessageView.fields_of(message),
        status_type=kind,
        text=text,
        continuation=_continuation(meta) if kind == "continuation" else None,
        is_spinner=kind == "thinking",
        is_toast=kind == "info",
        is_banner=kind == "error",
        is_run_error=kind == "error",
        is_ephemeral=kind in StatusType.EPHEMERAL,
    )


# -- the transcript -----------------------------------------------------------------


def superseded_spinners(messages: Sequence[Message]) -> set[int]:
    """docs/rendering.md#one-status-line one status line: a run's `thinking` line shows only while
    nothing of its run came after it; a later spinner, tool or answer of the run takes its place
    (and the page drops the old spinner in the same frame, so nothing above moves)."""
    hidden: set[int] = set()
    later: set[str] = set()  # runs that have something after the message being read
    for message in reversed(messages):
        run = message.run_id or ""
        if message.role == Role.STATUS and message.status_type == "thinking" and run in later:
            hidden.add(message.pk)
        if supersedes_spinner(message):
            later.add(run)
    return hidden


def supersedes_spinner(message: Message) -> bool:
    """A tool, an answer, a newer thinking line or the run's error banner; a toast
    (info) or a continuation note sits beside the thinking line instead."""
    if message.role == Role.STATUS:
        return message.status_type in ("thinking", "error")
    return message.role in (Role.TOOL, Role.ASSISTANT)


def present_transcript(
    messages: Iterable[Message],
    *,
    now: datetime | None = None,
    display: Display = MASKED,
    kept: KeptRoots | None = None,
    run_going: bool = False,
) -> list[Item]:
    """A contiguous, position-ordered slice of messages → the items to render, in order,
    every text shown as `display` says (chatui.read.display: secrets masked by default).

    Pass a list (a QuerySet is evaluated here, once). No database access happens.
    A MessageWindow's `batch_head` is the part of its opening tool batch before it.
    `kept` (a live frame's, chatui.live.batch_cache) lends top-level entries presented
    before and records those presented now.

    `run_going`: the slice reaches the conversation's end and a run goes. Its last batch,
    when nothing shown comes after it (no breaker in the slice, and none after the slice:
    a window's `batch_ended`), is where the run is: W1 holds it open between its tools.
    """
    head = getattr(messages, "batch_head", None)
    messages_in = messages
    messages = list(messages)
    now = now or timezone.now()
    tree = _ToolTree.build(messages)
    shown = {m.pk for m in messages if m.role == Role.ASSISTANT and is_assistant_shown(m)}
    metas = _meta_lines(messages, shown)

    hidden = superseded_spinners(messages)
    items: list[Item] = []
    batch: list[Message] = []
    held: list[StatusView] = []  # statuses inside a batch go right after it

    def flush(last: bool = False) -> None:
        nonlocal head
        if batch:
            # The head belongs to the slice's first batch if no breaker came before it
            # (a breaker flushes, which drops the head).
            here = last and run_going and not getattr(messages_in, "batch_ended", False)
            items.append(_batch(batch, tree, now, display, head, kept, here))
            batch.clear()
        head = None
        items.extend(held)
        held.clear()

    for message in messages:
        if message.role == Role.TOOL:
            if message.pk in tree.roots:
                batch.append(message)  # nested tools live inside their parent's entry
        elif message.role == Role.STATUS:
            if message.pk not in hidden:
                (held if batch else items).append(present_status(message, display))
        elif message.role == Role.ASSISTANT:
            if message.pk in shown:  # hidden assistant messages do not split a batch
                flush()
                items.append(present_assistant(message, metas.get(message.pk)))
            elif shows_reasoning(message):  # R6: the reasoning shows, the blank answer not
                flush()
                items.append(present_assistant(message, shows_text=False))
        elif message.role == Role.USER:
            flush()
            items.append(present_user(message))
    flush(last=True)
    return [display.show(item) for item in items]


def present_batch(
    messages: Iterable[Message], *, now: datetime | None = None, display: Display = MASKED
) -> ToolBatchView | None:
    """The first batch of a slice: give it the messages one batch spans."""
    items = present_transcript(messages, now=now, display=display)
    return next((item for item in items if isinstance(item, ToolBatchView)), None)


def batch_containing(items: Iterable[Item], message_pk: int) -> ToolBatchView | None:
    """The batch that shows the tool message `message_pk` (nested or not), if any."""
    for item in items:
        if isinstance(item, ToolBatchView) and (
            message_pk in item.hidden_pks
            or any(message_pk in entry.pks for entry in iter_entries(item.entries))
        ):
            return item
    return None
