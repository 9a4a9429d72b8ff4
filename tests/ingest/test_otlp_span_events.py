"""An OTLP span's event made the short way (`traces.span_event`: its JSON written once,
docs/PERFORMANCE.md#p8) is the event the general way makes (`normalise_event`), and the
log keeps it as the projector read it (docs/events.md#otlp)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from chatui.fields import EncodedJSON
from chatui.ingest import traces
from chatui.ingest.dialects import otlp
from chatui.ingest.events import normalise_event
from chatui.ingest.values import EventError, canonical_json
from chatui.models import Event

CAPTURE = Path(__file__).resolve().parents[1] / "fixtures" / "otlp" / "otlp_pydantic_ai_traces.json"
LIMIT = 1024 * 1024


def export(data: dict | None = None) -> ExportTraceServiceRequest:
    raw = json.dumps(data).encode() if data is not None else CAPTURE.read_bytes()
    return otlp.decode(otlp.TRACES, raw, otlp.JSON)


def raw_events(request: ExportTraceServiceRequest) -> list[dict]:
    grouped, _ = traces.span_events(request)
    return [raw for entries in grouped.values() for _, raw in entries]


def test_a_spans_event_made_the_short_way_is_the_general_ways():
    encoded: dict[int, str] = {}
    raws = raw_events(export())
    assert len(raws) > 5
    for index, raw in enumerate(raws):
        short = traces.span_event(raw, index, LIMIT, encoded)
        general = normalise_event(raw, index, max_event_bytes=LIMIT)
        assert short == general  # type, payload, body hash, ids, timestamp, index
        assert type(short.payload) is EncodedJSON
        # Its text is the payload's canonical JSON, and reads back in the same key order.
        assert short.payload.text == canonical_json(general.payload)
        assert json.dumps(json.loads(short.payload.text)) == json.dumps(short.payload)


def test_a_span_is_kept_with_every_objects_keys_sorted():
    """OTLP's attributes are a map (their order means nothing): kept sorted, as the
    canonical JSON the log stores, so a span reads back as the projector read it."""
    data = json.loads(CAPTURE.read_text())
    span = data["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    span["attributes"] = [
        {"key": "zeta", "value": {"stringValue": "z"}},
        {
            "key": "alpha",
            "value": {
                "kvlistValue": {
                    "values": [
                        {"key": "y", "value": {"intValue": "1"}},
                        {"key": "b", "value": {"stringValue": "<script>alert(1)</script>"}},
                    ]
                }
            },
        },
        *span["attributes"],
    ]
    record = next(
        raw["span"] for raw in raw_events(export(data)) if "zeta" in raw["span"]["attributes"]
    )
    assert list(record) == sorted(record)
    assert list(record["attributes"]) == sorted(record["attributes"])
    assert list(record["attributes"]["alpha"]) == ["b", "y"]


@pytest.mark.parametrize(
    ("text", "status"),
    [("a NUL \x00 in an attribute", 400), ("x" * (LIMIT + 1), 413)],
)
def test_what_the_short_way_cannot_keep_is_refused_as_the_general_way_refuses_it(text, status):
    data = json.loads(CAPTURE.read_text())
    span = data["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"].append({"key": "hostile", "value": {"stringValue": text}})
    raw = next(raw for raw in raw_events(export(data)) if "hostile" in raw["span"]["attributes"])
    with pytest.raises(EventError) as short:
        traces.span_event(raw, 3, LIMIT, {})
    with pytest.raises(EventError) as general:
        normalise_event(raw, 3, max_event_bytes=LIMIT)
    assert (short.value.status, short.value.message, short.value.field) == (
        status,
        general.value.message,
        general.value.field,
    )


@pytest.mark.django_db
def test_a_logged_span_reads_back_as_it_was_ingested(conversation):
    from chatui.ingest.service import ingest_normalised

    raws = raw_events(export())
    events = [traces.span_event(raw, n, LIMIT, {}) for n, raw in enumerate(raws)]
    ingest_normalised(conversation, events)
    stored = {row.event_id: row for row in Event.objects.filter(conversation=conversation)}
    for event in events:
        row = stored[event.event_id]
        assert json.dumps(row.payload) == json.dumps(event.payload)  # keys in the same order
        assert row.body_hash == event.body_hash


@pytest.mark.django_db
def test_v1_a_spans_chain_uses_its_text_and_is_the_reference_arithmetic(conversation):
    """The chain splices a span's canonical text into the event's canonical form
    rather than encoding the payload again: the hashes are RFC 8785's all the same,
    also for a span whose floats or keys make the short canonical form step aside."""
    import hashlib

    import rfc8785

    from chatui.ingest.service import ingest_normalised
    from chatui.read.serializers import event_to_dict

    data = json.loads(CAPTURE.read_text())
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[0]["attributes"] += [
        {"key": "ratio", "value": {"doubleValue": 2.0}},  # RFC 8785 writes 2, Python 2.0
        {"key": "tiny", "value": {"doubleValue": 1.5e-07}},
    ]
    spans[1]["attributes"].append({"key": "\uff01\U0001f600", "value": {"stringValue": "k"}})
    events = [
        traces.span_event(raw, n, LIMIT, {}) for n, raw in enumerate(raw_events(export(data)))
    ]
    assert all(event.payload.canonical for event in events)
    ingest_normalised(conversation, events)
    previous = bytes(32)
    for row in Event.objects.filter(conversation=conversation).order_by("seq"):
        served = json.loads(json.dumps(event_to_dict(row)))
        content = hashlib.sha256(rfc8785.dumps(served)).digest()
        previous = hashlib.sha256(previous + content).digest()
        assert (row.content_hash, row.chain_hash) == (content.hex(), previous.hex())
