"""Property-based fuzzing of the event contract and the HTTP API (issue 9; SEC6, §7).

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
    test_fuzz_after_and_before_query_parameters                        1,500
    test_fuzz_create_conversation                                        900
    test_fuzz_methods_content_types_and_paths                          1,300
    test_fuzz_stored_numbers_of_any_shape_render                          60
                                                                       -----
                                                                       8,160

The Django test client drives the real views and database (no live server). On the
2-core machine the file costs about 65 s of CPU (about 90 s wall with the machine
shared at a load of 3). Counts are examples, not events: a batch may hold three.
"""

from __future__ import annotations

import json
import math
import sys
import uuid
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from datetime import timezone as dt_timezone
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatui.events import (
    ALIASES,
    EVENT_TYPES,
    MAX_APPROVAL_TIMEOUT_S,
    MAX_ATTEMPTS,
    MAX_DURATION_MS,
    MAX_ID_CHARS,
    MAX_SEQ,
    MAX_TOKENS,
    SCHEMAS,
    SERVER_ONLY_TYPES,
    STATUSES,
    EventError,
    canonical_json,
    parse_events,
    unstorable,
)
from chatui.ingest import reproject
from chatui.models import Conversation, Event, Message
from tests.test_pages import render_everything

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

SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff"]
SAFE_CHARS = list("aZ09 _-.:/@<>&\"'{}[]\\\n\t→é中😀\u200b\u202e\u2028\x85\x7f²١１")
HOSTILE_CHARS = [*SAFE_CHARS, "\x00", *SURROGATES]
TRICKY_TEXT = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "a\x00b",
        "\ud800",
        "x\udfff",
        "\\u0000",
        "@here",
        "<script>alert(1)</script>",
        '<img src=x onerror="alert(1)">',
        "{{ secret }}",
        "{% now %}",
        "→ 50%",
        "Error: boom",
        "out [exit code: 2]",
        "{",
        "[1,",
        "\r\n\r\n",
        "sk-abcdefghijklmnopqrstuvwxyz123456",
        "https://user:pass@example.com/x",
    ]
)
text = st.one_of(
    st.text(st.sampled_from(HOSTILE_CHARS), max_size=24),
    TRICKY_TEXT,
    st.integers(MAX_ID_CHARS - 2, MAX_ID_CHARS + 2).map(lambda n: "i" * n),
    st.integers(9, 300).map(lambda n: "long line\n" * n),  # past G4's 8 lines and 500 chars
)
giant_int = st.integers(300, 4400).map(lambda digits: 10**digits - 1)
number = st.one_of(
    st.integers(-3, MAX_ATTEMPTS + 3),
    st.integers(-(10**13), 10**13),
    st.sampled_from(
        [MAX_DURATION_MS, MAX_DURATION_MS + 1, MAX_TOKENS, MAX_TOKENS + 1, 2**63, -(2**63)]
    ),
    giant_int,
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 0.5, 1.0, 1.0000001, 1e308, 5e-324]),
)
scalar = st.none() | st.booleans() | number | text
KEYS = st.sampled_from(
    ["kind", "path", "command", "exit_code", "url", "status_code", "text", "details", "token"]
)
json_value = st.recursive(
    scalar,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(KEYS | text, children, max_size=4)
    ),
    max_leaves=10,
)
deep_value = st.integers(55, 70).map(lambda depth: nested(depth))


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for level in range(depth):
        value = {"d": value} if level % 2 else [value]
    return value


# -- values that fit the contract (so batches are accepted often enough to render) ----

contract_text = st.text(st.sampled_from(SAFE_CHARS), max_size=40) | TRICKY_TEXT.filter(
    lambda value: not unstorable(value)
)
contract_id = st.one_of(
    st.sampled_from(["c1", "c2", "c3", "m1", "m2", "r1", "r2", "i" * MAX_ID_CHARS]),
    st.text(st.sampled_from(SAFE_CHARS), min_size=1, max_size=12).filter(str.strip),
)
contract_object = st.dictionaries(
    KEYS | contract_text,
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.sampled_from(["file", "command", "fetch", "subagent", "custom"])
        | contract_text,
        lambda children: (
            st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=3)
        ),
        max_leaves=6,
    ),
    max_size=4,
)
contract_moment = st.datetimes(
    min_value=datetime(2, 1, 1),
    max_value=datetime(9998, 12, 31),
    timezones=st.sampled_from(
        [UTC, dt_timezone(timedelta(hours=5)), dt_timezone(-timedelta(hours=5))]
    ),
).map(datetime.isoformat)
tool_call = st.fixed_dictionaries(
    {"name": contract_id},
    optional={"id": contract_id, "args": contract_object, "args_summary": contract_text},
)

