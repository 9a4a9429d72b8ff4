"""Issue 28, finding 4: a page has a size bound whatever the tool results (G16, G8, P3).

A tool entry inlines its full result text (G16), its Details JSON (G8) and what Copy
args copies only up to `CHATUI_TOOL_TEXT_INLINE_CHARS` characters together; beyond
that the page carries the cut preview and a control that fetches the rest from
`/c/<id>/tools/<pk>/<part>` (output, details, args), checked like the page and masked
like it. The probe: 60 results of 900 KB made a 108 MB page in 14.6 s.
"""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from chatui.ingest.service import ingest
from chatui.live import frames
from chatui.models import Conversation, Message
from chatui.read import presenters
from tests.support.huge_results import huge_result

#: "A few MB at most", whatever the results (before the bound: 108 MB).
PAGE_BYTES = 2 * 1024 * 1024

SECRET_TAIL = "WXYZ"


def tool_events(call_id: str, result: str, args: dict | None = None) -> list[dict]:
    return [
        {
            "type": "agent.tool.started",
            "run_id": "r1",
            "tool_call_id": call_id,
            "tool_name": "read_file",
            "args": args if args is not None else {"path": f"src/{call_id}.py"},
        },
        {
            "type": "agent.tool.completed",
            "run_id": "r1",
            "tool_call_id": call_id,
            "result": result,
            "details": {"kind": "file", "path": f"src/{call_id}.py"},
            "duration_ms": 12,
        },
    ]


def tool_message(conversation: Conversation, call_id: str) -> Message:
    return conversation.messages.get(tool_call_id=call_id)


def text_url(conversation: Conversation, message: Message, part: str) -> str:
    return f"/c/{conversation.pk}/tools/{message.pk}/{part}"


def pre_text(fragment: str) -> str:
    """The text of the fragment's one <pre>, unescaped."""
    found = re.fullmatch(r"\s*<pre[^>]*>(.*)</pre>\s*", fragment, re.DOTALL)
    assert found, fragment[:300]
    return html.unescape(found.group(1))


@pytest.fixture
def reader(client: Client, user) -> Client:
    client.force_login(user)
    return client


def test_p3_g16_a_page_of_60_results_of_900_kb_stays_a_few_mb(reader, conversation):
    ingest(conversation, {"type": "user.message", "run_id": "r1", "content": "Read them all"})
    for number in range(60):
        ingest(conversation, tool_events(f"c{number}", huge_result(f"c{number}")))
    response = reader.get(conversation.get_absolute_url())
    assert response.status_code == 200
    page = response.content.decode()
    assert len(response.content) < PAGE_BYTES, len(response.content)
    # Every entry is there, cut, with its controls that fetch the rest on demand.
    assert page.count('class="tool-entry"') == 60
    assert page.count("data-tool-load") == 2 * 60  # its full output and its Details
    assert page.count("data-copy-url=") == 2 * 60  # Copy output and the Details' Copy
    assert "THE END" not in page


def test_g16_the_fragment_returns_the_whole_result_escaped_and_masked(reader, conversation):
    result = huge_result("big")
    ingest(conversation, tool_events("big", result))
    message = tool_message(conversation, "big")
    page = reader.get(conversation.get_absolute_url()).content.decode()
    url = text_url(conversation, message, "output")
    assert f'href="{url}"' in page  # the control the page carries

    response = reader.get(url, headers={"HX-Request": "true"})
    assert response.status_code == 200
    body = response.content.decode()
    # Escaped: no markup of the result survives, htmx attributes are text.
    assert "<script>" not in body and "<div hx-get" not in body
    assert "&lt;script&gt;alert(&#x27;bound&#x27;)&lt;/script&gt;" in body
    shown = pre_text(body)
    # The whole text, not JSON-quoted, its secrets masked (T3) as the page masks them.
    assert shown.endswith("big THE END")
    assert shown.count("\n") == result.count("\n")
    assert "sk-live0123456789abcdef" not in shown
    assert shown.count("••••" + SECRET_TAIL) == result.count("sk-live")
    assert "data-tool-output-text" in body and "data-tool-full-text" in body


