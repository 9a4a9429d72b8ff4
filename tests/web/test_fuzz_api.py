"""Property-based fuzzing of the event contract and the HTTP API (issue 9; SEC6,
docs/events.md#reliability).

Hypothesis generates hostile input: random JSON holding lone surrogates, NULs, giant
ints, 1e999 / NaN, deep nesting, wrong types and over-long strings; random event types
and AgentSpine aliases; random methods, content types, paths and `after=`/`before=`
values. The properties:

- no 5xx, ever, and every 4xx is JSON `{"error", "index"?, "field"?}`;
- a rejected batch changes nothing (event count and last_seq unchanged);
- whatever was accepted renders: the page, `/transcript`, `/earlier?before=`, the
  messages / events / OTLP exports, the socket replay (`frames.replay_frame`, from 0
  and piecemeal) and the API's reads; and stored numbers that ingest would refuse
  today render everywhere, the admin audit page included.

Inputs generated per run (`max_examples` below; fresh ones every run, since CI should
explore, so the run is not derandomized: a failure prints the example and a
`@reproduce_failure` blob to replay it):

    test_fuzz_parse_events_refuses_cleanly_or_yields_storable_events   3,600
    test_fuzz_post_events_never_fails_and_what_it_accepts_renders        700
    test_fuzz_valid_batches_are_accepted_and_render                      100
    test_fuzz_mcp_results_are_accepted_render_and_serve                  120
    test_fuzz_after_and_before_query_parameters                        1,500
    test_fuzz_create_conversation                                        900
    test_fuzz_methods_content_types_and_paths                          1,300
    test_fuzz_stored_numbers_of_any_shape_render                          60
                                                                       -----
                                                                       8,280

The Django test client drives the real views and database (no live server). On the
2-core machine the file costs about 65 s of CPU (about 90 s wall with the machine
shared at a load of 3). Counts are examples, not events: a batch may hold three.
"""

from __future__ import annotations

import json
import math
import re
import sys
import uuid
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from chatui.ingest.events import parse_events
from chatui.ingest.service import reproject
from chatui.ingest.values import (
    MAX_DURATION_MS,
    MAX_ID_CHARS,
    MAX_SEQ,
    MAX_TOKENS,
    EventError,
    canonical_json,
    unstorable,
)
from chatui.models import Conversation, Event, Message
from tests.support.fuzz_events import (
    event,
    json_value,
    mcp_result,
    number,
    scalar,
    text,
)
from tests.support.render import render_everything

pytestmark = pytest.mark.django_db


def fuzz(examples: int):
    """Hypothesis settings for a fuzz test: no deadline (the machine is shared), and
    the test's fixtures (one user, one client) deliberately serve every example."""
    return settings(
        max_examples=examples,
        deadline=None,
        print_blob=True,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
            HealthCheck.filter_too_much,
        ],
    )


# -- hostile values -------------------------------------------------------------------
# Alphabets are sampled rather than drawn from all of Unicode: generation dominates
# the cost of an example, and these characters are the ones that break things.


# -- values that fit the contract (so batches are accepted often enough to render) ----


def batch(*, hostility: int) -> st.SearchStrategy:
    events = st.lists(event(hostility=hostility), min_size=1, max_size=3)
    shapes = [
        event(hostility=hostility),
        events,
        events.map(lambda listed: {"events": listed}),
    ]
    if hostility:
        shapes.append(json_value)
    return st.one_of(shapes)


