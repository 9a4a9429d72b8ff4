"""The ingest API (docs/events.md#http-api): JSON in, JSON out, bearer tokens.

Views are thin: authenticate, decode, call a selector or `ingest`, answer.
Every failure is a JSON `{"error", "index"?, "field"?}` with a 4xx status: a wrong
method (405, with `Allow`), a body that is not `application/json` (415), and a path
under /api/ that names no endpoint (404) included.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import RequestDataTooBig
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt

from chatui.ingest import approvals, signing
from chatui.ingest import conversations as services
from chatui.ingest.dialects import agui
from chatui.ingest.service import ingest, refuse_before_the_body
from chatui.ingest.session_records import ingest_records, is_session_body
from chatui.ingest.values import (
    MAX_SEQ,
    MAX_TITLE_CHARS,
    EventError,
    decode_json,
    parse_seq,
    unstorable,
)
from chatui.models import ApiToken
from chatui.read import selectors
from chatui.read.serializers import conversation_to_dict, event_to_dict, message_to_dict

from .credentials import bearer_credential, edge_token
from .tokens import token_for

JSON_CONTENT_TYPE = "application/json"
#: docs/events.md#ag-ui: an AG-UI agent's stream, posted exactly as it streamed it.
SSE_CONTENT_TYPE = "text/event-stream"

View = Callable[..., JsonResponse]


#: `JsonResponse`'s encoder, made once: it keeps nothing between calls.
_ENCODER = DjangoJSONEncoder()


class JsonAnswer(JsonResponse):
    """`JsonResponse(data, status=status)`, byte for byte, made for less: the encoder
    is not made anew for each answer, and the body is handed over as bytes (the
    encoder's output is ASCII), not as text whose charset is looked up in the
    Content-Type. The API's hot answers (docs/PERFORMANCE.md#p2: one per single-event request)."""

    def __init__(self, data: dict, status: int = 200) -> None:
        body = _ENCODER.encode(data).encode("ascii")
        HttpResponse.__init__(self, body, content_type=JSON_CONTENT_TYPE, status=status)


def error(message: str, status: int = 400, **extra: Any) -> JsonResponse:
    return JsonAnswer({"error": message, **extra}, status=status)


def authenticate(request: HttpRequest) -> ApiToken | None:
    credential = bearer_credential(request.headers.get("Authorization", ""))
    return token_for(credential) if credential else None


def api_view(*methods: str) -> Callable[[View], View]:
    """CSRF-exempt (tokens, not cookies), token-authenticated, errors as JSON."""

    allowed = ", ".join(methods)

    def decorate(view: View) -> View:
        @csrf_exempt
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
            if request.method not in methods:
                response = error(f"method {request.method[:20]} is not allowed; use {allowed}", 405)
                response["Allow"] = allowed
                return response
            # The edge (chatui/server/edge.py) checked the token before the body was read and
            # passed it on; requests that did not pass the edge (the test client) are
            # checked here.
            token = edge_token(request) or authenticate(request)
            if token is None:
                response = error("missing or invalid bearer token", 401)
                response["WWW-Authenticate"] = 'Bearer realm="chatui"'
                return response
            request.user = token.user
            try:
                return view(request, *args, **kwargs)
            except EventError as problem:
                return JsonAnswer(problem.as_dict(), status=problem.status)

        return wrapper

    return decorate


def read_json(request: HttpRequest) -> Any:
    """Decode the body, refusing what is too large, not UTF-8, not JSON or too deep."""
    _require_json_content_type(request)
    text = _body_text(request)
    if not text.strip():
        raise EventError("request body is empty; expected JSON")
    return decode_json(text, "request body", max_depth=settings.CHATUI_MAX_JSON_DEPTH)


def read_events(request: HttpRequest) -> Any:
    """The events POST's body: JSON, or (docs/events.md#ag-ui) the SSE text an AG-UI agent
    streamed, read as the list of its events."""
    if (request.content_type or "").strip().lower() != SSE_CONTENT_TYPE:
        return read_json(request)
    text = _body_text(request)
    if not text.strip():
        raise EventError("request body is empty; expected the SSE text of an AG-UI stream")
    return agui.parse_sse(text)


def _body_text(request: HttpRequest) -> str:
    """The body as text, refusing what is too large or not UTF-8."""
    limit = settings.CHATUI_MAX_REQUEST_BYTES
    try:
        declared = int(_declared_length(request) or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        raise EventError(f"request body is larger than {limit} bytes", status=413)
    try:
        raw = request.body
    except RequestDataTooBig:
        raise EventError(f"request body is larger than {limit} bytes", status=413) from None
    if len(raw) > limit:
        raise EventError(f"request body is larger than {limit} bytes", status=413)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as problem:
        raise EventError(f"request body is not valid UTF-8 (byte {problem.start})") from None
    return text


def _declared_length(request: HttpRequest) -> str | None:
    """The Content-Length header. The routed request has it at hand (`declared_length`,
    chatui.server.ingest_route.RoutedRequest, which makes no META unless asked); others in
    META — not `request.headers`, which builds a mapping of every header, per request."""
    declared = getattr(request, "declared_length", False)
    return request.META.get("CONTENT_LENGTH") if declared is False else declared


def _require_json_content_type(request: HttpRequest) -> None:
    """No Content-Type is taken as JSON, and so is `application/json; charset=utf-8`;
    anything else (curl's `-d` sends a form type) is a 415 that says what to send."""
    given = (request.content_type or "").strip().lower()
    if given and given != JSON_CONTENT_TYPE:
        raise EventError(
            f"Content-Type must be {JSON_CONTENT_TYPE}, not '{given[:100]}' "
            f"(with curl: -H 'Content-Type: {JSON_CONTENT_TYPE}'; an AG-UI stream's SSE text "
            f"is posted as {SSE_CONTENT_TYPE} to …/events)",
            status=415,
        )


@api_view("GET", "POST")
def conversations(request: HttpRequest) -> JsonResponse:
    if request.method == "GET":
        listed = selectors.conversations_for(request.user).select_related("owner")
        return JsonResponse({"conversations": [conversation_to_dict(c) for c in listed]})
    body = read_json(request) if request.body else {}
    if not isinstance(body, dict):
        raise EventError("expected a JSON object")
    found = unstorable(body)
    if found is not None:
        raise EventError(f"field '{found[0]}' {found[1]}", field=found[0])
    title = body.get("title", "")
    if not isinstance(title, str) or len(title) > MAX_TITLE_CHARS:
        raise EventError(
            f"field 'title' must be a string of at most {MAX_TITLE_CHARS} characters",
            field="title",
        )
    owner = request.user
    if body.get("owner") is not None:
        owner = _owner_from(request, body["owner"])
    conversation = services.create_conversation(owner=owner, title=title)
    data = conversation_to_dict(conversation)
    return JsonResponse(
        {key: data[key] for key in ("id", "title", "url", "created_at")}, status=201
    )


def _owner_from(request: HttpRequest, username: Any):
    if not isinstance(username, str):
        raise EventError("field 'owner' must be a username", field="owner")
    if username != request.user.get_username() and not request.user.has_perm("chatui.ingest_any"):
        raise EventError(
            "creating a conversation for another user needs the chatui.ingest_any permission",
            field="owner",
            status=403,
        )
    owner = get_user_model().objects.filter(username=username, is_active=True).first()
    if owner is None:
        raise EventError(f"no active user named '{username[:150]}'", field="owner")
    return owner


@api_view("GET")
def conversation_detail(request: HttpRequest, conversation_id) -> JsonResponse:
    conversation = selectors.conversation_for_writer(request.user, conversation_id)
    if conversation is None:
        return error("conversation not found", 404)
    # docs/events.md#approvals: decided on read, nobody need watch
    approvals.expire_overdue(conversation)
    messages = [message_to_dict(m) for m in selectors.messages_of(conversation)]
    return JsonResponse(
        {
            "conversation": conversation_to_dict(conversation),
            "messages": messages,
            "last_seq": conversation.last_seq,
        }
    )


@api_view("GET", "POST")
def conversation_events(request: HttpRequest, conversation_id) -> JsonResponse:
    # A POST's conversation goes only to `ingest`, which checks it under its lock.
    conversation = selectors.conversation_for_writer(
        request.user, conversation_id, checked_by_ingest=request.method == "POST"
    )
    if conversation is None:
        return error("conversation not found", 404)
    if request.method == "POST":
        try:
            body = read_events(request)
        except EventError:
            refuse_before_the_body(conversation, check_writer=request.user)
            raise
        if is_session_body(body):  # docs/events.md#sessions: raw records, translated here
            return JsonAnswer(ingest_records(conversation, body, check_writer=request.user))
        result = ingest(conversation, body, from_runtime=True, check_writer=request.user)
        return JsonAnswer(result.as_dict())
    after = parse_seq(request.GET.get("after", "0"))
    if after is None:
        return error(
            f"'after' must be a whole number from 0 to {MAX_SEQ}, in ASCII digits", field="after"
        )
    # docs/events.md#approvals: a runtime reading its feed learns of an expiry that is due, as every
    # other read path does (the approval clock records it at the deadline besides).
    approvals.expire_overdue(conversation)
    events = list(selectors.events_after(conversation, after))
    return JsonResponse(
        {
            "events": [event_to_dict(event) for event in events],
            "last_seq": conversation.last_seq,
            "has_more": bool(events) and events[-1].seq < conversation.last_seq,
        }
    )


@csrf_exempt
def keys(request: HttpRequest) -> JsonResponse:
    """The public key checkpoints are signed with, in C2SP's verifier-key form
    (`chatui-verify --key`, docs/auditing.md#the-signing-key), to anyone: it proves, it
    grants nothing."""
    if request.method != "GET":
        response = error(f"method {request.method[:20]} is not allowed; use GET", 405)
        response["Allow"] = "GET"
        return response
    signer = signing.signer()
    return JsonAnswer(
        {"keys": [{"name": signer.name, "algorithm": "ed25519", "public_key": signer.verifier_key}]}
    )


@csrf_exempt
def not_found(request: HttpRequest) -> JsonResponse:
    """Any path under /api/ that names no endpoint: JSON like every other API answer."""
    return error(f"no API endpoint at '{request.path[:200]}'", 404)


def is_api_request(request: HttpRequest) -> bool:
    return request.path == "/api" or request.path.startswith("/api/")


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler400: Django's own refusals (e.g. more than DATA_UPLOAD_MAX_NUMBER_FIELDS
    query parameters) are JSON under /api/ too; pages keep Django's page."""
    if is_api_request(request):
        return error("bad request: " + (str(exception) if exception else "refused")[:200])
    return defaults.bad_request(request, exception)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404: an Http404 raised under /api/ answers JSON."""
    if is_api_request(request):
        return not_found(request)
    return defaults.page_not_found(request, exception)