GOOD: dict[str, st.SearchStrategy] = {
    "message_id": contract_id,
    "tool_call_id": contract_id,
    "parent_tool_call_id": contract_id,
    "tool_name": contract_id,
    "run_id": contract_id,
    "event_id": contract_id,
    "content": contract_text.filter(str.strip),
    "delta": contract_text,
    "output": contract_text,
    "message": contract_text,
    "args_summary": contract_text,
    "error": contract_text,
    "stop_reason": contract_text,
    "resolved_by": contract_text,
    "error_message": contract_text,
    "result_preview": contract_text,
    "args": contract_object,
    "details": contract_object,
    "result": contract_object | contract_text | st.integers() | st.none(),
    "tool_calls": st.lists(tool_call, max_size=3),
    "duration_ms": st.integers(0, MAX_DURATION_MS) | st.floats(0, MAX_DURATION_MS),
    "tokens": st.integers(0, MAX_TOKENS),
    "attempt": st.integers(0, MAX_ATTEMPTS),
    "max_attempts": st.integers(0, MAX_ATTEMPTS),
    "progress": st.floats(0, 1),
    "status": st.sampled_from(STATUSES),
    "should_continue": st.booleans(),
    "is_error": st.booleans(),
    "skipped": st.booleans(),
    "timestamp": contract_moment,
    # AgentSpine's own fields (its aliases' raw shapes)
    "role": st.sampled_from(["assistant", "user"]),
    "source": st.sampled_from(["steer", "follow_up"]) | contract_text,
    "text_preview": contract_text,
    "partial": contract_text,
    "final_text": contract_text,
    "result_is_preview": st.booleans(),
    "phase": st.sampled_from(["start", "end"]),
    # SPEC §13
    "reason": contract_text,
    "timeout_s": st.integers(0, MAX_APPROVAL_TIMEOUT_S) | st.floats(0, MAX_APPROVAL_TIMEOUT_S),
}
EXTRA_FIELDS = ("event_id", "run_id", "timestamp")
ALIAS_FIELDS = {
    "tool_execution_end": ("result_preview", "is_error", "skipped"),
    "tool_execution_update": ("partial",),
    "agent_end": ("final_text",),
}
#: Fields of an alias's chatui type that the alias itself sets (not sent by AgentSpine).
ALIAS_SETS = {
    "turn_start": ("phase",),
    "turn_end": ("phase",),
    "agent_start": ("status",),
    "agent_end": ("status",),
}


#: What a runtime may post: `tool.approval` is chatui's own (SPEC §13), a near miss here.
KINDS = st.sampled_from(
    tuple(kind for kind in EVENT_TYPES if kind not in SERVER_ONLY_TYPES) + tuple(ALIASES)
)
NEAR_MISS_KINDS = st.sampled_from(
    ["agent.tool.Started", "agent.tool", "tool_execution_update", "agent_start", "tool.approval"]
)


ROLL = st.integers(0, 99)


@st.composite
def event(draw, *, hostility: int) -> dict[str, Any]:
    """One event of a random (mostly real) type. Each field is present or not, and
    with `hostility` percent chance it holds anything at all rather than a value the
    contract accepts. With no hostility, required fields are always present."""
    hostile_kind = draw(ROLL) < hostility
    kind = draw(st.one_of(NEAR_MISS_KINDS, text, number) if hostile_kind else KINDS)
    schema = SCHEMAS.get(ALIASES.get(kind, kind), {}) if isinstance(kind, str) else {}
    raw: dict[str, Any] = {"type": kind}
    own_fields = [name for name in schema if name not in ALIAS_SETS.get(kind, ())]
    for name in [*own_fields, *EXTRA_FIELDS, *ALIAS_FIELDS.get(kind, ())]:
        required = name in schema and schema[name][1]
        present = 100 if required and not hostility else 95 if required else 40
        roll = draw(ROLL)  # one draw decides absent, hostile or good
        if roll >= present:
            continue
        hostile = roll < present * hostility // 100
        raw[name] = draw(json_value | deep_value if hostile else GOOD.get(name, json_value))
    if hostility and draw(ROLL) < 30:
        raw.update(draw(st.dictionaries(text, json_value, max_size=2)))
        if draw(ROLL) < 10:
            del raw["type"]
    return raw


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
    st.sampled_from(["conversations", "conversations/{id}", "conversations/{id}/events"]),
    st.lists(st.text(max_size=12), max_size=4).map(lambda parts: "/".join(map(quote, parts))),
    st.builds("conversations/{}/events".format, st.text(max_size=40).map(quote)),
)


@fuzz(1300)
@given(method=st.sampled_from(METHODS), path=API_PATH, content_type=CONTENT_TYPES, body=scalar)
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