@contextmanager
def any_int_digits():
    """Let json.dumps write ints past Python's 4300-digit guard (the server keeps it)."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(limit)


def as_json_text(value: Any) -> bytes:
    """JSON as a hostile client writes it: inf as 1e999 (Python reads it back as
    inf), NaN as the bare word, lone surrogates as \\ud800 escapes."""
    with any_int_digits():
        encoded = json.dumps(value)
    return encoded.replace("-Infinity", "-1e999").replace("Infinity", "1e999").encode()


# -- what every answer must be ----------------------------------------------------------


def assert_json_answer(response) -> Any:
    assert response.status_code < 500, response.content[:500]
    assert response["Content-Type"] == "application/json", response.content[:200]
    body = response.json()
    if response.status_code >= 400:
        assert isinstance(body.get("error"), str) and body["error"], body
        assert set(body) <= {"error", "index", "field"}, body
    return body


def assert_otlp_answer(response) -> None:
    """The OTLP receiver speaks OTLP, not chatui's API (docs/events.md#otlp): a refusal
    is a `google.rpc.Status`, as JSON `{"code", "message"}` or as protobuf, in the
    encoding the request used."""
    assert response.status_code < 500, response.content[:500]
    if response["Content-Type"] == "application/x-protobuf":
        return
    assert response["Content-Type"] == "application/json", response.content[:200]
    body = response.json()
    if response.status_code >= 400:
        assert isinstance(body.get("code"), int) and body["code"] > 0, body
        assert isinstance(body.get("message"), str) and body["message"], body
        assert set(body) <= {"code", "message", "details"}, body


def log_state(conversation: Conversation) -> tuple[int, int]:
    conversation.refresh_from_db()
    return Event.objects.filter(conversation=conversation).count(), conversation.last_seq


@pytest.fixture
def viewer(db) -> Client:
    """A superuser's client: it may open every page and the admin audit page."""
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="root-pass-1"))
    return client


# -- the contract, without HTTP -----------------------------------------------------------


@fuzz(3600)
@given(body=event(hostility=50) | json_value)
def test_fuzz_parse_events_refuses_cleanly_or_yields_storable_events(body):
    """One event at a time (the HTTP test below posts batches). Input from in-process
    callers too (agents, importers): inf, NaN and ints past 4300 digits need no JSON
    text to reach `ingest`."""
    try:
        events = parse_events(body, max_event_bytes=1024 * 1024)
    except EventError as problem:
        assert problem.status in (400, 413)
        assert problem.message
        assert problem.index is None or isinstance(problem.index, int)
        assert problem.field is None or isinstance(problem.field, str)
        json.dumps(problem.as_dict())
        return
    for normalised in events:
        assert unstorable(normalised.payload) is None
        canonical_json(normalised.payload).encode()
        for name in ("event_id", "run_id"):
            assert len(getattr(normalised, name) or "") <= MAX_ID_CHARS
        payload = normalised.payload
        for name in ("tool_call_id", "parent_tool_call_id", "message_id", "tool_name"):
            assert len(payload.get(name, "")) <= MAX_ID_CHARS
        for name, limit in (("duration_ms", MAX_DURATION_MS), ("tokens", MAX_TOKENS)):
            if name in payload:
                assert math.isfinite(payload[name]) and 0 <= payload[name] <= limit
        if "progress" in payload:
            assert 0 <= payload["progress"] <= 1


# -- the HTTP API -----------------------------------------------------------------------------


def post_and_check(api, conversation: Conversation, body: bytes) -> dict:
    """POST a batch: a refusal must change nothing."""
    before = (conversation.events.count(), conversation.last_seq)
    response = api.post_events(conversation, raw=body)
    answer = assert_json_answer(response)
    if response.status_code >= 400:
        assert log_state(conversation) == before
    else:
        assert set(answer) == {"accepted", "duplicates", "last_seq"}
        assert log_state(conversation)[1] == answer["last_seq"]
    return answer


def assert_renders(api, viewer, conversation: Conversation) -> None:
    render_everything(viewer, conversation, admin=False)
    assert_json_answer(api.get(f"/api/v1/conversations/{conversation.pk}"))
    assert_json_answer(api.get(f"/api/v1/conversations/{conversation.pk}/events"))


@fuzz(700)
@given(body=batch(hostility=20))
def test_fuzz_post_events_never_fails_and_what_it_accepts_renders(api, user, viewer, body):
    conversation = Conversation.objects.create(owner=user)
    if post_and_check(api, conversation, as_json_text(body)).get("accepted"):
        assert_renders(api, viewer, conversation)


