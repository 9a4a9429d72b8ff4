"""The OTLP receiver (docs/events.md#otlp) through Django's test client: the real capture
of a Pydantic AI export (tests/fixtures/otlp/), encodings, refusals, ownership, order."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest
from google.protobuf import json_format
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from chatui.ingest.traces import conversation_pk
from chatui.models import ApiToken, Conversation, Event, Message, Run
from tests.support.api_client import ApiClient

CAPTURE = Path(__file__).resolve().parents[1] / "fixtures" / "otlp" / "otlp_pydantic_ai_traces.json"
TRACES = "/api/v1/otlp/v1/traces"
LOGS = "/api/v1/otlp/v1/logs"
PROTOBUF = "application/x-protobuf"


def capture() -> dict:
    return json.loads(CAPTURE.read_text())


def as_protobuf(data: dict) -> bytes:
    """The OTLP/JSON capture as the protobuf body the exporter sends (hex ids → bytes)."""
    data = copy.deepcopy(data)
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = _b64(span[key])
    request = ExportTraceServiceRequest()
    json_format.ParseDict(data, request)
    return request.SerializeToString()


def _b64(hex_id: str) -> str:
    import base64

    return base64.b64encode(bytes.fromhex(hex_id)).decode()


def post(api: ApiClient, body: bytes, content_type: str = "application/json", path=TRACES, **h):
    return api.client.post(path, data=body, content_type=content_type, headers={**api.headers, **h})


def spans(data: dict) -> list[dict]:
    return [s for r in data["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]


def transcript(conversation: Conversation) -> list[tuple]:
    return [
        (m.role, m.content, m.tool_name, m.tool_status, m.parent_tool_call_id)
        for m in Message.objects.filter(conversation=conversation).order_by("position")
    ]


def test_capture_of_a_pydantic_ai_export_becomes_its_transcript(api, user):
    answer = post(api, CAPTURE.read_bytes())
    assert answer.status_code == 200
    assert answer["Content-Type"] == "application/json"
    assert answer.json() == {}  # nothing rejected: no partial_success
    conversation = Conversation.objects.get(owner=user)
    conversation_id = "01a21be2-45a2-7363-b5da-0bc8450b3a14"  # the spans' gen_ai.conversation.id
    assert conversation.pk == conversation_pk(user, f"gen_ai.conversation.id:{conversation_id}")
    assert conversation.title == "Check the README, run the tests and fetch the build status."
    rows = transcript(conversation)
    assert [r[0] for r in rows].count("user") == 1
    tools = [r for r in rows if r[0] == "tool"]
    assert [(t[2], t[3]) for t in tools] == [
        ("read_file", "success"),
        ("run_cmd", "error"),
        ("run_cmd", "success"),
        ("fetch", "success"),
    ]
    assert tools[1][1].startswith("make: *** [Makefile:12: test] Error 2")
    assert rows[-1][0] == "assistant" and rows[-1][1].startswith("## Result")
    run = Run.objects.get(conversation=conversation)
    assert (run.run_id, run.status) == ("otel-762981f2dc54668ce82876048a336c8c", "completed")
    read_file = Message.objects.get(conversation=conversation, tool_name="read_file")
    assert read_file.metadata["args"] == {"path": "README.md"}
    assert isinstance(read_file.metadata["tool_duration_ms"], int)
    # Each span kept in the log as received, under its own id.
    logged = Event.objects.filter(conversation=conversation)
    assert logged.count() == len(spans(capture()))
    first = logged.get(event_id__endswith=":bc7dea45168534a7")
    assert first.type == "otel.span"
    assert first.payload["span"]["attributes"]["gen_ai.usage.input_tokens"] == 62
    assert first.payload["resource"]["service.name"] == "chatui-fixture-agent"


def test_a_re_sent_export_adds_nothing(api, user):
    post(api, CAPTURE.read_bytes())
    conversation = Conversation.objects.get(owner=user)
    before = (conversation.last_seq, transcript(conversation))
    assert post(api, CAPTURE.read_bytes()).status_code == 200
    assert post(api, as_protobuf(capture()), PROTOBUF).status_code == 200
    conversation.refresh_from_db()
    assert (conversation.last_seq, transcript(conversation)) == before


def test_json_and_protobuf_bodies_give_the_same_log_and_transcript(api, user, other_user):
    _, raw = ApiToken.issue(other_user)
    assert post(api, CAPTURE.read_bytes()).status_code == 200
    answer = post(ApiClient(raw), as_protobuf(capture()), PROTOBUF)
    assert answer.status_code == 200 and answer["Content-Type"] == PROTOBUF
    ExportTraceServiceResponse().ParseFromString(answer.content)  # an OTLP answer
    mine, theirs = Conversation.objects.get(owner=user), Conversation.objects.get(owner=other_user)
    assert transcript(mine) == transcript(theirs)

    def log(conversation):
        return [(e.event_id, e.payload) for e in Event.objects.filter(conversation=conversation)]

    assert log(mine) == log(theirs)


def test_a_gzip_body_is_read(api, user):
    answer = post(api, gzip.compress(CAPTURE.read_bytes()), **{"Content-Encoding": "gzip"})
    assert answer.status_code == 200
    assert Message.objects.filter(conversation__owner=user, role="tool").count() == 4


def _status(answer, encoding="json") -> Status:
    status = Status()
    if encoding == "json":
        json_format.ParseDict(answer.json(), status)
    else:
        status.ParseFromString(answer.content)
    return status


@pytest.mark.parametrize(
    ("body", "content_type", "headers", "code", "says"),
    [
        (b"\xff\xfe not protobuf", PROTOBUF, {}, 400, "not a valid protobuf"),
        (b"{not json", "application/json", {}, 400, "not JSON"),
        (b"[1, 2]", "application/json", {}, 400, "JSON object"),
        (b'{"resourceSpans": 3}', "application/json", {}, 400, "not an OTLP traces request"),
        (
            b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"00"}]}]}]}',
            "application/json",
            {},
            400,
            "must be hex",
        ),
        (b"not gzip", "application/json", {"Content-Encoding": "gzip"}, 400, "not valid gzip"),
        (b"{}", "application/json", {"Content-Encoding": "br"}, 415, "Content-Encoding"),
        (b"a=b", "application/x-www-form-urlencoded", {}, 415, "Content-Type must be"),
    ],
)
def test_bad_bodies_get_an_otlp_status_and_change_nothing(
    api, user, body, content_type, headers, code, says
):
    answer = post(api, body, content_type, **headers)
    assert answer.status_code == code
    encoding = "protobuf" if answer["Content-Type"] == PROTOBUF else "json"
    status = _status(answer, encoding)
    assert says in status.message
    assert status.code == 3  # INVALID_ARGUMENT
    assert not Conversation.objects.exists() and not Event.objects.exists()


def test_no_token_and_a_wrong_method_get_an_otlp_status(api, client):
    answer = client.post(TRACES, data=CAPTURE.read_bytes(), content_type="application/json")
    assert answer.status_code == 401 and _status(answer).code == 16  # UNAUTHENTICATED
    answer = api.client.get(TRACES, headers=api.headers)
    assert answer.status_code == 405 and answer["Allow"] == "POST"
    assert not Event.objects.exists()


def test_a_body_past_the_limit_is_413(api, settings):
    settings.CHATUI_MAX_REQUEST_BYTES = 1000
    answer = post(api, CAPTURE.read_bytes())
    assert answer.status_code == 413 and "larger than 1000 bytes" in _status(answer).message
    small = gzip.compress(b'{"resourceSpans": []' + b" " * 100_000 + b"}")
    answer = post(api, small, **{"Content-Encoding": "gzip"})
    assert answer.status_code == 413 and "inflates past" in _status(answer).message


def test_another_user_never_sees_your_traces(api, user, other_user):
    post(api, CAPTURE.read_bytes())
    _, raw = ApiToken.issue(other_user)
    theirs = ApiClient(raw)
    assert theirs.get("/api/v1/conversations").json()["conversations"] == []
    mine = Conversation.objects.get(owner=user)
    assert theirs.get(f"/api/v1/conversations/{mine.pk}").status_code == 404
    # The same conversation id from them is their own conversation, not a way into mine.
    post(theirs, CAPTURE.read_bytes())
    assert Conversation.objects.filter(owner=other_user).exclude(pk=mine.pk).count() == 1
    assert Message.objects.filter(conversation=mine).count() == 9


def test_a_span_too_large_is_rejected_alone_in_partial_success(api, user, settings):
    settings.CHATUI_MAX_EVENT_BYTES = 6000  # the model calls' spans are larger than this
    answer = post(api, CAPTURE.read_bytes())
    assert answer.status_code == 200
    partial = answer.json()["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 1  # the root, which holds every message again
    assert "larger than 6000 bytes" in partial["errorMessage"]
    conversation = Conversation.objects.get(owner=user)
    assert Event.objects.filter(conversation=conversation).count() == len(spans(capture())) - 1
    assert Message.objects.filter(conversation=conversation, role="tool").count() == 4


def _nested_export(*names: str) -> dict:
    """A trace: root agent → tool `outer` → sub-agent → tool `inner`, only `names` of them."""
    trace = "ab" * 16
    base = {"traceId": trace, "kind": 1}

    def span(span_id, parent, name, start, attributes):
        item = {**base, "spanId": span_id, "name": name, "attributes": attributes}
        item |= {"startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 10**9)}
        if parent:
            item["parentSpanId"] = parent
        return item

    def attr(key, value):
        return {"key": key, "value": {"stringValue": value}}

    def tool(name):
        return [
            attr("gen_ai.operation.name", "execute_tool"),
            attr("gen_ai.tool.name", name),
            attr("gen_ai.tool.call.id", f"id_{name}"),
            attr("gen_ai.conversation.id", "nested"),
        ]

    every = {
        "root": span("01" * 8, None, "invoke_agent", 1, [attr("gen_ai.operation.name", "x")]),
        "outer": span("02" * 8, "01" * 8, "execute_tool outer", 2, tool("outer")),
        "sub": span("03" * 8, "02" * 8, "invoke_agent sub", 3, []),
        "inner": span("04" * 8, "03" * 8, "execute_tool inner", 4, tool("inner")),
    }
    chosen = [every[name] for name in names]
    return {"resourceSpans": [{"scopeSpans": [{"spans": chosen}]}]}


def test_a_tool_span_before_its_parent_is_nested_when_the_parent_comes(api, user):
    # Exported as they end: the inner tool first, its parents in later exports.
    post(api, json.dumps(_nested_export("inner")).encode())
    conversation = Conversation.objects.get(owner=user)
    inner = Message.objects.get(conversation=conversation, tool_name="inner")
    assert inner.parent_tool_call_id == ""  # shown at once, at the top
    post(api, json.dumps(_nested_export("sub")).encode())
    post(api, json.dumps(_nested_export("outer", "root")).encode())
    inner.refresh_from_db()
    outer = Message.objects.get(conversation=conversation, tool_name="outer")
    assert inner.parent_tool_call_id == outer.tool_call_id
    assert outer.parent_tool_call_id == ""
    assert Run.objects.get(conversation=conversation).status == "completed"


def test_nesting_in_one_export_needs_no_waiting(api, user):
    post(api, json.dumps(_nested_export("root", "outer", "sub", "inner")).encode())
    inner = Message.objects.get(conversation__owner=user, tool_name="inner")
    assert inner.parent_tool_call_id.startswith("id_outer@")
    assert "otel_waits_for" not in inner.metadata


def test_claude_code_log_events_become_its_turns_and_tools(api, user):
    """Claude Code's events as its telemetry docs name them (claude_code.user_prompt,
    .tool_result, .api_request: every attribute a string), by session.id."""

    def record(name, seconds, **attrs):
        pairs = [{"key": "event.name", "value": {"stringValue": name}}]
        pairs += [{"key": "session.id", "value": {"stringValue": "cc-session-1"}}]
        pairs += [{"key": k, "value": {"stringValue": str(v)}} for k, v in attrs.items()]
        body = {"stringValue": f"claude_code.{name}"}
        return {"timeUnixNano": str(seconds * 10**9), "body": body, "attributes": pairs}

    export = {
        "resourceLogs": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "claude-code"}}]
                },
                "scopeLogs": [
                    {
                        "scope": {"name": "com.anthropic.claude_code.events"},
                        "logRecords": [
                            record(
                                "user_prompt", 1, prompt="Fix the failing test", prompt_length=20
                            ),
                            record(
                                "api_request",
                                2,
                                model="claude",
                                input_tokens=900,
                                output_tokens=40,
                                duration_ms=1200,
                            ),
                            record(
                                "tool_result",
                                3,
                                tool_name="Bash",
                                success="false",
                                duration_ms=80,
                                error="exit code 1",
                                tool_parameters='{"bash_command": "pytest"}',
                            ),
                            record(
                                "tool_result",
                                4,
                                tool_name="Read",
                                success="true",
                                duration_ms=5,
                                tool_result_size_bytes=512,
                            ),
                            {"timeUnixNano": "5", "body": {"stringValue": "an unrelated log line"}},
                        ],
                    }
                ],
            }
        ]
    }
    answer = post(api, json.dumps(export).encode(), path=LOGS)
    assert answer.status_code == 200
    assert int(answer.json()["partialSuccess"]["rejectedLogRecords"]) == 1
    conversation = Conversation.objects.get(owner=user)
    assert conversation.title == "Fix the failing test"
    rows = transcript(conversation)
    assert [r[0] for r in rows] == ["user", "assistant", "tool", "tool"]
    assert [(r[2], r[3]) for r in rows[2:]] == [("Bash", "error"), ("Read", "success")]
    bash = Message.objects.get(conversation=conversation, tool_name="Bash")
    assert bash.content == "exit code 1" and bash.metadata["args"] == {"bash_command": "pytest"}
    assert (
        Message.objects.get(conversation=conversation, role="assistant").metadata["tokens"] == 940
    )
    again = post(api, json.dumps(export).encode(), path=LOGS)
    ExportLogsServiceResponse()  # (the answer type: JSON here)
    assert again.status_code == 200
    conversation.refresh_from_db()
    assert len(transcript(conversation)) == 4 and Event.objects.count() == 4


def test_hostile_span_text_is_escaped_on_the_page(api, user, client):
    data = capture()
    first = spans(data)[0]
    for pair in first["attributes"]:
        if pair["key"] == "gen_ai.input.messages":
            hostile = [
                {
                    "role": "user",
                    "parts": [
                        {
                            "type": "text",
                            "content": "<script>alert(1)</script><img src=x onerror=alert(2)>",
                        }
                    ],
                }
            ]
            pair["value"]["stringValue"] = json.dumps(hostile)
    assert post(api, json.dumps(data).encode()).status_code == 200
    conversation = Conversation.objects.get(owner=user)
    client.force_login(user)
    page = client.get(conversation.get_absolute_url()).content.decode()
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)" in page


def _old_form_span(span_id: str, start: int, name: str, attributes: dict, events=()) -> dict:
    def value(v):
        return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}

    return {
        "traceId": "cd" * 16,
        "spanId": span_id,
        "parentSpanId": "0f" * 8,
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 10**6),
        "attributes": [{"key": k, "value": value(v)} for k, v in attributes.items()],
        "events": [
            {
                "name": event_name,
                "timeUnixNano": str(start),
                "attributes": [{"key": k, "value": value(v)} for k, v in attrs.items()],
            }
            for event_name, attrs in events
        ],
    }


def test_older_genai_forms_give_the_same_entries(api, user):
    """The conventions' span events (gen_ai.user.message, gen_ai.choice), Pydantic AI's
    `events` attribute, and OpenLLMetry's flattened gen_ai.prompt.N / completion.N."""
    session = {"session.id": "old-forms"}
    choice = {"message": json.dumps({"role": "assistant", "content": "From events."})}
    spans_ = [
        _old_form_span(
            "01" * 8,
            1,
            "chat old",
            {**session, "gen_ai.usage.prompt_tokens": 10, "gen_ai.usage.completion_tokens": 5},
            [("gen_ai.user.message", {"content": "First question"}), ("gen_ai.choice", choice)],
        ),
        _old_form_span(
            "02" * 8,
            2,
            "chat pydantic v1",
            {
                **session,
                "events": json.dumps(
                    [
                        {"event.name": "gen_ai.user.message", "content": "First question"},
                        {
                            "event.name": "gen_ai.choice",
                            "message": {"role": "assistant", "content": "From the attribute."},
                        },
                    ]
                ),
            },
        ),
        _old_form_span(
            "03" * 8,
            3,
            "openai.chat",
            {
                **session,
                "gen_ai.prompt.0.role": "user",
                "gen_ai.prompt.0.content": "First question",
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.content": "From flattened attributes.",
            },
        ),
        _old_form_span(
            "04" * 8,
            4,
            "running tool",
            {**session, "gen_ai.tool.name": "grep", "tool_arguments": '{"pattern": "x"}'},
        ),
    ]
    export = {"resourceSpans": [{"scopeSpans": [{"spans": spans_}]}]}
    assert post(api, json.dumps(export).encode()).status_code == 200
    conversation = Conversation.objects.get(owner=user)
    rows = transcript(conversation)
    assert [r[:2] for r in rows if r[0] != "tool"] == [
        ("user", "First question"),
        ("assistant", "From events."),
        ("assistant", "From the attribute."),
        ("assistant", "From flattened attributes."),
    ]
    grep = Message.objects.get(conversation=conversation, role="tool")
    assert grep.tool_name == "grep" and grep.metadata["args"] == {"pattern": "x"}
    first = Message.objects.get(conversation=conversation, content="From events.")
    assert first.metadata["tokens"] == 15