def test_g8_the_details_fragment_is_the_whole_pretty_json(reader, conversation):
    ingest(conversation, tool_events("big", huge_result("big")))
    message = tool_message(conversation, "big")
    body = reader.get(
        text_url(conversation, message, "details"), headers={"HX-Request": "true"}
    ).content.decode()
    assert "<script>" not in body
    shown = pre_text(body)
    assert shown.startswith("{\n") and '"result": "big line 00000' in shown
    assert "big THE END" in shown and '"path": "src/big.py"' in shown
    assert "sk-live0123456789abcdef" not in shown


def test_g16_copy_args_of_huge_args_fetches_them(reader, conversation):
    ingest(
        conversation, tool_events("w", "written", args={"path": "a.txt", "text": huge_result("a")})
    )
    message = tool_message(conversation, "w")
    page = reader.get(conversation.get_absolute_url()).content.decode()
    url = text_url(conversation, message, "args")
    assert f'data-copy-url="{url}"' in page and "a THE END" not in page
    shown = pre_text(reader.get(url, headers={"HX-Request": "true"}).content.decode())
    assert shown.startswith('{\n  "path": "a.txt",') and "a THE END" in shown


def test_g16_without_javascript_the_control_opens_the_text_as_a_page(reader, conversation):
    ingest(conversation, tool_events("big", huge_result("big")))
    message = tool_message(conversation, "big")
    response = reader.get(text_url(conversation, message, "output"))
    page = response.content.decode()
    assert response.status_code == 200 and page.lstrip().lower().startswith("<!doctype html>")
    assert "big THE END" in page and "<script>alert" not in page
    assert conversation.get_absolute_url() in page  # a way back


def test_sec5_the_fragment_is_404_for_another_user(client, conversation, other_user):
    ingest(conversation, tool_events("big", huge_result("big")))
    message = tool_message(conversation, "big")
    client.force_login(other_user)
    for part in ("output", "details", "args"):
        response = client.get(text_url(conversation, message, part), headers={"HX-Request": "1"})
        assert response.status_code == 404
        assert b"big line" not in response.content


def test_sec5_an_auditor_with_the_view_permission_may_fetch_it(client, conversation, other_user):
    ingest(conversation, tool_events("big", huge_result("big")))
    other_user.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    client.force_login(get_user_model().objects.get(pk=other_user.pk))
    response = client.get(text_url(conversation, tool_message(conversation, "big"), "output"))
    assert response.status_code == 200 and b"big THE END" in response.content


