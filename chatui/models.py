"""chatui's data: an append-only event log per conversation, and its projection.

`Event` rows are the source of truth and are never updated or deleted by the app.
`Message` and `Run` rows are a projection of them (docs/events.md#architecture):
`chatui.ingest.service` is the only code that writes them, and `reproject` can rebuild them at any
time.

Why it is long: every model of the app in one module, where Django looks for them and a
reader expects them; each class is short, and splitting them into a package would only
add imports.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import cache
from typing import Any, TypeVar

from django.conf import settings
from django.db import models
from django.urls import reverse

from chatui.db.internals import loaded_values, model_without_init

from .fields import OrderedJSONField

#: A message's `position` is its creating event's seq * POSITION_STRIDE + its index
#: within that event, so one event can create up to POSITION_STRIDE messages.
POSITION_STRIDE = 1000


def position_for(seq: int, order: int) -> int:
    return seq * POSITION_STRIDE + order


def seq_of(position: int) -> int:
    """The seq of the event that created the message at `position`."""
    return position // POSITION_STRIDE


class StatusType:
    """`agent.status` kinds (`Message.status_type`)."""

    #: Shown only while their run is going: hidden once it finishes.
    EPHEMERAL = ("thinking", "tool_call", "tool_result", "info")


class ConversationStatus(models.TextChoices):
    IDLE = "idle", "Idle"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    # W5: a person pressed Stop. Not a failure: no red banner, not counted as failed.
    CANCELLED = "cancelled", "Cancelled"

    @classmethod
    def ended(cls) -> tuple[str, ...]:
        """The statuses a run ends in."""
        return (cls.COMPLETED, cls.FAILED, cls.CANCELLED)


M = TypeVar("M", bound=models.Model)


def _bare(
    cls: type[M], attributes: Iterable[tuple[str, Any]] | dict[str, Any], *, db, adding: bool
) -> M | None:
    """An instance as `Model.__init__` leaves it, without its per-field work
    (chatui.db.internals.model_without_init); None: go Django's way."""
    return model_without_init(cls, attributes, db=db, adding=adding)


def _loaded(cls: type[M], db: str | None, values: Sequence[Any]) -> M | None:
    """A row with every column, made into an instance as `Model.from_db` makes it, by
    `_bare` (a live frame reads dozens of messages); a row with deferred columns goes
    the usual way."""
    if len(values) != len(cls._meta.concrete_fields):
        return None
    return _bare(cls, zip(_attnames(cls), values, strict=True), db=db, adding=False)


@cache
def _attnames(cls: type[models.Model]) -> tuple[str, ...]:
    return tuple(field.attname for field in cls._meta.concrete_fields)


class FastLoad(models.Model):
    """A model whose rows load without `Model.__init__` when every column was read
    (`_loaded`): the hot reads of ingest and of every live frame."""

    class Meta:
        abstract = True

    @classmethod
    def from_db(cls, db: str | None, field_names: Sequence[str], values: Sequence[Any]):
        return _loaded(cls, db, values) or super().from_db(db, field_names, values)

    @classmethod
    def with_columns(cls, db: str, **columns: Any):
        """A stored row known by some of its columns, given in the model's field order,
        without reading it: the others load when read, as deferred fields do."""
        return _bare(cls, columns, db=db, adding=False) or cls.from_db(
            db, list(columns), list(columns.values())
        )


class Conversation(FastLoad):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations"
    )
    title = models.CharField(max_length=200, blank=True)
    status = models.CharField(
        max_length=16, choices=ConversationStatus.choices, default=ConversationStatus.IDLE
    )
    # The highest seq appended so far; the row lock on it serialises writers.
    last_seq = models.PositiveBigIntegerField(default=0)
    # What its list row counts (issue 12): its tool calls by final outcome (W4,
    # chatui.read.outcomes; a retried attempt is no call of its own). Kept by the
    # projection in the ingest transaction, so a row never counts the conversation's
    # messages (O(messages) per live row push).
    tool_count = models.PositiveIntegerField(default=0)
    failed_tool_count = models.PositiveIntegerField(default=0)
    denied_tool_count = models.PositiveIntegerField(default=0)  # expired ones not
    expired_tool_count = models.PositiveIntegerField(default=0)
    cancelled_tool_count = models.PositiveIntegerField(default=0)
    # How many times its projection was rebuilt (`ingest.reproject`: new message rows
    # under the same seqs). What a process keeps of the projection between live frames
    # is stamped with it, so a rebuild in another process is seen (chatui.live.tail_cache).
    rebuilds = models.PositiveIntegerField(default=0)
    # The chain hash of its last event (hex; "" before the first), which the next event's
    # chains onto (docs/auditing.md#verifying-a-log), and when its log was last signed
    # (`Checkpoint`). Kept on the row ingest locks and saves anyway: chaining reads nothing
    # more.
    chain_hash = models.CharField(max_length=64, blank=True, default="")
    signed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [
            models.Index(fields=["owner", "-updated_at"]),
            # The admin's date hierarchy reads MIN/MAX(created_at) on every list page.
            models.Index(fields=["created_at"]),
        ]
        permissions = [
            ("ingest_any", "Can post events to any user's conversation"),
            ("approve_tool", "Can approve or deny a tool call in any conversation they can see"),
            # docs/sharing.md#notes: auditors' notes (the auditor group has it).
            ("annotate", "Can add an auditor's note to a conversation they can see"),
            # docs/auditing.md#erasing-content: no group has it; given one by one.
            ("erase_content", "Can erase events' content, keeping the log's proof"),
        ]

    def __str__(self) -> str:
        return self.title or f"Conversation {self.id}"

    def get_absolute_url(self) -> str:
        return reverse("chatui:conversation", args=[self.id])