@fuzz(100)
@given(batches=st.lists(batch(hostility=0), min_size=1, max_size=3))
def test_fuzz_valid_batches_are_accepted_and_render(api, user, viewer, batches):
    """Batches that fit the contract, posted one after another into one conversation:
    accepted (or a 409 for an event_id reused with another body), and rendered."""
    conversation = Conversation.objects.create(owner=user)
    for body in batches:
        answer = post_and_check(api, conversation, as_json_text(body))
        assert "accepted" in answer or "already used with a different body" in answer["error"]
    assert_renders(api, viewer, conversation)


@fuzz(120)
@given(result=mcp_result, digest=st.sampled_from(["a" * 64, "0" * 64]) | st.text(max_size=70))
def test_fuzz_mcp_results_are_accepted_render_and_serve(api, user, viewer, result, digest):
    """G21 (docs/rendering.md#g21): any CallToolResult-shaped result — binary parts of any
    bytes, not base64, made-up references, parts that are not MCP's — is accepted, renders
    on every surface, and each attachment the page shows is served; any other address under
    attachments/ is a 404, never a 5xx."""
    conversation = Conversation.objects.create(owner=user)
    started = {"type": "agent.tool.started", "tool_call_id": "m", "tool_name": "mcp"}
    completed = {"type": "agent.tool.completed", "tool_call_id": "m", "result": result}
    answer = post_and_check(api, conversation, as_json_text([started, completed]))
    assert answer.get("accepted") == 2, answer
    assert_renders(api, viewer, conversation)
    page = viewer.get(f"/c/{conversation.pk}/").content.decode()
    for src in re.findall(r'(?:src|href)="(/c/[^"]+/attachments/[0-9a-f]{64})"', page):
        assert viewer.get(src).status_code == 200, src
    assert "data:" not in page[page.index('id="transcript"') :]
    probe = viewer.get(f"/c/{conversation.pk}/attachments/{quote(digest, safe='')}")
    assert probe.status_code == 404


QUERY_VALUE = st.one_of(
    st.text(max_size=25),
    st.integers(-5, 10**30).map(str),
    st.sampled_from(["²", "١٢", "１", "0x10", "1e3", " 1", "1 ", "+1", "٣", "9223372036854775807"]),
    st.text(st.characters(categories=["Nd", "No"]), min_size=1, max_size=5),
)


@fuzz(1500)
@given(value=QUERY_VALUE, api_side=st.booleans())
def test_fuzz_after_and_before_query_parameters(api, user, viewer, value, api_side):
    conversation = Conversation.objects.filter(owner=user).first()
    if conversation is None:
        conversation = Conversation.objects.create(owner=user)
        api.post_events(conversation, [{"type": "user.message", "content": "x"}] * 3)
    fits = value.isascii() and value.isdigit() and len(value) <= 19 and int(value) <= MAX_SEQ
    if api_side:
        path = f"/api/v1/conversations/{conversation.pk}/events"
        answer = assert_json_answer(api.get(path, after=value))
        assert ("events" in answer) == fits, answer
    else:
        earlier = viewer.get(f"/c/{conversation.pk}/earlier", {"before": value})
        assert earlier.status_code == (200 if fits else 400)


@fuzz(900)
@given(
    body=st.one_of(
        st.fixed_dictionaries({}, optional={"title": text | json_value, "owner": text | number}),
        json_value,
    )
)
def test_fuzz_create_conversation(api, user, body):
    before = Conversation.objects.count()
    response = api.post("/api/v1/conversations", raw=as_json_text(body))
    answer = assert_json_answer(response)
    if response.status_code == 201:
        created = Conversation.objects.get(pk=answer["id"])
        # What the server decoded: a surrogate *pair* sent as two escapes arrives as one
        # astral character.
        sent = json.loads(json.dumps(body.get("title", "")))
        assert created.title == sent.strip()
    else:
        assert Conversation.objects.count() == before


METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "TRACE", "PROPFIND"]
CONTENT_TYPES = st.one_of(
    st.sampled_from(
        [
            "",
            "application/json",
            "application/json; charset=utf-8",
            "APPLICATION/JSON",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "text/plain",
            "application/x-ndjson",
            "application/json-patch+json",
            ";;;",
        ]
    ),
    st.text(st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=30),
)
API_PATH = st.one_of(
    st.sampled_from(
        [
            "conversations",
            "conversations/{id}",
            "conversations/{id}/events",
            "conversations/{id}/notes",
            "conversations/{id}/shares",
            "shares/1",
            "keys",
            "otlp/v1/traces",
            "otlp/v1/logs",
        ]
    ),
    st.lists(st.text(max_size=12), max_size=4).map(lambda parts: "/".join(map(quote, parts))),
    st.builds("conversations/{}/events".format, st.text(max_size=40).map(quote)),
)


OTLP_ENDPOINTS = frozenset({"/api/v1/otlp/v1/traces", "/api/v1/otlp/v1/logs"})


@fuzz(1300)
@given(method=st.sampled_from(METHODS), path=API_PATH, content_type=CONTENT_TYPES, body=scalar)
@example(method="GET", path="otlp/v1/", content_type="", body=None)  # CI found: not OTLP's path
def test_fuzz_methods_content_types_and_paths(api, user, method, path, content_type, body):
    conversation = Conversation.objects.filter(owner=user).first() or Conversation.objects.create(
        owner=user
    )
    url = "/api/v1/" + path.format(id=conversation.pk)
    before = log_state(conversation)
    response = api.client.generic(
        method, url, as_json_text(body), content_type=content_type, headers=api.headers
    )
    if method == "HEAD":
        assert response.status_code < 500
    elif url in OTLP_ENDPOINTS:
        # Only the receiver's own two paths speak OTLP; any other path under otlp/ is
        # chatui's plain 404, as every unknown API path is.
        assert_otlp_answer(response)
    else:
        assert_json_answer(response)
    if response.status_code >= 400:
        assert log_state(conversation) == before


# -- stored data ingest would refuse today (old rows) ----------------------------------------

STORABLE_NUMBER = st.one_of(
    st.integers(-(10**14), 10**14),
    st.integers(300, 4300).map(lambda digits: 10**digits - 1),  # JSON text holds them
    st.floats(allow_nan=False, allow_infinity=False),  # SQLite's JSON_VALID refuses inf
    st.booleans(),
    st.text(max_size=5),
    st.none(),
)
NUMBER_KEYS = ("duration_ms", "tokens", "tool_duration_ms", "progress", "attempt", "max_attempts")


@fuzz(60)
@given(
    values=st.fixed_dictionaries({}, optional=dict.fromkeys(NUMBER_KEYS, STORABLE_NUMBER)),
    exit_code=STORABLE_NUMBER,
)
def test_fuzz_stored_numbers_of_any_shape_render(user, viewer, values, exit_code):
    """Numbers written before ingest bounded them (or by hand) render, as "—" at worst."""
    conversation = Conversation.objects.create(owner=user)
    now = timezone.now()
    payloads = [
        ("agent.step.completed", {"content": "Done.", "message_id": "a1", **values}),
        ("agent.tool.started", {"tool_call_id": "c1", "tool_name": "run", **values}),
        ("agent.tool.progress", {"tool_call_id": "c1", **values}),
        ("agent.tool.started", {"tool_call_id": "c2", "tool_name": "run", **values}),
        (
            "agent.tool.completed",
            {"tool_call_id": "c2", "result": "ok", "details": {"exit_code": exit_code}, **values},
        ),
    ]
    for seq, (kind, payload) in enumerate(payloads, start=1):
        Event.objects.create(
            conversation=conversation,
            seq=seq,
            type=kind,
            run_id="r1",
            tool_call_id=payload.get("tool_call_id", ""),
            payload=payload,
            body_hash=uuid.uuid4().hex,
            timestamp=now,
            received_at=now,
        )
    conversation.last_seq = len(payloads)
    conversation.save()
    reproject(conversation)
    assert Message.objects.filter(conversation=conversation).exists()
    render_everything(viewer, conversation)  # the admin audit page too
