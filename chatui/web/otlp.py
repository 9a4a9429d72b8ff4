"""The OTLP/HTTP receiver (docs/events.md#otlp): `POST /api/v1/otlp/v1/traces` and
`/v1/logs`, as an OpenTelemetry exporter sends them — protobuf or JSON, gzip or not,
the API's bearer token — answered as OTLP says: 200 with an `Export…ServiceResponse` in
the request's encoding (`partial_success` counting what was rejected, and why), and
every refusal a `google.rpc.Status` (400 undecodable, 401, 405, 413, 415).
"""

from __future__ import annotations

import zlib
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from chatui.ingest import traces
from chatui.ingest.dialects import otlp
from chatui.ingest.dialects.otlp import JSON, PROTOBUF, OtlpError, Signal
from chatui.ingest.values import EventError

from .api import authenticate
from .credentials import edge_token

#: A gzip body may inflate to this many times the request limit (a model call's span
#: repeats its conversation: exports compress well).
INFLATION = 4


def answer(body: bytes, encoding: str, status: int = 200) -> HttpResponse:
    return HttpResponse(body, content_type=encoding, status=status)


def refusal(status: int, message: str, encoding: str = JSON) -> HttpResponse:
    response = answer(otlp.status_body(status, message, encoding), encoding, status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="chatui"'
    return response


def _encoding(request: HttpRequest) -> str | None:
    given = (request.content_type or "").strip().lower()
    return given if given in (PROTOBUF, JSON) else None


def _body(request: HttpRequest) -> bytes:
    limit = settings.CHATUI_MAX_REQUEST_BYTES
    try:
        raw = request.body
    except RequestDataTooBig:
        raise OtlpError(f"request body is larger than {limit} bytes", 413) from None
    if len(raw) > limit:
        raise OtlpError(f"request body is larger than {limit} bytes", 413)
    coding = request.headers.get("Content-Encoding", "").strip().lower()
    if coding in ("", "identity"):
        return raw
    if coding != "gzip":
        message = f"Content-Encoding '{coding[:40]}' is not supported; send gzip or none"
        raise OtlpError(message, 415)
    inflated_limit = INFLATION * limit
    try:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        inflated = inflater.decompress(raw, inflated_limit + 1)
        if not inflater.eof and len(inflated) <= inflated_limit:
            raise OtlpError("gzip body is truncated")
    except zlib.error as problem:
        raise OtlpError(f"body is not valid gzip: {problem}") from None
    if len(inflated) > inflated_limit:
        raise OtlpError(f"body inflates past {inflated_limit} bytes", 413)
    return inflated


def receiver(signal: Signal):
    @csrf_exempt
    def view(request: HttpRequest) -> HttpResponse:
        encoding = _encoding(request)
        if request.method != "POST":
            response = refusal(405, f"method {request.method[:20]} is not allowed; use POST")
            response["Allow"] = "POST"
            return response
        token = edge_token(request) or authenticate(request)
        if token is None:
            return refusal(401, "missing or invalid bearer token", encoding or JSON)
        if encoding is None:
            given = (request.content_type or "")[:100]
            return refusal(415, f"Content-Type must be {PROTOBUF} or {JSON}, not '{given}'")
        try:
            export = otlp.decode(signal, _body(request), encoding)
            outcome = _ingest(signal, token.user, export)
        except OtlpError as problem:
            return refusal(problem.status, problem.message, encoding)
        except EventError as problem:
            return refusal(problem.status, problem.message, encoding)
        return answer(otlp.encode(_response(signal, outcome), encoding), encoding)

    view.__name__ = f"otlp_{signal.name}"
    return view


def _ingest(signal: Signal, user: Any, export: Any) -> traces.Outcome:
    if signal is otlp.TRACES:
        grouped, outcome = traces.span_events(export)
    else:
        grouped, outcome = traces.log_events(export)
    return traces.ingest_export(user, grouped, outcome)


def _response(signal: Signal, outcome: traces.Outcome) -> Any:
    response = signal.response()
    if outcome.rejected:
        partial = response.partial_success
        if signal is otlp.TRACES:
            partial.rejected_spans = outcome.rejected
        else:
            partial.rejected_log_records = outcome.rejected
        partial.error_message = outcome.error_message
    return response


otlp_traces = receiver(otlp.TRACES)
otlp_logs = receiver(otlp.LOGS)
