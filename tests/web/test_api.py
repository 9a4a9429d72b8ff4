"""docs/events.md#http-api, SEC5, SEC6, REL1: the HTTP API and its bad-input answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission
from django.test import override_settings

from chatui.models import ApiToken, Conversation, Event, Message
from tests.support.api_client import ApiClient

EVENT = {"type": "user.message", "content": "hello"}


def nothing_changed(conversation) -> bool:
    return not Event.objects.filter(conversation=conversation).exists() and not (
        Message.objects.filter(conversation=conversation).exists()
    )


# -- SEC5: authentication and ownership ---------------------------------------


def test_sec5_missing_token_is_401(client, conversation):
    response = client.get("/api/v1/conversations")
    assert response.status_code == 401
    assert response.json() == {"error": "missing or invalid bearer token"}
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_sec5_invalid_token_is_401(conversation):
    response = ApiClient("chatui_not-a-real-token").post_events(conversation, EVENT)
    assert response.status_code == 401
    assert nothing_changed(conversation)


def test_sec5_tokens_are_stored_hashed(user):
    token, raw = ApiToken.issue(user)
    assert raw not in (token.key_hash, token.prefix)
    assert len(token.key_hash) == 64


def test_sec5_inactive_users_token_is_401(user, api, conversation):
    user.is_active = False
    user.save()
    assert api.get("/api/v1/conversations").status_code == 401


def test_sec5_other_users_conversation_is_404(api, other_user):
    theirs = Conversation.objects.create(owner=other_user)
    assert api.get(f"/api/v1/conversations/{theirs.pk}").status_code == 404
    response = api.post_events(theirs, EVENT)
    assert response.status_code == 404
    assert nothing_changed(theirs)


def test_sec5_unknown_conversation_is_404(api):
    response = api.get("/api/v1/conversations/7d1f1f9e-0000-4000-8000-000000000000")
    assert response.status_code == 404
    assert response.json()["error"] == "conversation not found"


def test_sec5_ingest_any_permission_posts_to_any_conversation(user, other_user):
    theirs = Conversation.objects.create(owner=other_user)
    user.user_permissions.add(Permission.objects.get(codename="ingest_any"))
    _, raw = ApiToken.issue(user)
    response = ApiClient(raw).post_events(theirs, EVENT)
    assert response.status_code == 200
    assert response.json() == {"accepted": 1, "duplicates": 0, "last_seq": 1}


def test_create_conversation(api, user):
    response = api.post("/api/v1/conversations", {"title": "Deploy check"})
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"id", "title", "url", "created_at"}
    created = Conversation.objects.get(pk=body["id"])
    assert (created.owner, created.title) == (user, "Deploy check")
    assert body["url"] == f"/c/{created.pk}/"


def test_create_conversation_for_another_owner_needs_ingest_any(api, user, other_user):
    response = api.post("/api/v1/conversations", {"owner": "mallory"})
    assert response.status_code == 403
    assert response.json()["field"] == "owner"
    assert not Conversation.objects.exists()
    user.user_permissions.add(Permission.objects.get(codename="ingest_any"))
    response = api.post("/api/v1/conversations", {"owner": "mallory"})
    assert response.status_code == 201
    assert Conversation.objects.get().owner == other_user


def test_list_conversations_shows_only_the_callers(api, user, other_user):
    mine = Conversation.objects.create(owner=user, title="mine")
    Conversation.objects.create(owner=other_user, title="theirs")
    listed = api.get("/api/v1/conversations").json()["conversations"]
    assert [c["id"] for c in listed] == [str(mine.pk)]


# -- SEC6: bad input gets a clear 4xx and changes nothing ----------------------


def test_sec6_invalid_json_is_400(api, conversation):
    response = api.post_events(conversation, raw=b'{"type": "user.message",')
    assert response.status_code == 400
    assert response.json()["error"].startswith("request body is not valid JSON")
    assert nothing_changed(conversation)


def test_sec6_a_body_starting_with_a_byte_order_mark_is_400_naming_it(api, conversation):
    raw = '\ufeff{"type": "user.message", "content": "hi"}'.encode()
    response = api.post_events(conversation, raw=raw)
    assert response.status_code == 400
    assert response.json()["error"].startswith(
        "request body is not valid JSON: Unexpected UTF-8 BOM"
    )
    assert nothing_changed(conversation)


def test_sec6_invalid_utf8_is_400(api, conversation):
    response = api.post_events(conversation, raw=b'{"type": "user.message", "content": "\xff"}')
    assert response.status_code == 400
    assert "not valid UTF-8" in response.json()["error"]
    assert nothing_changed(conversation)


def test_sec6_unknown_type_lists_the_valid_ones(api, conversation):
    response = api.post_events(conversation, [EVENT, {"type": "agent.tool.exploded"}])
    assert response.status_code == 400
    body = response.json()
    assert (body["index"], body["field"]) == (1, "type")
    assert "agent.tool.started" in body["error"] and "user.message" in body["error"]
    assert nothing_changed(conversation)


def test_sec6_missing_field_names_index_and_field(api, conversation):
    response = api.post_events(
        conversation,
        {"events": [EVENT, EVENT, {"type": "agent.tool.started", "tool_call_id": "c1"}]},
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": "missing required field 'tool_name'",
        "index": 2,
        "field": "tool_name",
    }
    assert nothing_changed(conversation)


def test_sec6_mistyped_field_names_index_and_field(api, conversation):
    response = api.post_events(
        conversation, [{"type": "agent.tool.progress", "tool_call_id": "c1", "progress": "half"}]
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": "field 'progress' must be a number",
        "index": 0,
        "field": "progress",
    }


@override_settings(CHATUI_MAX_REQUEST_BYTES=4096, DATA_UPLOAD_MAX_MEMORY_SIZE=4096)
def test_sec6_body_over_the_limit_is_413(api, conversation):
    big = [{"type": "user.message", "content": "x" * 1000} for _ in range(5)]
    response = api.post_events(conversation, big)
    assert response.status_code == 413
    assert "larger than 4096 bytes" in response.json()["error"]
    assert nothing_changed(conversation)


def test_sec6_event_over_the_default_1mib_limit_is_413(api, conversation):
    response = api.post_events(
        conversation, [EVENT, {"type": "user.message", "content": "x" * (1024 * 1024 + 1)}]
    )
    assert response.status_code == 413
    assert response.json()["index"] == 1
    assert nothing_changed(conversation)


def test_sec6_nesting_deeper_than_64_is_400(api, conversation):
    nested: dict = {}
    cursor = nested
    for _ in range(64):
        cursor["a"] = {}
        cursor = cursor["a"]
    event = {"type": "agent.tool.completed", "tool_call_id": "c", "result": nested}
    response = api.post_events(conversation, [event])
    assert response.status_code == 400
    assert "nested deeper than 64" in response.json()["error"]
    assert nothing_changed(conversation)


def test_sec6_pathologically_deep_json_is_400_not_500(api, conversation):
    response = api.post_events(conversation, raw=b"[" * 100_000 + b"]" * 100_000)
    assert response.status_code == 400
    assert "nested deeper than 64" in response.json()["error"]


def test_sec6_batch_is_applied_whole_or_not_at_all(api, conversation):
    good = [{"type": "user.message", "content": f"m{i}"} for i in range(3)]
    bad = {"type": "agent.tool.completed"}  # missing tool_call_id
    response = api.post_events(conversation, [*good, bad])
    assert response.status_code == 400
    assert nothing_changed(conversation)
    conversation.refresh_from_db()
    assert conversation.last_seq == 0


def test_sec6_nan_is_not_json(api, conversation):
    response = api.post_events(
        conversation, raw=b'{"type":"agent.tool.progress","tool_call_id":"c","progress":NaN}'
    )
    assert response.status_code == 400


# -- REL1: idempotency --------------------------------------------------------


def test_rel1_same_event_id_and_body_is_a_counted_duplicate(api, conversation):
    event = {**EVENT, "event_id": "e-1"}
    assert api.post_events(conversation, [event]).json() == {
        "accepted": 1,
        "duplicates": 0,
        "last_seq": 1,
    }
    again = api.post_events(conversation, [event, {**EVENT, "event_id": "e-2"}])
    assert again.json() == {"accepted": 1, "duplicates": 1, "last_seq": 2}
    assert Message.objects.filter(conversation=conversation).count() == 2


def test_rel1_same_event_id_with_another_body_is_409_and_applies_nothing(api, conversation):
    api.post_events(conversation, [{**EVENT, "event_id": "e-1"}])
    response = api.post_events(
        conversation,
        [
            {**EVENT, "event_id": "e-2"},
            {"type": "user.message", "content": "changed", "event_id": "e-1"},
        ],
    )
    assert response.status_code == 409
    assert response.json()["index"] == 1 and response.json()["field"] == "event_id"
    assert Event.objects.filter(conversation=conversation).count() == 1


def test_rel1_duplicate_within_one_batch(api, conversation):
    event = {**EVENT, "event_id": "e-1"}
    assert api.post_events(conversation, [event, event]).json()["duplicates"] == 1


# -- reading back ---------------------------------------------------------------


def test_events_after_returns_the_log(api, conversation):
    api.post_events(conversation, [EVENT, {**EVENT, "event_id": "x"}, EVENT])
    body = api.get(f"/api/v1/conversations/{conversation.pk}/events", after=1).json()
    assert [e["seq"] for e in body["events"]] == [2, 3]
    assert body["events"][0]["event_id"] == "x"
    assert body["events"][0]["payload"] == {"content": "hello"}
    assert body["last_seq"] == 3


def test_events_after_must_be_a_number(api, conversation):
    response = api.get(f"/api/v1/conversations/{conversation.pk}/events", after="x")
    assert response.status_code == 400
    assert response.json()["field"] == "after"


@pytest.mark.parametrize("method", ["put", "delete", "patch"])
def test_unsupported_methods_are_refused(api, conversation, method):
    response = getattr(api.client, method)(
        f"/api/v1/conversations/{conversation.pk}/events", headers=api.headers
    )
    assert response.status_code == 405


def test_single_event_body_is_accepted(api, conversation):
    response = api.post_events(conversation, json.loads(json.dumps(EVENT)))
    assert response.json() == {"accepted": 1, "duplicates": 0, "last_seq": 1}


# -- SEC6: hostile input is a 400 naming index and field, never a 500 ------------------


def test_sec6_1e999_is_400_naming_index_and_field(api, conversation):
    raw = b'[{"type":"user.message","content":"ok"},'
    raw += b'{"type":"agent.step.completed","content":"","duration_ms":1e999}]'
    response = api.post_events(conversation, raw=raw)
    assert response.status_code == 400
    assert response.json() == {
        "error": "field 'duration_ms' must be a finite number (1e999 overflows to infinity)",
        "index": 1,
        "field": "duration_ms",
    }
    assert nothing_changed(conversation)


def test_sec6_huge_duration_is_400_and_the_conversation_still_renders(
    api, client, user, conversation
):
    event = {"type": "agent.step.completed", "content": "done", "duration_ms": int("9" * 400)}
    response = api.post_events(conversation, [EVENT, event])
    assert response.status_code == 400
    assert response.json()["error"] == (
        "field 'duration_ms' must be at most 315360000000 (10 years in ms)"
    )
    assert (response.json()["index"], response.json()["field"]) == (1, "duration_ms")
    assert nothing_changed(conversation)
    client.force_login(user)
    assert client.get(conversation.get_absolute_url()).status_code == 200


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (rb'{"type":"user.message","content":"\ud800"}', "content"),
        (
            rb'{"type":"agent.tool.started","tool_call_id":"c","tool_name":"t","args":{"\udfff":1}}',
            "args.\\udfff",
        ),
        (
            rb'{"type":"agent.tool.started","tool_call_id":"c","tool_name":"t",'
            rb'"args":{"a":[{"b":"\ud800"}]}}',
            "args.a[0].b",
        ),
        (rb'{"type":"user.message","content":"x","run_id":"\ud800"}', "run_id"),
    ],
)
def test_sec6_lone_surrogate_in_any_string_is_400(api, conversation, raw, field):
    response = api.post_events(conversation, raw=raw)
    assert response.status_code == 400
    assert (response.json()["index"], response.json()["field"]) == (0, field)
    assert "lone surrogate" in response.json()["error"]
    assert nothing_changed(conversation)


def test_sec6_lone_surrogate_in_title_is_400(api):
    response = api.post("/api/v1/conversations", raw=rb'{"title":"\ud800"}')
    assert response.status_code == 400
    assert response.json()["field"] == "title"
    assert "lone surrogate" in response.json()["error"]
    assert not Conversation.objects.exists()


def test_sec6_nul_in_title_or_owner_is_400(api):
    for body, field in ([{"title": "a\x00"}, "title"], [{"owner": "alice\x00"}, "owner"]):
        response = api.post("/api/v1/conversations", body)
        assert response.status_code == 400
        assert response.json()["field"] == field
    assert not Conversation.objects.exists()


def test_sec6_nul_in_text_is_400_naming_the_field(api, conversation):
    """Rejected, not stripped: PostgreSQL cannot store it, and silently changing what a
    runtime sent would make the event log lie."""
    response = api.post_events(conversation, [EVENT, {"type": "user.message", "content": "a\x00"}])
    assert response.status_code == 400
    assert response.json() == {
        "error": "field 'content' must not contain the NUL character (\\u0000)",
        "index": 1,
        "field": "content",
    }
    assert nothing_changed(conversation)


@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"])
def test_sec6_timestamp_overflowing_utc_is_400(api, conversation, moment):
    response = api.post_events(conversation, [{**EVENT, "timestamp": moment}])
    assert response.status_code == 400
    assert (response.json()["index"], response.json()["field"]) == (0, "timestamp")
    assert nothing_changed(conversation)


@pytest.mark.parametrize(
    ("event", "field"),
    [
        (
            {"type": "agent.tool.started", "tool_call_id": "c" * 201, "tool_name": "t"},
            "tool_call_id",
        ),
        ({"type": "agent.tool.started", "tool_call_id": "c", "tool_name": "t" * 201}, "tool_name"),
        ({**EVENT, "run_id": "r" * 201}, "run_id"),
        ({**EVENT, "message_id": "m" * 201}, "message_id"),
        (
            {
                "type": "agent.step.completed",
                "content": "",
                "tool_calls": [{"id": "i" * 201, "name": "t"}],
            },
            "tool_calls[0].id",
        ),
    ],
)
def test_sec6_over_long_ids_are_400_naming_the_field(api, conversation, event, field):
    response = api.post_events(conversation, [event])
    assert response.status_code == 400
    assert response.json() == {
        "error": f"field '{field}' must be at most 200 characters",
        "index": 0,
        "field": field,
    }
    assert nothing_changed(conversation)


@pytest.mark.parametrize("after", ["²", "١", "１", "-1", "1e3", "9223372036854775808", "9" * 30])
def test_sec6_after_must_be_ascii_digits_within_range(api, conversation, after):
    response = api.get(f"/api/v1/conversations/{conversation.pk}/events", after=after)
    assert response.status_code == 400
    assert response.json()["field"] == "after"


# -- every 4xx of the API is JSON ---------------------------------------------------


@pytest.mark.parametrize(
    ("path", "method", "allowed"),
    [
        ("/api/v1/conversations", "put", "GET, POST"),
        ("/api/v1/conversations", "delete", "GET, POST"),
        ("/api/v1/conversations/{id}", "post", "GET"),
        ("/api/v1/conversations/{id}", "patch", "GET"),
        ("/api/v1/conversations/{id}/events", "put", "GET, POST"),
        ("/api/v1/conversations/{id}/events", "options", "GET, POST"),
    ],
)
def test_api_wrong_method_is_json_405_with_allow(api, conversation, path, method, allowed):
    response = getattr(api.client, method)(path.format(id=conversation.pk), headers=api.headers)
    assert response.status_code == 405
    assert response["Allow"] == allowed
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"] == f"method {method.upper()} is not allowed; use {allowed}"


@pytest.mark.parametrize(
    "content_type", ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data"]
)
def test_api_post_that_is_not_json_is_415(api, conversation, content_type):
    response = api.client.post(
        f"/api/v1/conversations/{conversation.pk}/events",
        data=json.dumps(EVENT),
        content_type=content_type,
        headers=api.headers,
    )
    assert response.status_code == 415
    assert "Content-Type must be application/json" in response.json()["error"]
    assert nothing_changed(conversation)


@pytest.mark.parametrize(
    "content_type", ["", "application/json; charset=utf-8", "Application/JSON"]
)
def test_api_takes_json_without_a_content_type_or_with_parameters(api, conversation, content_type):
    response = api.client.post(
        f"/api/v1/conversations/{conversation.pk}/events",
        data=json.dumps(EVENT),
        content_type=content_type,
        headers=api.headers,
    )
    assert response.status_code == 200


def test_api_curl_dash_d_is_told_what_to_send(api):
    """`curl -d` sends a form type: the README passes the JSON header, and the 415 says so."""
    response = api.client.post(
        "/api/v1/conversations",
        data='{"title":"deploy"}',
        content_type="application/x-www-form-urlencoded",
        headers=api.headers,
    )
    assert response.status_code == 415
    assert "-H 'Content-Type: application/json'" in response.json()["error"]


@pytest.mark.parametrize(
    "path",
    [
        "/api",
        "/api/",
        "/api/v1/",
        "/api/v1/nope",
        "/api/v2/conversations",
        "/api/v1/conversations/",
        "/api/v1/conversations/not-a-uuid",
        "/api/v1/conversations/7d1f1f9e-0000-4000-8000-000000000000/events/extra",
    ],
)
def test_api_unknown_paths_are_json_404(api, path):
    for response in (api.get(path), api.client.post(path, headers=api.headers)):
        assert response.status_code == 404
        assert response["Content-Type"] == "application/json"
        assert response.json()["error"].startswith("no API endpoint at ")


def test_api_djangos_own_400_is_json_too(api, conversation):
    """More query parameters than DATA_UPLOAD_MAX_NUMBER_FIELDS: Django refuses them."""
    fields = "&".join(f"f{n}=1" for n in range(1001))
    response = api.client.get(
        f"/api/v1/conversations/{conversation.pk}/events?after=0&{fields}", headers=api.headers
    )
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert "DATA_UPLOAD_MAX_NUMBER_FIELDS" in response.json()["error"]


def test_readme_curl_examples_send_the_json_content_type():
    root = Path(__file__).parents[2]
    for name, count in (("README.md", 2), ("docs/runtimes.md", 3)):
        text = (root / name).read_text()
        posts = [line for line in text.splitlines() if "curl " in line and " -d " in line]
        # A conversation and its events; runtimes.md also the tool approval request.
        assert len(posts) == count, name
        assert 'JSON="Content-Type: application/json"' in text, name
        assert all('-H "$JSON"' in line for line in posts), name
