"""OTLP/HTTP (OpenTelemetry's export protocol) on the wire: what a body is, and what
chatui keeps of each span and log record (docs/events.md#otlp).

Bodies are decoded by the OpenTelemetry project's own protobuf definitions
(`opentelemetry-proto`), never by hand: a protobuf body by `ParseFromString`, a JSON
body by protobuf's `json_format` after OTLP's one departure from protobuf's JSON
mapping (trace and span ids are hex, not base64) is undone. Both give the same request
message, so a span sent either way is kept the same way: `span_record` — the span in
OTLP's JSON shape, its attributes as one object. The conventions that say what a span
*means* (OTel GenAI, OpenInference, Claude Code's events) read those records; they are
their own modules (`otel_genai`, `openinference`, `claude_code_logs`).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import operator
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from chatui.ingest.values import Checker, obj

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

#: Attributes that name a conversation, in order of preference (docs/events.md#otlp).
CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id")

#: gRPC's codes, which google.rpc.Status carries, for the HTTP statuses chatui answers.
STATUS_CODES = {400: 3, 401: 16, 404: 5, 405: 12, 408: 4, 413: 8, 415: 3, 503: 14}


class OtlpError(Exception):
    """A body chatui cannot take: `status` is the HTTP answer."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Signal:
    """Traces or logs: the request and answer messages, and where their items sit."""

    name: str
    request: type[Message]
    response: type[Message]
    #: The JSON path to each item's ids: (resource list, scope list, item list).
    path: tuple[str, str, str]
    id_fields: tuple[str, ...]


TRACES = Signal(
    "traces",
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
    ("resourceSpans", "scopeSpans", "spans"),
    ("traceId", "spanId", "parentSpanId"),
)
LOGS = Signal(
    "logs",
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
    ("resourceLogs", "scopeLogs", "logRecords"),
    ("traceId", "spanId"),
)


