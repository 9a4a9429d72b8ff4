"""docs/events.md#approvals tool approval without a browser: the contract, the projection, the
presenters (plain data), the service's rules and the API (decision and long poll)."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from chatui.ingest import approvals
from chatui.ingest.service import ingest, reproject
from chatui.ingest.values import EventError
from chatui.models import ApiToken, Conversation, Event, Message, ToolStatus
from chatui.read import presenters
from chatui.read.exporters import export_events, export_messages, export_otlp
from tests.support.api_client import ApiClient


def request(call_id: str = "c1", **extra) -> dict:
    return {
        "type": "agent.tool.approval_requested",
        "tool_call_id": call_id,
        "tool_name": "delete_file",
        "args": {"path": "notes/old.txt"},
        "reason": "Deletes a file",
        "run_id": "r1",
        **extra,
    }


def tool(conversation, call_id: str = "c1") -> Message:
    return Message.objects.get(conversation=conversation, tool_call_id=call_id)


def entry(conversation, call_id: str = "c1") -> presenters.ToolEntryView:
    return presenters.present_tool_entry(tool(conversation, call_id))


def batch(conversation) -> presenters.ToolBatchView:
    found = presenters.present_batch(Message.objects.filter(conversation=conversation))
    assert found is not None
    return found


# -- projection and presenters ---------------------------------------------------------


def test_sec13_approval_request_puts_the_entry_in_awaiting_approval(conversation):
    ingest(conversation, request())
    shown = entry(conversation)
    assert shown.status == "awaiting_approval"
    assert shown.call_line == "delete_file(path=notes/old.txt)"
    assert shown.approval.reason == "Deletes a file"
    assert shown.approval.is_awaiting and shown.approval.line is None
    assert not shown.is_pending and not shown.is_error
    summary = batch(conversation)
    assert summary.awaiting_text == "1 awaiting approval"
    assert summary.open


def test_sec13_default_timeout_is_600_seconds_from_receipt(conversation):
    ingest(conversation, request())
    approval = tool(conversation).metadata["approval"]
    received = Event.objects.get(conversation=conversation).received_at
    assert approval["timeout_s"] == 600
    assert approval["expires_at"] == (received + timedelta(seconds=600)).isoformat()


def test_sec13_approved_is_queued_then_runs_with_the_decision_line(conversation, user):
    ingest(conversation, request())
    approvals.decide(conversation, "c1", "approved", user)
    shown = entry(conversation)
    assert shown.status == "queued"
    assert shown.approval.line.startswith("Approved by alice · ")
    assert not shown.approval.is_awaiting
    ingest(
        conversation,
        {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "delete_file"},
    )
    assert entry(conversation).status == "running"
    ingest(
        conversation, {"type": "agent.tool.completed", "tool_call_id": "c1", "result": "deleted"}
    )
    assert entry(conversation).status == "success"
    assert entry(conversation).approval.line.startswith("Approved by alice")


def test_sec13_denied_is_muted_not_an_error_and_counted(conversation, user):
    ingest(conversation, request())
    approvals.decide(conversation, "c1", "denied", user, "too risky")
    shown = entry(conversation)
    assert shown.status == "denied"
    assert not shown.is_error and not shown.is_pending
    assert shown.approval.line == "Denied by alice: too risky"
    summary = batch(conversation)
    assert summary.denied_text == "1 denied"
    assert summary.failed_text is None and not summary.has_error


def test_sec13_a_denied_call_stays_denied_whatever_the_runtime_sends(conversation, user):
    ingest(conversation, request())
    approvals.decide(conversation, "c1", "denied", user)
    ingest(
        conversation,
        [
            {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "delete_file"},
            {"type": "agent.tool.completed", "tool_call_id": "c1", "result": "deleted anyway"},
        ],
    )
    assert tool(conversation).tool_status == ToolStatus.DENIED


def test_sec13_expired_is_denied_by_system(conversation):
    ingest(conversation, request(timeout_s=1))
    later = timezone.now() + timedelta(seconds=5)
    assert approvals.expire_overdue(conversation, now=later) == 1
    shown = entry(conversation)
    assert shown.status == "denied"
    assert shown.approval.line == "Expired · no decision"
    decision = approvals.decision_for(conversation, "c1")
    assert (decision.decision, decision.decided_by) == ("expired", "system")


def test_sec13_expiry_is_idempotent_and_not_before_the_deadline(conversation):
    ingest(conversation, request(timeout_s=60))
    assert approvals.expire_overdue(conversation) == 0
    later = timezone.now() + timedelta(seconds=61)
    assert approvals.expire_overdue(conversation, now=later) == 1
    assert approvals.expire_overdue(conversation, now=later) == 0
    assert Event.objects.filter(conversation=conversation, type="tool.approval").count() == 1


def test_sec13_sweep_expires_every_conversation_nobody_reads(conversation):
    ingest(conversation, request(timeout_s=1))
    later = timezone.now() + timedelta(seconds=5)
    assert approvals.expire_all_overdue(now=later) == 1
    assert tool(conversation).tool_status == ToolStatus.DENIED


def test_sec13_first_decision_wins_a_second_is_409_and_changes_nothing(
    conversation, user, other_user
):
    ingest(conversation, request())
    approvals.decide(conversation, "c1", "approved", user)
    last_seq = conversation.last_seq
    with pytest.raises(EventError) as refused:
        approvals.decide(conversation, "c1", "denied", user, "changed my mind")
    assert refused.value.status == 409
    assert "already decided: approved by alice" in refused.value.message
    conversation.refresh_from_db()
    assert conversation.last_seq == last_seq
    assert tool(conversation).tool_status == ToolStatus.QUEUED


def test_sec13_a_decision_after_the_deadline_is_409_expired(conversation, user):
    ingest(conversation, request(timeout_s=1))
    Message.objects.filter(pk=tool(conversation).pk).update(
        metadata={
            **tool(conversation).metadata,
            "approval": {
                **tool(conversation).metadata["approval"],
                "expires_at": (timezone.now() - timedelta(seconds=1)).isoformat(),
            },
        }
    )
    with pytest.raises(EventError) as refused:
        approvals.decide(conversation, "c1", "approved", user)
    assert refused.value.status == 409
    assert "expired by system" in refused.value.message


def test_sec13_decision_must_be_approved_or_denied(conversation, user):
    ingest(conversation, request())
    with pytest.raises(EventError) as refused:
        approvals.decide(conversation, "c1", "expired", user)
    assert refused.value.status == 400 and refused.value.field == "decision"


def test_sec13_reprojection_gives_the_same_approval_state(conversation, user):
    ingest(conversation, [request("c1"), request("c2")])
    approvals.decide(conversation, "c1", "denied", user, "no")
    approvals.decide(conversation, "c2", "approved", user)
    before = {
        m.tool_call_id: (m.tool_status, m.metadata)
        for m in Message.objects.filter(conversation=conversation)
    }
    reproject(conversation)
    after = {
        m.tool_call_id: (m.tool_status, m.metadata)
        for m in Message.objects.filter(conversation=conversation)
    }
    assert before == after


def test_sec13_note_and_name_are_neutralised_in_the_line(conversation, user):
    ingest(conversation, request())
    approvals.decide(conversation, "c1", "denied", user, "ask @channel first")
    assert entry(conversation).approval.line == "Denied by alice: ask @\u200bchannel first"


# -- who may decide ----------------------------------------------------------------------------


def test_sec13_owner_and_approve_tool_holders_who_can_view_may_decide(
    conversation, user, other_user
):
    assert approvals.can_decide(user, conversation)
    assert not approvals.can_decide(other_user, conversation)
    other_user.user_permissions.add(Permission.objects.get(codename="approve_tool"))
    other_user = type(other_user).objects.get(pk=other_user.pk)
    assert not approvals.can_decide(other_user, conversation)  # cannot see it
    other_user.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    other_user = type(other_user).objects.get(pk=other_user.pk)
    assert approvals.can_decide(other_user, conversation)


# -- the API ---------------------------------------------------------------------------------


def approvals_url(conversation, call_id: str = "c1") -> str:
    return f"/api/v1/conversations/{conversation.pk}/approvals/{call_id}"


def test_sec13_runtime_posting_tool_approval_gets_400(api, conversation):
    ingest(conversation, request())
    response = api.post_events(
        conversation, {"type": "tool.approval", "tool_call_id": "c1", "decision": "approved"}
    )
    assert response.status_code == 400
    assert response.json()["field"] == "type"
    assert "cannot post it" in response.json()["error"]
    assert tool(conversation).tool_status == ToolStatus.AWAITING_APPROVAL


def test_sec13_api_decides_and_the_long_poll_returns_it(api, conversation):
    api.post_events(conversation, request())
    assert api.get(approvals_url(conversation)).status_code == 204
    decided = api.post(approvals_url(conversation), {"decision": "denied", "note": "too risky"})
    assert decided.status_code == 200, decided.content
    assert decided.json()["decided_by"] == "alice"
    polled = api.get(approvals_url(conversation), wait="5")
    assert polled.status_code == 200
    assert polled.json()["decision"] == "denied"
    assert polled.json()["note"] == "too risky"
    again = api.post(approvals_url(conversation), {"decision": "approved"})
    assert again.status_code == 409
    assert "already decided" in again.json()["error"]


def test_sec13_api_other_user_gets_404(conversation, other_user):
    ingest(conversation, request())
    _, raw = ApiToken.issue(other_user)
    stranger = ApiClient(raw)
    assert stranger.post(approvals_url(conversation), {"decision": "approved"}).status_code == 404
    assert stranger.get(approvals_url(conversation)).status_code == 404
    assert tool(conversation).tool_status == ToolStatus.AWAITING_APPROVAL


def test_sec13_api_unknown_tool_call_is_404_and_bad_wait_is_400(api, conversation):
    ingest(conversation, request())
    assert api.get(approvals_url(conversation, "nope")).status_code == 404
    assert (
        api.post(approvals_url(conversation, "nope"), {"decision": "approved"}).status_code == 404
    )
    response = api.get(approvals_url(conversation), wait="31")
    assert response.status_code == 400 and response.json()["field"] == "wait"
    bad = api.post(approvals_url(conversation), {"decision": "maybe"})
    assert bad.status_code == 400 and bad.json()["field"] == "decision"


def test_sec13_api_without_token_is_401(conversation):
    assert Client().get(approvals_url(conversation)).status_code == 401


# -- the page form ---------------------------------------------------------------------------


def test_sec13_page_form_decides_without_javascript(client, conversation, user):
    ingest(conversation, request())
    client.force_login(user)
    page = client.get(f"/c/{conversation.pk}/")
    assert b'id="approval-form"' in page.content
    assert b"data-approve" in page.content
    message = tool(conversation)
    response = client.post(
        f"/c/{conversation.pk}/tools/{message.pk}/approval",
        {"decision": "denied", f"note-{message.pk}": "too risky"},
    )
    assert response.status_code == 302
    assert entry(conversation).approval.line == "Denied by alice: too risky"
    again = client.get(f"/c/{conversation.pk}/")
    assert b"data-approve" not in again.content


def test_sec13_page_form_of_another_user_is_404(client, conversation, other_user):
    ingest(conversation, request())
    client.force_login(other_user)
    message = tool(conversation)
    response = client.post(
        f"/c/{conversation.pk}/tools/{message.pk}/approval", {"decision": "approved"}
    )
    assert response.status_code == 404
    assert tool(conversation).tool_status == ToolStatus.AWAITING_APPROVAL


def test_sec13_page_form_needs_csrf(conversation, user):
    ingest(conversation, request())
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    message = tool(conversation)
    response = browser.post(
        f"/c/{conversation.pk}/tools/{message.pk}/approval", {"decision": "approved"}
    )
    assert response.status_code == 403


def test_sec13_viewer_without_decide_right_gets_no_form(client, conversation, other_user):
    ingest(conversation, request())
    other_user.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    client.force_login(other_user)
    page = client.get(f"/c/{conversation.pk}/")
    assert page.status_code == 200
    assert b'id="approval-form"' not in page.content


def test_sec13_reading_the_page_expires_overdue_requests(client, conversation, user):
    ingest(conversation, request(timeout_s=0))
    client.force_login(user)
    client.get(f"/c/{conversation.pk}/")
    assert approvals.decision_for(conversation, "c1").decision == "expired"


def test_sec13_event_contract_fields(api, conversation):
    bad = api.post_events(conversation, request(timeout_s=-1))
    assert bad.status_code == 400 and bad.json()["field"] == "timeout_s"
    missing = api.post_events(
        conversation, {"type": "agent.tool.approval_requested", "tool_call_id": "x"}
    )
    assert missing.status_code == 400 and missing.json()["field"] == "tool_name"
    assert json.loads(api.post_events(conversation, request()).content)["accepted"] == 1


def test_sec13_expire_approvals_command_sweeps(conversation):
    ingest(conversation, request(timeout_s=0))
    out = StringIO()
    call_command("expire_approvals", stdout=out)
    assert out.getvalue().strip() == "1 approval expired"
    assert tool(conversation).tool_status == ToolStatus.DENIED


def test_sec13_api_read_expires_overdue_requests(api, conversation):
    ingest(conversation, request(timeout_s=0))
    body = api.get(f"/api/v1/conversations/{conversation.pk}").json()
    [entry_dict] = [m for m in body["messages"] if m["role"] == "tool"]
    assert entry_dict["metadata"]["tool_status"] == "denied"
    assert entry_dict["metadata"]["approval"]["decision"] == "expired"


# -- admin -----------------------------------------------------------------------------


def test_sec13_admin_filters_has_approvals_and_lists_decisions(client, conversation, user):
    user.is_staff = user.is_superuser = True
    user.save()
    plain = Conversation.objects.create(owner=user, title="no approvals here")
    ingest(plain, {"type": "user.message", "content": "hi"})
    ingest(conversation, [request("c1"), request("c2")])
    approvals.decide(conversation, "c1", "denied", user, "too risky")
    client.force_login(user)
    listed = client.get("/admin/chatui/conversation/", {"has_approvals": "yes"})
    assert listed.status_code == 200
    assert b"no approvals here" not in listed.content
    assert conversation.title.encode() in listed.content
    page = client.get(f"/admin/chatui/conversation/{conversation.pk}/change/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "<code>c1</code>: denied by alice at " in text and "too risky" in text
    assert "<code>c2</code>: awaiting a decision" in text


# -- exports ----------------------------------------------------------------------------


def test_sec13_exports_carry_the_decisions(conversation, user):
    ingest(conversation, request())
    approvals.decide(conversation, "c1", "denied", user, "too risky")
    lines = [event for event in export_events(conversation) if event["type"] == "tool.approval"]
    assert [(e["decision"], e["decided_by"], e["note"]) for e in lines] == [
        ("denied", "alice", "too risky")
    ]
    [message] = export_messages(conversation)["messages"]
    assert message["metadata"]["approval"]["decision"] == "denied"
    spans = export_otlp(conversation)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    [tool_span] = [span for span in spans if span["name"] == "execute_tool delete_file"]
    names = [event["name"] for event in tool_span["events"]]
    assert names == ["chatui.tool.approval_requested", "chatui.tool.approval"]
    decided = {a["key"]: a["value"]["stringValue"] for a in tool_span["events"][1]["attributes"]}
    assert decided == {
        "chatui.approval.decision": "denied",
        "chatui.approval.decided_by": "alice",
        "chatui.approval.note": "too risky",
    }


def test_sec13_exported_events_reimport_to_the_same_decision(conversation, user):
    """An events export holds `tool.approval`: importing it (not a runtime) keeps it."""
    ingest(conversation, request())
    approvals.decide(conversation, "c1", "approved", user)
    copy = Conversation.objects.create(owner=user, title="copy")
    ingest(copy, list(export_events(conversation)))
    assert tool(copy).metadata["approval"]["decided_by"] == "alice"
    assert tool(copy).tool_status == ToolStatus.QUEUED


def test_sec13_approved_after_its_run_ended_shows_no_result_not_a_timer(conversation, user):
    ingest(
        conversation, [request(), {"type": "agent.status", "status": "completed", "run_id": "r1"}]
    )
    approvals.decide(conversation, "c1", "approved", user)
    shown = entry(conversation)
    assert shown.no_result and not shown.is_pending and shown.elapsed_text is None
    before = tool(conversation).metadata
    reproject(conversation)
    assert tool(conversation).metadata == before