def test_unstorable_text_in_a_span_rejects_that_span_alone(api, user):
    data = capture()
    first = spans(data)[1]  # read_file's tool span
    first["attributes"].append({"key": "note", "value": {"stringValue": "nul \u0000 here"}})
    answer = post(api, json.dumps(data).encode())
    assert answer.status_code == 200
    assert int(answer.json()["partialSuccess"]["rejectedSpans"]) == 1
    conversation = Conversation.objects.get(owner=user)
    # What the model asked for still shows: its call, queued, never answered (T2).
    read_file = Message.objects.get(conversation=conversation, tool_name="read_file")
    assert read_file.tool_status == "queued" and read_file.metadata["no_result_recorded"]
    assert Message.objects.filter(conversation=conversation, tool_name="run_cmd").count() == 2


@pytest.mark.parametrize(
    "span",
    [
        {"traceId": "x", "spanId": "y"},
        {"traceId": "ab" * 16, "spanId": "cd" * 8, "events": [1]},
        {"traceId": "ab" * 16, "spanId": "cd" * 8, "attributes": []},
        {"traceId": "ab" * 16, "spanId": "cd" * 8, "startTimeUnixNano": "soon"},
    ],
)
def test_a_logged_span_posted_as_an_event_is_validated_like_any(api, conversation, span):
    answer = api.post_events(conversation, {"type": "otel.span", "span": span})
    assert answer.status_code == 400 and answer.json()["field"] == "span"
    assert not Event.objects.filter(conversation=conversation).exists()


def test_a_logged_span_posted_as_an_event_projects_as_received(api, conversation):
    tool = spans(capture())[1]
    tool["attributes"] = {a["key"]: next(iter(a["value"].values())) for a in tool["attributes"]}
    answer = api.post_events(conversation, {"type": "otel.span", "span": tool})
    assert answer.status_code == 200
    entry = Message.objects.get(conversation=conversation, role="tool")
    assert (entry.tool_name, entry.tool_status) == ("read_file", "success")


def test_re_projecting_the_log_gives_the_same_transcript(api, user):
    """The spans are the log: the transcript is derived from them again, the same."""
    from chatui.ingest.service import reproject

    post(api, CAPTURE.read_bytes())
    for names in (("inner",), ("sub",), ("outer", "root")):
        post(api, json.dumps(_nested_export(*names)).encode())
    for conversation in Conversation.objects.filter(owner=user):
        live = transcript(conversation)
        reproject(conversation)
        assert transcript(conversation) == live