class Event(models.Model):
    """One accepted event, exactly as normalised at ingest. Append-only."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveBigIntegerField()
    # NULL, not "", for "no idempotency key": the unique constraint skips NULLs.
    event_id = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    # sha256 of the event as the client sent it, to tell a duplicate from a conflict.
    body_hash = models.CharField(max_length=64)
    type = models.CharField(max_length=40)
    run_id = models.CharField(max_length=200, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True)
    payload = OrderedJSONField()
    timestamp = models.DateTimeField()
    received_at = models.DateTimeField()
    # sha256 of the event's canonical form, and sha256(previous chain_hash ‖ content_hash),
    # both hex, written with the event (chatui.ingest.chain, docs/auditing.md#verifying-a-log).
    content_hash = models.CharField(max_length=64, default="")
    chain_hash = models.CharField(max_length=64, default="")

    class Meta:
        ordering = ["conversation_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "seq"], name="event_seq_unique"),
            models.UniqueConstraint(
                fields=["conversation", "event_id"],
                condition=models.Q(event_id__isnull=False),
                name="event_id_unique",
            ),
        ]
        indexes = [
            # A tool's logged events (its early progress, docs/PERFORMANCE.md#p2). With the
            # conversation first: on tool_call_id alone, SQLite (no statistics) rated
            # an IN list of a batch's calls dearer than walking the conversation's events.
            models.Index(fields=["conversation", "tool_call_id"]),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.type}"

    @classmethod
    def row(
        cls,
        conversation: Conversation,
        seq: int,
        source: Any,
        *,
        timestamp: datetime,
        received_at: datetime,
    ) -> Event:
        """An unsaved log row at `seq` in `conversation` holding what `source` says (its
        event_id, body_hash, type, run_id, tool_call_id and payload): a normalised event
        being ingested, or a logged Event being copied (replay's scratch conversation)."""
        values = {
            "seq": seq,
            "event_id": source.event_id,
            "body_hash": source.body_hash,
            "type": source.type,
            "run_id": source.run_id,
            "tool_call_id": source.tool_call_id,
            "payload": source.payload,
            "timestamp": timestamp,
            "received_at": received_at,
            # Chained by ingest (chatui.ingest.chain) once the row's place is known.
            "content_hash": "",
            "chain_hash": "",
        }
        # As `cls(conversation=…, **values)` makes it (the conversation cached as that
        # keyword caches it), by `_bare`: a batch of 100 events made 100 of these.
        row = _bare(
            cls, {"id": None, "conversation_id": conversation.pk, **values}, db=None, adding=True
        )
        if row is None:
            return cls(conversation=conversation, **values)
        row._state.fields_cache["conversation"] = conversation
        return row


class Checkpoint(models.Model):
    """A signed statement of a conversation's log (docs/auditing.md#the-signing-key): its
    size (last seq) and chain hash at a time, as a C2SP signed note. Written by ingest, never
    changed."""

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="checkpoints"
    )
    size = models.PositiveBigIntegerField()
    chain_hash = models.CharField(max_length=64)
    signed_at = models.DateTimeField()
    note = models.TextField()

    class Meta:
        ordering = ["conversation_id", "size", "id"]
        indexes = [models.Index(fields=["conversation", "size"])]

    def __str__(self) -> str:
        return f"checkpoint through #{self.size}"


class Role(models.TextChoices):
    USER = "user", "User"
    ASSISTANT = "assistant", "Assistant"
    TOOL = "tool", "Tool"
    STATUS = "status", "Status"


class ToolStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCESS = "success", "Success"
    ERROR = "error", "Error"
    # [001] AgentSpine's `skipped: true`: neither success nor error.
    SKIPPED = "skipped", "Skipped"
    # docs/events.md#approvals: waiting for a person's decision; denied (or expired) is not an
    # error.
    AWAITING_APPROVAL = "awaiting_approval", "Awaiting approval"
    DENIED = "denied", "Denied"
    # W5: queued or running when a person stopped its run: never ran to an end, not an
    # error.
    CANCELLED = "cancelled", "Cancelled"


class Message(FastLoad):
    """A seed-000 Message, projected from events."""

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    message_id = models.CharField(max_length=250)
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True)
    timestamp = models.DateTimeField()
    metadata = OrderedJSONField(default=dict, blank=True)
    # Order of creation: see position_for / seq_of.
    position = models.PositiveBigIntegerField()
    run_id = models.CharField(max_length=200, blank=True)
    # Indexed copies of metadata, for lookups, admin filters and counts.
    tool_call_id = models.CharField(max_length=200, blank=True, db_index=True)
    tool_name = models.CharField(max_length=200, blank=True, db_index=True)
    tool_status = models.CharField(max_length=20, choices=ToolStatus.choices, blank=True)
    parent_tool_call_id = models.CharField(max_length=200, blank=True)
    status_type = models.CharField(max_length=20, blank=True)
    # Streaming assistant text is open until agent.step.completed finalises it.
    is_final = models.BooleanField(default=True)
    # The seq of the last event that changed this message (live partials carry it).
    updated_seq = models.PositiveBigIntegerField(default=0)
    # Not a column: `tool_status` as last read from or written to the database (None:
    # not stored yet). The projection counts failed tools by how it changes.
    stored_tool_status: str | None = None

    class Meta:
        ordering = ["conversation_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "message_id"], name="message_id_unique"
            ),
            models.UniqueConstraint(fields=["conversation", "position"], name="message_position"),
        ]
        indexes = [
            models.Index(fields=["conversation", "tool_status"]),
            # A run's messages of one role, in order: its steps (S1, every assistant
            # frame), its thinking lines (docs/rendering.md#one-status-line), its status lines at
            # run end (S3). With
            # `position` last, SQLite reads them from this index already sorted, rather
            # than walking the conversation's (conversation, position) index — O(its
            # messages) per frame.
            models.Index(fields=["conversation", "role", "run_id", "position"]),
            # A tool by its call id (every tool event; a batch's as one IN list). The
            # tool_call_id index alone lost to the one above, which then walked every
            # tool of the conversation (docs/PERFORMANCE.md#p2).
            models.Index(fields=["conversation", "role", "tool_call_id"]),
        ]
        permissions = [
            ("view_secrets", "Can reveal the unmasked args and results of one tool entry (T3)"),
        ]

    def __str__(self) -> str:
        return f"{self.role} {self.message_id}"

    @classmethod
    def from_db(cls, db: str | None, field_names: Sequence[str], values: Sequence[Any]) -> Message:
        instance = super().from_db(db, field_names, values)
        # (Read from __dict__: a deferred tool_status is not loaded for it.)
        instance.stored_tool_status = loaded_values(instance).get("tool_status")
        return instance

    @classmethod
    def new(cls, conversation: Conversation, **values: Any) -> Message:
        """An unsaved message of `conversation`, as `cls(conversation=…, **values)` makes
        it, by `_bare` (the projector makes one or two a span: docs/PERFORMANCE.md#p8)."""
        values = {"parent_tool_call_id": "", "updated_seq": 0, **values}
        row = _bare(
            cls, {"id": None, "conversation_id": conversation.pk, **values}, db=None, adding=True
        )
        if row is None or len(loaded_values(row)) != len(_attnames(cls)) + 1:  # + `_state`
            return cls(conversation=conversation, **values)
        row._state.fields_cache["conversation"] = conversation
        return row

    @property
    def dom_id(self) -> str:
        """Element id built from our own primary key, never from client strings."""
        return f"m-{self.pk}"


