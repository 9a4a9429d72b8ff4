"""W6 a preview worth reading (docs/rendering.md#w6): a list or rail row previews the
latest assistant text's first sentence (masked, Markdown stripped), else the latest user
message — never a status line; a run's normal end adds no visible line, other stop
reasons still show."""

from __future__ import annotations

from django.test import Client

from chatui.ingest.service import ingest, reproject
from chatui.models import Conversation, Message
from chatui.read import listing, selectors
from chatui.read.previews import first_sentence, plain_text, preview_of

SECRET = "sk-" + "A1b2C3d4E5f6G7h8J9k0"
HOSTILE = '<script>alert("x")</script>'


def row_of(conversation: Conversation) -> listing.ConversationRow:
    return listing.present_row(selectors.conversation_row(conversation.pk))


def finished_run(answer: str, stop_reason: str = "end_turn") -> list[dict]:
    return [
        {"type": "user.message", "content": "What is in the repo?", "run_id": "r1"},
        {"type": "agent.status", "status": "running", "run_id": "r1"},
        {"type": "agent.step.completed", "message_id": "a1", "content": answer, "run_id": "r1"},
        {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "ls", "run_id": "r1"},
        {"type": "agent.tool.completed", "tool_call_id": "c1", "result": "tool output",
         "run_id": "r1"},
        {"type": "agent.continuation", "should_continue": False, "stop_reason": stop_reason,
         "resolved_by": "model", "run_id": "r1"},
        {"type": "agent.status", "status": "completed", "run_id": "r1"},
    ]  # fmt: skip


def test_w6_a_row_previews_the_answers_first_sentence_not_the_run_end(conversation):
    ingest(
        conversation, finished_run("**Three** files: `a.py`, [b](http://x). Then more.\n\nMore.")
    )
    preview = row_of(conversation).preview
    assert preview == "Three files: a.py, b."
    assert "Agent stopped" not in preview and "tool output" not in preview


def test_w6_a_normal_end_adds_no_line_other_stop_reasons_do(conversation):
    ingest(conversation, finished_run("Done."))
    assert not Message.objects.filter(conversation=conversation, status_type="continuation")
    other = Conversation.objects.create(owner=conversation.owner, title="limit")
    ingest(other, finished_run("Partial.", stop_reason="steps_limit"))
    (line,) = Message.objects.filter(conversation=other, status_type="continuation")
    assert line.content == "Agent stopped: steps_limit"
    reproject(conversation)  # the event stays in the log; a rebuild adds no line either
    assert not Message.objects.filter(conversation=conversation, status_type="continuation")


def test_w6_without_an_answer_the_row_previews_the_user_message(conversation):
    ingest(
        conversation,
        [
            {"type": "user.message", "content": f"Deploy it\nwith {SECRET}", "run_id": "r1"},
            {"type": "agent.status", "status": "failed", "error_message": "boom", "run_id": "r1"},
        ],
    )
    preview = row_of(conversation).preview
    assert preview.startswith("Deploy it with") and SECRET not in preview  # T3
    assert "boom" not in preview  # never a status line (the badge says Failed)


def test_w6_preview_masks_strips_and_escapes_hostile_text(conversation, user):
    ingest(conversation, finished_run(f"{HOSTILE} key {SECRET} # not a heading. Next."))
    preview = row_of(conversation).preview
    assert SECRET not in preview and "••••" + SECRET[-4:] in preview
    client = Client()
    client.force_login(user)
    html = client.get("/").content.decode()
    assert HOSTILE not in html and "&lt;script&gt;" in html


def test_w6_plain_text_and_first_sentence():
    assert plain_text("# Title\n\nBody") == "Title"
    assert plain_text("```\ncode\n```\n\n*Then* ~~this~~ ![alt](x.png)") == "Then this alt"
    assert plain_text("") == ""
    assert first_sentence("One. Two.") == "One."
    assert first_sentence("v1.2 is out! Yes") == "v1.2 is out!"
    assert first_sentence("no end") == "no end"
    assert preview_of("  ", "asked") == "asked"
    assert preview_of("```\n\n```", "asked") == "asked"