def test_the_fragment_needs_login(client, conversation):
    ingest(conversation, tool_events("big", huge_result("big")))
    response = client.get(text_url(conversation, tool_message(conversation, "big"), "output"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_fragment_is_404_for_what_is_no_tool_text(reader, conversation, user):
    ingest(conversation, {"type": "user.message", "content": "hello"})
    ingest(conversation, tool_events("big", huge_result("big")))
    user_message = conversation.messages.get(role="user")
    tool = tool_message(conversation, "big")
    elsewhere = Conversation.objects.create(owner=user, title="Other")
    assert reader.get(text_url(conversation, user_message, "output")).status_code == 404
    assert reader.get(text_url(conversation, tool, "everything")).status_code == 404
    assert reader.get(text_url(elsewhere, tool, "output")).status_code == 404  # not its own
    assert reader.get(f"/c/{conversation.pk}/tools/999999/output").status_code == 404


def test_g16_small_results_still_expand_in_place_without_a_fetch(reader, conversation):
    """Under the bound nothing changes: the full text and Details are in the page."""
    text = "\n".join(f"line {n}" for n in range(40))
    ingest(conversation, tool_events("small", text))
    page = reader.get(conversation.get_absolute_url()).content.decode()
    assert "line 39" in page and "data-tool-load" not in page and "data-copy-url" not in page


def test_p3_the_live_frame_of_a_huge_result_is_bounded(conversation):
    ingest(conversation, tool_events("big", huge_result("big"))[:1])
    result = ingest(conversation, tool_events("big", huge_result("big"))[1:])
    conversation.refresh_from_db()
    frame = frames.change_frame(conversation, result.last_seq, result.last_seq, result.changes)
    assert len(frame.html.encode()) < 64 * 1024, len(frame.html)
    assert "data-tool-load" in frame.html and "big THE END" not in frame.html


def test_s14_a_past_moment_fetches_the_text_as_it_stood(reader, conversation):
    started, completed = tool_events("big", huge_result("out"), args={"text": huge_result("in")})
    ingest(conversation, started)
    at = conversation.last_seq  # the call running, its huge args shown, no result yet
    ingest(conversation, completed)
    message = tool_message(conversation, "big")
    assert message.updated_seq > at  # the row changed since: the moment is projected
    page = reader.get(conversation.get_absolute_url(), {"at": at}).content.decode()
    args_url = f"{text_url(conversation, message, 'args')}?at={at}"
    details_url = f"{text_url(conversation, message, 'details')}?at={at}"
    assert f'data-copy-url="{args_url}"' in page and f'href="{details_url}"' in page
    assert "data-copy-output" not in page  # nothing to copy yet
    fragment = {"HTTP_HX_REQUEST": "true"}
    then = pre_text(reader.get(details_url, **fragment).content.decode())
    assert "in THE END" in then and '"result"' not in then  # as it stood then
    now = pre_text(
        reader.get(text_url(conversation, message, "details"), **fragment).content.decode()
    )
    assert '"result": "out line 00000' in now
    assert pre_text(reader.get(args_url, **fragment).content.decode()).endswith('in THE END"\n}')
    # No output at that moment: nothing to fetch.
    assert reader.get(text_url(conversation, message, "output"), {"at": at}).status_code == 404
    bad = reader.get(text_url(conversation, message, "output"), {"at": "x"})
    assert bad.status_code == 400 and b"'at'" in bad.content


def test_admin_audit_page_of_huge_results_stays_bounded(client, conversation, user):
    for number in range(3):
        ingest(conversation, tool_events(f"c{number}", huge_result(f"c{number}")))
    user.is_staff = user.is_superuser = True
    user.save()
    client.force_login(user)
    response = client.get(f"/admin/chatui/conversation/{conversation.pk}/change/")
    assert response.status_code == 200
    # Before the bound each result was there four times (full text, Details, and the
    # tool-call table's result), 3 × 900 KB × 4.
    assert len(response.content) < 512 * 1024, len(response.content)
    page = response.content.decode()
    assert "c0 THE END" not in page
    # The tool-call table and the transcript lead to the whole texts, invisible characters
    # marked as the admin marks them.
    message = tool_message(conversation, "c0")
    assert f'href="{text_url(conversation, message, "details")}?invisible=1"' in page
    assert page.count("data-audit-full-text") == 3


def test_p3_an_error_entry_keeps_no_huge_text_in_its_view(conversation):
    """An error shows its (cut) error, not the result block: a huge error text is neither
    in the page nor in the entry's view, which the presenter's memo keeps."""
    ingest(conversation, tool_events("bad", "")[:1])
    ingest(
        conversation,
        {
            "type": "agent.tool.completed",
            "run_id": "r1",
            "tool_call_id": "bad",
            "error": huge_result("bad"),
        },
    )
    entry = presenters.present_tool_entry(tool_message(conversation, "bad"))
    assert entry.is_error and entry.result.full_text is None
    assert len(entry.error) <= presenters.ERROR_CHARS
    assert entry.details_size is not None  # the Details, with the whole error, load on demand