class SecretReveal(models.Model):
    """T3: one person saw one entry's unmasked args/result/details. Append-only."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="secret_reveals"
    )
    # Re-projection rebuilds Message rows: the record keeps the conversation and the
    # message's own id, so it outlives the row it pointed at.
    message = models.ForeignKey(
        Message, on_delete=models.SET_NULL, null=True, related_name="secret_reveals"
    )
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="secret_reveals"
    )
    message_key = models.CharField(max_length=250)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at"]

    def __str__(self) -> str:
        return f"{self.user} revealed {self.message_key} at {self.at:%Y-%m-%d %H:%M:%S}"


class Run(FastLoad):
    """One agent run (one user turn), as announced by its events."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="runs")
    run_id = models.CharField(max_length=200)
    status = models.CharField(
        max_length=16, choices=ConversationStatus.choices, default=ConversationStatus.RUNNING
    )
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    error_message = models.TextField(blank=True)
    started_seq = models.PositiveBigIntegerField()
    # Run workers (chatui.agents.worker): the channel of the worker driving the run
    # ("" while queued, or when no worker holds it: an in-process or remote run),
    # its last sign of life (null: nobody watches this run), and whether its agent
    # takes interjections (so any web process knows whether the composer is open).
    worker = models.CharField(max_length=200, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    accepts_interjections = models.BooleanField(default=False)

    class Meta:
        ordering = ["conversation_id", "started_seq"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "run_id"], name="run_id_unique"),
        ]
        indexes = [
            models.Index(fields=["conversation", "started_seq"]),
            # The reaper's sweep: running runs with a heartbeat, oldest first.
            models.Index(
                fields=["heartbeat_at"],
                condition=models.Q(status="running", heartbeat_at__isnull=False),
                name="run_watched_heartbeat",
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} ({self.status})"


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiToken(models.Model):
    """A bearer token for the ingest API. Only its sha256 is stored."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=16, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @classmethod
    def issue(cls, user, name: str = "") -> tuple[ApiToken, str]:
        """Create a token; the raw key is returned once and never stored."""
        raw = "chatui_" + secrets.token_urlsafe(32)
        token = cls.objects.create(user=user, name=name, key_hash=hash_token(raw), prefix=raw[:14])
        return token, raw


class Note(models.Model):
    """An auditor's note (docs/sharing.md#notes), projected from its `audit.note` event:
    the event is the record (in the log, never edited); this row lets the admin filter
    by label and the pages show notes beside their targets without reading the log."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="notes")
    #: The seq of its `audit.note` event: one row per event, whatever re-projects it.
    seq = models.PositiveBigIntegerField()
    #: "tool_call_id", "message_id" or "run_id", and that id.
    target_kind = models.CharField(max_length=16)
    target_id = models.CharField(max_length=200)
    text = models.TextField()
    label = models.CharField(max_length=32, blank=True)
    #: The seq of the note this one corrects.
    refers_to = models.PositiveBigIntegerField(null=True, blank=True)
    author = models.CharField(max_length=150, blank=True)
    at = models.DateTimeField()

    class Meta:
        ordering = ["conversation_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "seq"], name="note_seq_unique"),
        ]
        indexes = [models.Index(fields=["label", "conversation"])]

    def __str__(self) -> str:
        return f"note #{self.seq} on {self.target_kind} {self.target_id}"


class ShareLink(models.Model):
    """A read-only link to one conversation for anyone who has it (docs/sharing.md#links).
    Only the sha256 of its 128-bit token is stored; the token is shown once."""

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="share_links"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="share_links"
    )
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    #: Calls and outcomes only: no tool arguments, results, output or errors' text.
    hide_tool_io = models.BooleanField(default=False)
    open_count = models.PositiveIntegerField(default=0, editable=False)
    last_opened_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"share of {self.conversation_id} by {self.created_by_id}"

    @classmethod
    def issue(
        cls,
        conversation: Conversation,
        user: Any,
        *,
        expires_at: datetime,
        hide_tool_io: bool = False,
    ) -> tuple[ShareLink, str]:
        """Create a link; the raw token (128 random bits) is returned once, never stored."""
        raw = secrets.token_urlsafe(16)
        link = cls.objects.create(
            conversation=conversation,
            created_by=user,
            token_hash=hash_token(raw),
            expires_at=expires_at,
            hide_tool_io=hide_tool_io,
        )
        return link, raw

    def is_active(self, now: datetime) -> bool:
        return self.revoked_at is None and self.expires_at > now


class Attachment(models.Model):
    """The bytes of an MCP result's binary part (docs/rendering.md#g21): stored once,
    addressed by their sha256 whichever conversations hold them (`AttachmentUse`). Written
    by ingest, in the event's transaction; never changed. `media_type` is what chatui
    sniffed from the bytes (chatui.ingest.attachments), never what the runtime declared."""

    sha256 = models.CharField(max_length=64, primary_key=True)
    data = models.BinaryField()
    size = models.PositiveIntegerField()
    media_type = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.sha256[:12]} ({self.media_type}, {self.size} B)"


class AttachmentUse(models.Model):
    """An attachment referenced by a conversation's log: what lets that conversation's
    readers fetch it (chatui.web.attachment_views), and no one else."""

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="attachment_uses"
    )
    attachment = models.ForeignKey(Attachment, on_delete=models.PROTECT, related_name="uses")
    #: The seq of the first event that referenced it in this conversation.
    seq = models.PositiveBigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "attachment"], name="attachment_use_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.attachment_id[:12]} in {self.conversation_id}"