def decode(signal: Signal, raw: bytes, encoding: str) -> Message:
    """The request message of a (decompressed) body, or OtlpError(400) naming what is wrong."""
    request = signal.request()
    if encoding == PROTOBUF:
        try:
            request.ParseFromString(raw)
        except DecodeError as problem:
            raise OtlpError(
                f"body is not a valid protobuf {signal.request.__name__}: {problem}"
            ) from None
        return request
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as problem:
        raise OtlpError(f"body is not JSON: {str(problem)[:200]}") from None
    if not isinstance(data, dict):
        raise OtlpError(f"body must be a JSON object ({signal.request.__name__})")
    _ids_to_base64(signal, data)
    try:
        # Unknown fields are ignored, as OTLP asks of a receiver (newer senders add some).
        json_format.ParseDict(data, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as problem:
        raise OtlpError(
            f"body is not an OTLP {signal.name} request: {str(problem)[:300]}"
        ) from None
    return request


def _ids_to_base64(signal: Signal, data: dict[str, Any]) -> None:
    """OTLP/JSON writes trace and span ids as hex; protobuf's JSON reads bytes as base64."""
    resources, scopes, items = signal.path
    for resource in _list(data, resources):
        for scope in _list(resource, scopes):
            for item in _list(scope, items):
                for name in signal.id_fields:
                    _hex_field(item, name)
                for link in _list(item, "links"):
                    _hex_field(link, "traceId")
                    _hex_field(link, "spanId")


def _list(container: Any, name: str) -> list[Any]:
    value = container.get(name) if isinstance(container, dict) else None
    return value if isinstance(value, list) else []


def _hex_field(item: Any, name: str) -> None:
    if not isinstance(item, dict) or not isinstance(item.get(name), str):
        return
    try:
        item[name] = base64.b64encode(bytes.fromhex(item[name])).decode("ascii")
    except ValueError:
        raise OtlpError(
            f"'{name}' must be hex, as OTLP/JSON writes ids: {item[name][:64]!r}"
        ) from None


def encode(message: Message, encoding: str) -> bytes:
    """An answer in the request's encoding (OTLP/JSON: ids would be hex, but answers hold none)."""
    if encoding == PROTOBUF:
        return message.SerializeToString()
    return json.dumps(json_format.MessageToDict(message)).encode()


def status_body(http_status: int, message: str, encoding: str) -> bytes:
    """A refusal as OTLP answers one: a google.rpc.Status."""
    status = Status(code=STATUS_CODES.get(http_status, 2), message=message)
    return encode(status, encoding)


# -- what chatui keeps of a span or a log record --------------------------------------


def any_value(value: Any) -> Any:
    """An OTLP AnyValue as JSON: bytes as base64, non-finite floats as text."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        number = value.double_value
        return number if math.isfinite(number) else str(number)
    if kind == "array_value":
        return [any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return None


def attributes(pairs: Any) -> dict[str, Any]:
    """OTLP's key-value list (a map: its order means nothing) as an object, its keys
    sorted: as a span's canonical JSON, which is logged as it is (`span_record`)."""
    return {pair.key: any_value(pair.value) for pair in sorted(pairs, key=_KEY)}


_KEY = operator.attrgetter("key")


def span_record(span: Any) -> dict[str, Any]:
    """The span in OTLP's JSON shape (hex ids, times as decimal text), attributes as an
    object. Every object's keys in sorted order: the span is logged as its canonical
    JSON (chatui.ingest.traces), which reads back in that order, so the projector reads
    the same span live as when it re-projects."""
    record: dict[str, Any] = {
        "attributes": attributes(span.attributes),
        "endTimeUnixNano": str(span.end_time_unix_nano),
    }
    if span.events:
        record["events"] = [
            {
                "attributes": attributes(event.attributes),
                "name": event.name,
                "timeUnixNano": str(event.time_unix_nano),
            }
            for event in span.events
        ]
    record |= {"kind": span.kind, "name": span.name}
    if span.parent_span_id:
        record["parentSpanId"] = span.parent_span_id.hex()
    record |= {"spanId": span.span_id.hex(), "startTimeUnixNano": str(span.start_time_unix_nano)}
    if span.status.code or span.status.message:
        record["status"] = {"code": span.status.code, "message": span.status.message}
    record["traceId"] = span.trace_id.hex()
    return record


def log_record(record: Any) -> dict[str, Any]:
    kept: dict[str, Any] = {
        "timeUnixNano": str(record.time_unix_nano or record.observed_time_unix_nano),
        "severityText": record.severity_text,
        "body": any_value(record.body) if record.HasField("body") else None,
        "attributes": attributes(record.attributes),
    }
    if record.event_name:
        kept["eventName"] = record.event_name
    if record.trace_id:
        kept["traceId"] = record.trace_id.hex()
        kept["spanId"] = record.span_id.hex()
    return kept


def scope_of(scope: Any) -> dict[str, str]:
    return {"name": scope.name, "version": scope.version}


# -- as logged events ------------------------------------------------------------------


def _hex_id(value: Any, digits: int) -> bool:
    return isinstance(value, str) and len(value) == digits and hex_ok(value)


def span_object(value: Any) -> str | None:
    """A kept span (`span_record`): what the projector reads of it must be there."""
    if not isinstance(value, dict):
        return "must be an object"
    if not _hex_id(value.get("traceId"), 32) or not _hex_id(value.get("spanId"), 16):
        return "must hold 'traceId' (32 hex digits) and 'spanId' (16 hex digits)"
    parent = value.get("parentSpanId")
    if parent is not None and not _hex_id(parent, 16):
        return "field 'parentSpanId' must be 16 hex digits"
    return _common_shape(value, "startTimeUnixNano", "endTimeUnixNano")


def log_object(value: Any) -> str | None:
    if not isinstance(value, dict):
        return "must be an object"
    return _common_shape(value, "timeUnixNano")


def _common_shape(value: dict[str, Any], *time_fields: str) -> str | None:
    if not isinstance(value.get("attributes", {}), dict):
        return "field 'attributes' must be an object"
    for name in time_fields:
        if not str(value.get(name, "0")).isdigit():
            return f"field '{name}' must be decimal digits (nanoseconds)"
    events = value.get("events", [])
    if not isinstance(events, list) or not all(
        isinstance(event, dict) and isinstance(event.get("attributes", {}), dict)
        for event in events
    ):
        return "field 'events' must be an array of objects with 'attributes' objects"
    if not isinstance(value.get("status", {}), dict):
        return "field 'status' must be an object"
    return None


#: A span and a log record as logged (docs/events.md#otlp): the item as received, its
#: resource's attributes and its instrumentation scope. Validated like every event.
OTEL_SCHEMAS: dict[str, dict[str, tuple[Checker, bool]]] = {
    "otel.span": {"span": (span_object, True), "resource": (obj, False), "scope": (obj, False)},
    "otel.log": {"record": (log_object, True), "resource": (obj, False), "scope": (obj, False)},
}


# -- which conversation ----------------------------------------------------------------


@dataclass
class TraceBatch:
    """One export's spans by id, to find a span's conversation through its ancestors."""

    spans: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def add(self, record: dict[str, Any]) -> None:
        self.spans[(record["traceId"], record["spanId"])] = record

    def conversation_key(self, record: dict[str, Any], resource: dict[str, Any]) -> str:
        """`gen_ai.conversation.id`, else `session.id` — on the span, an ancestor in
        this export, or the resource — else the trace id."""
        seen: set[str] = set()
        current: dict[str, Any] | None = record
        while current is not None and current["spanId"] not in seen:
            seen.add(current["spanId"])
            found = conversation_id(current["attributes"])
            if found:
                return found
            parent = current.get("parentSpanId")
            current = self.spans.get((record["traceId"], parent)) if parent else None
        return conversation_id(resource) or f"trace:{record['traceId']}"


def conversation_id(attrs: dict[str, Any]) -> str:
    for key in CONVERSATION_KEYS:
        value = attrs.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            return f"{key}:{value}"
    return ""


def decoded_json(value: Any) -> Any:
    """An attribute that holds JSON text, decoded; anything else as it is."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def hex_ok(value: str) -> bool:
    try:
        binascii.unhexlify(value)
    except (binascii.Error, ValueError):
        return False
    return True
