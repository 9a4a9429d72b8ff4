"""docs/rendering.md#admin: the Django admin as the auditing tool (chatui/admin/).

Auditors (the `auditor` group, staff) list, filter, search, open and export
transcripts and nothing else; nobody deletes events; untrusted text is escaped
and invisible characters are shown, while the stored text stays as it was.
"""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.html import escape

from chatui import admin as chatui_admin
from chatui.ingest.service import ingest
from chatui.live import frames
from chatui.models import ApiToken, Conversation, Event, Message
from chatui.read import reveal
from chatui.read.exporters import export_messages, export_otlp, export_proven_events
from chatui.read.selectors import messages_of
from chatui.read.serializers import message_to_dict
from chatui.templatetags.chatui_icons import ICONS
from chatui.text import neutralise
from tests.support.fixtures import FIXTURES
from tests.support.hostile import hostile_events
from tests.support.importer_files import HOSTILE_FILES, spy_on_parser

User = get_user_model()
CHANGELIST = "/admin/chatui/conversation/"
AUDITOR_PERMISSIONS = {
    "chatui.view_conversation",
    "chatui.view_message",
    "chatui.view_event",
    "chatui.view_run",
    # docs/sharing.md: auditors annotate, and see every note and share link.
    "chatui.annotate",
    "chatui.view_note",
    "chatui.view_sharelink",
}
#: The admin's own icons (theme toggle, base.html's symbols).
ADMIN_SVG_CLASSES = {
    "theme-icon-when-auto",
    "theme-icon-when-dark",
    "theme-icon-when-light",
    "base-svgs",
    # A1: the audit page's timeline axis and bars (chatui/admin/timeline.py), drawn by
    # the template from numbers alone.
    "chatui-tl-svg",
}
#: chatui's own W7 icons (chatui/icons/): no text of a transcript can make one.
OUR_ICON_CLASSES = {f"icon icon--{path.stem}" for path in ICONS.glob("*.svg")}
RLO = "\u202e"
ZWSP = "\u200b"
ZWJ = "\u200d"
LRI = "\u2066"


# -- fixtures ----------------------------------------------------------------------------


@pytest.fixture
def auditor(db):
    person = User.objects.create_user("audra", password="audra-password-1", is_staff=True)
    person.groups.add(Group.objects.get(name="auditor"))
    return person


@pytest.fixture
def superuser(db):
    return User.objects.create_superuser("root", password="root-password-1")


def client_for(person) -> Client:
    client = Client()
    client.force_login(person)
    return client


@pytest.fixture
def auditor_client(auditor) -> Client:
    return client_for(auditor)


@pytest.fixture
def super_client(superuser) -> Client:
    return client_for(superuser)


def make_conversation(owner, title: str, events: list[dict]) -> Conversation:
    conversation = Conversation.objects.create(owner=owner, title=title)
    ingest(conversation, events)
    return conversation


def weather_events() -> list[dict]:
    return [
        {"type": "user.message", "run_id": "r1", "content": "What is the weather in Paris?"},
        {"type": "agent.status", "run_id": "r1", "status": "running"},
        {
            "type": "agent.tool.started",
            "run_id": "r1",
            "tool_call_id": "w1",
            "tool_name": "get_weather",
            "args": {"city": "Paris", "units": "metric"},
        },
        {
            "type": "agent.tool.completed",
            "run_id": "r1",
            "tool_call_id": "w1",
            "result": {"temp_c": 21, "sky": "clear"},
            "duration_ms": 250,
        },
        {"type": "agent.step.completed", "run_id": "r1", "content": "It is 21 °C and clear."},
        {"type": "agent.status", "run_id": "r1", "status": "completed"},
    ]


def broken_build_events() -> list[dict]:
    return [
        {"type": "user.message", "run_id": "r1", "content": "Build the project please"},
        {"type": "agent.status", "run_id": "r1", "status": "running"},
        {
            "type": "agent.tool.started",
            "run_id": "r1",
            "tool_call_id": "b1",
            "tool_name": "run_cmd",
            "args": {"command": "make build"},
        },
        {
            "type": "agent.tool.completed",
            "run_id": "r1",
            "tool_call_id": "b1",
            "error": "make: *** [build] Error 2",
        },
        {"type": "agent.status", "run_id": "r1", "status": "failed", "error_message": "gave up"},
    ]


@pytest.fixture
def corpus(user, other_user):
    """Three conversations: a tool call that worked, one that failed, and plain chat."""
    weather = make_conversation(user, "Weather", weather_events())
    build = make_conversation(other_user, "Build", broken_build_events())
    chat = make_conversation(user, "Chat", [{"type": "user.message", "content": "hello there"}])
    Conversation.objects.filter(pk=chat.pk).update(created_at=datetime(2024, 3, 5, tzinfo=UTC))
    return {"weather": weather, "build": build, "chat": chat}


def listed_titles(response) -> set[str]:
    assert response.status_code == 200, response.status_code
    return {str(conversation) for conversation in response.context["cl"].result_list}


def change_url(conversation: Conversation) -> str:
    return reverse("admin:chatui_conversation_change", args=[conversation.pk])


def post_action(client: Client, action: str, *conversations: Conversation):
    return client.post(
        CHANGELIST,
        {"action": action, "_selected_action": [str(c.pk) for c in conversations], "index": 0},
    )


class MarkupScanner(HTMLParser):
    """Every start tag with its attributes, and the text of inline <script>s."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.inline_scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script and data.strip():
            self.inline_scripts.append(data)


def assert_inert(html: str) -> None:
    """Nothing from content became markup: no handlers, no htmx, no foreign script."""
    scanner = MarkupScanner()
    scanner.feed(html)
    problems = []
    for tag, attrs in scanner.tags:
        for name, value in attrs.items():
            value = (value or "").replace(" ", "").lower()
            if name.startswith("on") or name == "style":
                problems.append(f"{tag} {name}")
            if (name.startswith("hx-") or name.startswith("data-hx")) and name != "hx-disable":
                problems.append(f"{tag} {name}")
            if value.startswith(("javascript:", "data:")):
                problems.append(f"{tag} {name}={value}")
        if tag in {"iframe", "style", "object", "embed", "base"}:
            problems.append(tag)
        if tag == "svg" and attrs.get("class") not in ADMIN_SVG_CLASSES | OUR_ICON_CLASSES:
            problems.append(f"svg {attrs}")
        if tag == "script" and not (attrs.get("src") or "").startswith(("/static/", "/admin/")):
            problems.append(f"script {attrs}")
        if tag == "img" and not (attrs.get("src") or "").startswith("/static/"):
            problems.append(f"img {attrs}")
        if tag == "form" and not (attrs.get("action") or "/admin/").startswith("/admin/"):
            problems.append(f"form {attrs}")
    assert problems == []
    assert scanner.inline_scripts == []


# -- the auditor group -------------------------------------------------------------------


def test_auditor_group_migration_grants_exactly_the_view_permissions(db):
    group = Group.objects.get(name="auditor")
    granted = {
        f"{permission.content_type.app_label}.{permission.codename}"
        for permission in group.permissions.select_related("content_type")
    }
    assert granted == AUDITOR_PERMISSIONS


def test_auditor_has_view_permissions_only(auditor):
    assert auditor.get_all_permissions() == AUDITOR_PERMISSIONS
    assert not auditor.has_perm("chatui.view_apitoken")
    assert not auditor.has_perm("chatui.change_conversation")


# -- listing, filtering, searching ---------------------------------------------------------


def test_auditor_lists_conversations_with_annotated_counts(
    auditor_client, corpus, django_assert_max_num_queries
):
    with django_assert_max_num_queries(15):
        response = auditor_client.get(CHANGELIST)
    rows = {str(c): c for c in response.context["cl"].result_list}
    assert set(rows) == {"Weather", "Build", "Chat"}
    weather, build, chat = rows["Weather"], rows["Build"], rows["Chat"]
    assert (weather.n_messages, weather.n_tools, weather.n_failed) == (3, 1, 0)
    # W4 (docs/rendering.md#w4): failed tool calls by final outcome, as the page and the
    # list count them; the failed run's banner is not a tool call (the errors filter
    # still finds it).
    assert (build.n_tools, build.n_failed) == (1, 1)
    assert (chat.n_messages, chat.n_tools, chat.n_failed) == (1, 0, 0)
    html = response.content.decode()
    assert "alice" in html and "mallory" in html


def test_conversation_list_query_count_does_not_grow_with_rows(auditor_client, corpus, user):
    auditor_client.get(CHANGELIST)  # warm caches (content types, sessions)
    with CaptureQueriesContext(connection) as few:
        auditor_client.get(CHANGELIST)
    for n in range(5):
        make_conversation(user, f"More {n}", weather_events())
    with CaptureQueriesContext(connection) as more:
        auditor_client.get(CHANGELIST)
    assert len(more.captured_queries) == len(few.captured_queries)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status__exact=failed", {"Build"}),
        ("status__exact=completed", {"Weather"}),
        ("has_errors=yes", {"Build"}),
        ("has_errors=no", {"Weather", "Chat"}),
        ("tool=get_weather", {"Weather"}),
        ("tool=run_cmd", {"Build"}),
        ("owner__id__exact={mallory}", {"Build"}),
        ("created_at__year=2024", {"Chat"}),
        ("created_at__year=2024&created_at__month=3&created_at__day=5", {"Chat"}),
    ],
)
def test_auditor_filters_conversations(auditor_client, corpus, other_user, query, expected):
    response = auditor_client.get(f"{CHANGELIST}?{query.format(mallory=other_user.pk)}")
    assert listed_titles(response) == expected


def test_filter_sidebar_offers_every_filter(auditor_client, corpus):
    html = auditor_client.get(CHANGELIST).content.decode()
    for param in ("status__exact=", "has_errors=yes", "tool=get_weather", "owner__id__exact="):
        assert param in html
    assert "created_at__year=" in html  # the date hierarchy


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        ("Paris", {"Weather"}),  # message text
        ("hello there", {"Chat"}),  # message text, two words
        ("get_weather", {"Weather"}),  # tool name
        ("run_cmd", {"Build"}),  # tool name
        ("mallory", {"Build"}),  # owner
        ("Weather", {"Weather"}),  # title
    ],
)
def test_auditor_searches_message_text_and_tool_names(auditor_client, corpus, term, expected):
    response = auditor_client.get(CHANGELIST, {"q": term})
    assert listed_titles(response) == expected
    counts = {str(c): c.n_messages for c in response.context["cl"].result_list}
    if "Weather" in counts:
        assert counts["Weather"] == 3  # the search's join does not inflate the counts


# -- the audit page --------------------------------------------------------------------------


def test_auditor_opens_the_transcript_rendered_read_only(auditor_client, corpus):
    weather = corpus["weather"]
    response = auditor_client.get(change_url(weather))
    assert response.status_code == 200
    html = response.content.decode()
    # The page's own partials: #transcript with its DOM hooks.
    assert 'id="transcript"' in html
    assert "data-tool-batch" in html
    assert 'data-role="user"' in html and 'data-role="assistant"' in html
    assert 'data-tool-call-id="w1"' in html
    assert "Get Weather" in html
    # Read-only: no composer, no socket, no save button, no delete link.
    assert 'id="composer"' not in html
    assert "ws-connect" not in html
    assert 'name="_save"' not in html
    assert "deletelink" not in html
    # Tool calls with args and results as pretty JSON; runs; the raw events.
    assert '<pre class="chatui-json" tabindex="0">{\n  &quot;city&quot;: &quot;Paris&quot;' in html
    assert "&quot;temp_c&quot;: 21" in html
    assert 'id="audit-runs"' in html
    events_url = f"/admin/chatui/event/?conversation={weather.pk}"
    assert events_url in html
    assert_inert(html)


def test_admin_transcript_uses_the_page_partials(auditor_client, corpus, auditor):
    """Same partials as the page: the #transcript element matches the page's (no
    invisible characters here, so the admin's reveal pass changes nothing)."""
    weather = corpus["weather"]
    admin_html = auditor_client.get(change_url(weather)).content.decode()
    page_html = auditor_client.get(weather.get_absolute_url()).content.decode()
    start = '<section id="transcript"'

    def transcript_of(html: str) -> str:
        begin = html.index(start)
        return html[begin : html.index("</section>", begin)]

    assert transcript_of(admin_html) == transcript_of(page_html)
    assert frames.TEMPLATE == "chatui/_transcript.html"


def test_raw_events_list_is_scoped_to_the_conversation_in_seq_order(auditor_client, corpus):
    weather = corpus["weather"]
    response = auditor_client.get("/admin/chatui/event/", {"conversation": str(weather.pk)})
    assert response.status_code == 200
    seqs = [event.seq for event in response.context["cl"].result_list]
    assert seqs == list(range(1, len(weather_events()) + 1))
    event = Event.objects.filter(conversation=weather).first()
    detail = auditor_client.get(reverse("admin:chatui_event_change", args=[event.pk]))
    assert detail.status_code == 200
    assert (
        "&quot;content&quot;: &quot;What is the weather in Paris?&quot;" in detail.content.decode()
    )
    bad = auditor_client.get("/admin/chatui/event/", {"conversation": "not-a-uuid"})
    assert bad.status_code == 302 and "e=1" in bad["Location"]


def test_auditor_views_messages_and_runs(auditor_client, corpus):
    build = corpus["build"]
    for model in ("message", "run"):
        response = auditor_client.get(f"/admin/chatui/{model}/", {"conversation": str(build.pk)})
        assert response.status_code == 200
        assert response.context["cl"].result_count >= 1
    tool = Message.objects.get(conversation=build, tool_call_id="b1")
    detail = auditor_client.get(reverse("admin:chatui_message_change", args=[tool.pk]))
    assert detail.status_code == 200
    assert "make: *** [build] Error 2" in detail.content.decode()


# -- permissions -----------------------------------------------------------------------------


def test_auditor_gets_403_on_add_change_and_delete(auditor_client, corpus):
    weather = corpus["weather"]
    event = Event.objects.filter(conversation=weather).first()
    message = Message.objects.filter(conversation=weather).first()
    forbidden = [
        ("get", "/admin/chatui/conversation/add/"),
        ("post", "/admin/chatui/conversation/add/"),
        ("post", change_url(weather)),
        ("get", f"/admin/chatui/conversation/{weather.pk}/delete/"),
        ("post", f"/admin/chatui/conversation/{weather.pk}/delete/"),
        ("get", "/admin/chatui/conversation/import/"),
        ("post", "/admin/chatui/conversation/import/"),
        ("get", "/admin/chatui/event/add/"),
        ("post", f"/admin/chatui/event/{event.pk}/change/"),
        ("post", f"/admin/chatui/event/{event.pk}/delete/"),
        ("post", f"/admin/chatui/message/{message.pk}/change/"),
        ("post", f"/admin/chatui/message/{message.pk}/delete/"),
        ("get", "/admin/chatui/apitoken/"),
    ]
    for method, url in forbidden:
        response = getattr(auditor_client, method)(url, {"title": "changed"})
        assert response.status_code == 403, (method, url, response.status_code)
    weather.refresh_from_db()
    assert weather.title == "Weather"
    assert Event.objects.filter(conversation=weather).count() == len(weather_events())


def test_auditor_cannot_run_reproject(auditor_client, corpus):
    weather = corpus["weather"]
    changelist = auditor_client.get(CHANGELIST).content.decode()
    assert 'value="reproject_conversations"' not in changelist
    assert 'value="export_messages"' in changelist
    assert "data-import-link" not in changelist
    before = list(Message.objects.filter(conversation=weather).values_list("pk", flat=True))
    response = post_action(auditor_client, "reproject_conversations", weather)
    assert response.status_code == 302  # "No action selected": nothing ran
    after = list(Message.objects.filter(conversation=weather).values_list("pk", flat=True))
    assert after == before


def test_superuser_reprojects_to_the_same_messages(super_client, corpus):
    weather = corpus["weather"]
    before = [message_to_dict(m) for m in messages_of(weather)]
    old_pks = set(Message.objects.filter(conversation=weather).values_list("pk", flat=True))
    response = post_action(super_client, "reproject_conversations", weather)
    assert response.status_code == 302
    assert set(
        Message.objects.filter(conversation=weather).values_list("pk", flat=True)
    ).isdisjoint(old_pks)
    assert [message_to_dict(m) for m in messages_of(weather)] == before


def test_nobody_can_delete_events_through_the_admin(super_client, superuser, corpus, rf):
    weather = corpus["weather"]
    event = Event.objects.filter(conversation=weather).first()
    count = Event.objects.count()
    assert super_client.get(f"/admin/chatui/event/{event.pk}/delete/").status_code == 403
    assert (
        super_client.post(f"/admin/chatui/event/{event.pk}/delete/", {"post": "yes"}).status_code
        == 403
    )
    # No delete action on the list (erasing content is its one action, which keeps the
    # event: docs/auditing.md#erasing-content), and posting one does nothing.
    listing = super_client.get("/admin/chatui/event/").content.decode()
    assert "delete_selected" not in listing
    response = super_client.post(
        "/admin/chatui/event/",
        {"action": "delete_selected", "_selected_action": [event.pk], "post": "yes"},
    )
    assert response.status_code in (200, 302)
    # Nor through a conversation, whose deletion would cascade to its events.
    assert (
        super_client.post(
            f"/admin/chatui/conversation/{weather.pk}/delete/", {"post": "yes"}
        ).status_code
        == 403
    )
    post_action(super_client, "delete_selected", weather)
    assert Event.objects.count() == count
    assert Conversation.objects.filter(pk=weather.pk).exists()
    request = rf.get("/admin/chatui/event/")
    request.user = superuser
    event_admin = chatui_admin.admin.site._registry[Event]
    assert set(event_admin.get_actions(request)) == {"erase_selected"}
    assert not event_admin.has_delete_permission(request, event)
    for model in (Conversation, Message, Event):
        model_admin = chatui_admin.admin.site._registry[model]
        assert "delete_selected" not in model_admin.get_actions(request)


def test_deleting_a_user_cannot_cascade_to_their_event_log(super_client, user, corpus):
    """The auth admin collects what a deletion would cascade to and refuses it when an
    admin (ours) says those objects cannot be deleted."""
    url = reverse("admin:auth_user_delete", args=[user.pk])
    count = Event.objects.count()
    assert super_client.post(url, {"post": "yes"}).status_code == 403
    assert User.objects.filter(pk=user.pk).exists()
    assert Event.objects.count() == count


def test_superuser_views_but_cannot_change_conversations(super_client, corpus):
    weather = corpus["weather"]
    html = super_client.get(change_url(weather)).content.decode()
    assert 'name="_save"' not in html
    assert super_client.post(change_url(weather), {"title": "x"}).status_code == 403
    assert super_client.get("/admin/chatui/conversation/add/").status_code == 403


# -- untrusted text --------------------------------------------------------------------------


def test_hostile_transcript_renders_escaped_in_admin_change_view(super_client, user):
    hostile = make_conversation(user, "<img src=x onerror=alert('title')>", hostile_events())
    html = super_client.get(change_url(hostile)).content.decode()
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert escape("<script>alert('xss-script')</script>") in html
    assert_inert(html)


def test_hostile_text_is_escaped_in_every_admin_list_and_detail(super_client, user):
    hostile = make_conversation(user, "<script>alert('t')</script>", hostile_events())
    urls = [CHANGELIST, f"{CHANGELIST}?q=script"]
    for model in ("event", "message", "run"):
        urls.append(f"/admin/chatui/{model}/?conversation={hostile.pk}")
    urls += [
        reverse("admin:chatui_event_change", args=[pk])
        for pk in Event.objects.filter(conversation=hostile).values_list("pk", flat=True)
    ]
    urls += [
        reverse("admin:chatui_message_change", args=[pk])
        for pk in Message.objects.filter(conversation=hostile).values_list("pk", flat=True)
    ]
    for url in urls:
        response = super_client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert "<script>alert" not in html, url
        assert_inert(html)


# -- invisible characters --------------------------------------------------------------------


def test_reveal_invisible_marks_bidi_and_zero_width_and_escapes():
    shown = reveal.reveal_invisible(f"<b>a{RLO}b{ZWSP}c{LRI}d\u00ade\U000e0041</b>\n\tok")
    assert "<b>" not in shown and "&lt;b&gt;" in shown
    for code in ("U+202E", "U+200B", "U+2066", "U+00AD", "U+E0041"):
        assert f'data-invisible="{code}"' in shown
        assert f"⟨{code}⟩" in shown
    assert RLO not in shown and ZWSP not in shown
    assert "\n\tok" in shown  # ordinary whitespace stays
    assert reveal.reveal_text(f"x{RLO}y") == "x⟨U+202E⟩y"


def test_reveal_invisible_leaves_ordinary_text_alone():
    text = "Café 中文 😀 ⚠️ ok – “quotes” \u00a0nbsp"
    assert reveal.reveal_invisible(text) == escape(text)
    assert not reveal.has_invisible(text)
    assert reveal.has_invisible(f"a{ZWJ}b")


def test_bidi_and_zero_width_revealed_in_admin_but_stored_unchanged(super_client, user):
    title = f"Invoice {RLO}fdp.exe"
    events = [
        {"type": "user.message", "content": f"pay{ZWSP}pal login"},
        {
            "type": "agent.tool.started",
            "tool_call_id": "t1",
            "tool_name": f"read{ZWJ}file",
            "args": {"path": f"a{LRI}b.txt"},
        },
        {
            "type": "agent.tool.completed",
            "tool_call_id": "t1",
            "result": f"mail ops@example.com, then {RLO}cod.exe",
        },
        {"type": "agent.step.completed", "content": f"**Done** {RLO}txt.exe"},
    ]
    conversation = make_conversation(user, title, events)
    stored = {
        "messages": [message_to_dict(m) for m in messages_of(conversation)],
        "events": [e.payload for e in Event.objects.filter(conversation=conversation)],
    }

    html = super_client.get(change_url(conversation)).content.decode()
    for code in ("U+202E", "U+200B", "U+200D", "U+2066"):
        assert f'data-invisible="{code}"' in html, code
    assert RLO not in html and ZWJ not in html and LRI not in html
    transcript = html[html.index('<section id="transcript"') :]
    # The transcript: user text, tool title, call line, result and Markdown all revealed.
    assert "pay<span" in transcript
    assert "Read" in transcript and "⟨U+200D⟩" in transcript
    assert "<strong>Done</strong> <span" in transcript
    # T1: the "@" keeps its (unshown) neutralising ZWSP; it is not reported as content.
    assert f"ops@{ZWSP}example.com" in transcript
    assert "ops@<span" not in transcript
    # The list and the page title show the marker too.
    listing = super_client.get(CHANGELIST).content.decode()
    assert 'Invoice <span class="invisible-char" data-invisible="U+202E"' in listing
    assert "<title>Invoice ⟨U+202E⟩fdp.exe | View conversation" in html

    conversation.refresh_from_db()
    assert conversation.title == title
    assert stored == {
        "messages": [message_to_dict(m) for m in messages_of(conversation)],
        "events": [e.payload for e in Event.objects.filter(conversation=conversation)],
    }
    assert (
        Message.objects.get(conversation=conversation, role="user").content == f"pay{ZWSP}pal login"
    )


def test_invisible_characters_in_an_approval_reason_are_revealed_in_admin(super_client, user):
    events = [
        {
            "type": "agent.tool.approval_requested",
            "tool_call_id": "t1",
            "tool_name": "delete_file",
            "reason": f"removes {RLO}gpj.exe",
        },
    ]
    conversation = make_conversation(user, "approval", events)
    html = super_client.get(change_url(conversation)).content.decode()
    transcript = html[html.index('<section id="transcript"') :]
    assert 'removes <span class="invisible-char" data-invisible="U+202E"' in transcript
    assert RLO not in html


def test_invisible_characters_in_validation_and_streaming_text_are_revealed_in_admin(
    super_client, user
):
    """Every text of the presented transcript goes through the admin's display
    (chatui.read.display), the ones reveal.py's field-by-field pass once left out too."""
    events = [
        {"type": "agent.step.completed", "content": f"<validation>ok {RLO}gpj.exe</validation>"},
        {"type": "agent.message.delta", "message_id": "typing", "delta": f"still {LRI}typing"},
    ]
    conversation = make_conversation(user, "validation", events)
    html = super_client.get(change_url(conversation)).content.decode()
    transcript = html[html.index('<section id="transcript"') :]
    assert 'ok <span class="invisible-char" data-invisible="U+202E"' in transcript
    assert 'still <span class="invisible-char" data-invisible="U+2066"' in transcript
    assert RLO not in html and LRI not in html


def test_stored_zero_width_after_at_is_still_revealed_in_tool_text():
    shown = reveal._reveal_tool_text(neutralise(f"a@{ZWSP}b and c@d"))
    assert shown == f'a@{ZWSP}<span class="invisible-char" data-invisible="U+200B" ' + (
        f'title="U+200B ZERO WIDTH SPACE">⟨U+200B⟩</span>b and c@{ZWSP}d'
    )


def test_reveal_in_sanitised_html_never_touches_attributes():
    html = f'<p><a href="https://e.example/a{RLO}b">x{RLO}</a> y</p>'
    shown = reveal._reveal_html(html)
    assert f'href="https://e.example/a{RLO}b"' in shown
    assert 'x<span class="invisible-char"' in shown


# -- exports ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "suffix", "content_type"),
    [
        ("export_messages", "messages.json", "application/json"),
        ("export_events", "events.jsonl", "application/x-ndjson"),
        ("export_otlp", "otlp.json", "application/json"),
    ],
)
def test_export_action_downloads_one_file_for_one_conversation(
    auditor_client, corpus, action, suffix, content_type
):
    weather = corpus["weather"]
    weather.refresh_from_db()
    response = post_action(auditor_client, action, weather)
    assert response.status_code == 200
    assert response["Content-Type"].startswith(content_type)
    assert response["Content-Disposition"] == (
        f'attachment; filename="conversation-{weather.pk}-{suffix}"'
    )
    body = response.content.decode()
    if action == "export_messages":
        assert json.loads(body) == json.loads(json.dumps(export_messages(weather)))
    elif action == "export_events":
        lines = [json.loads(line) for line in body.splitlines()]
        # Each event with its proof, then the signed checkpoints
        # (docs/auditing.md#verifying-an-export).
        assert lines == json.loads(json.dumps(list(export_proven_events(weather))))
        events = [line for line in lines if "chatui_proof" in line]
        assert [line["type"] for line in events] == [e["type"] for e in weather_events()]
    else:
        assert json.loads(body) == json.loads(json.dumps(export_otlp(weather)))


def test_export_action_zips_several_conversations(auditor_client, corpus):
    weather, build = corpus["weather"], corpus["build"]
    response = post_action(auditor_client, "export_events", weather, build)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert 'filename="chatui-2-conversations-events.jsonl.zip"' in response["Content-Disposition"]
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        names = archive.namelist()
        assert names == [
            f"conversation-{weather.pk}-events.jsonl",
            f"conversation-{build.pk}-events.jsonl",
        ]
        build_lines = archive.read(names[1]).decode().splitlines()
    assert [json.loads(line) for line in build_lines] == json.loads(
        json.dumps(list(export_proven_events(build)))
    )


# -- import upload ---------------------------------------------------------------------------


def upload(name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (FIXTURES / "imports" / name).read_bytes())


def test_import_upload_creates_a_conversation_with_the_expected_messages(super_client, user):
    changelist = super_client.get(CHANGELIST).content.decode()
    assert "data-import-link" in changelist
    form = super_client.get("/admin/chatui/conversation/import/")
    assert form.status_code == 200
    response = super_client.post(
        "/admin/chatui/conversation/import/",
        {"file": upload("openai.json"), "format": "openai", "owner": user.pk, "title": "Imported"},
    )
    conversation = Conversation.objects.get(title="Imported")
    assert response.status_code == 302
    assert response["Location"] == change_url(conversation)
    assert conversation.owner == user
    expected = json.loads((FIXTURES / "imports" / "openai.expected.json").read_text())
    assert [message_to_dict(m) for m in messages_of(conversation)] == expected
    page = super_client.get(response["Location"]).content.decode()
    assert "data-tool-batch" in page


@pytest.mark.parametrize(
    ("path", "fmt"),
    [
        ("claude_code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl", "claude-code"),
        ("codex/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl", "codex"),
    ],
)
def test_import_upload_takes_a_coding_agents_session(super_client, user, path, fmt):
    """docs/events.md#sessions: the admin's upload takes Claude Code and Codex session files."""
    form = super_client.get("/admin/chatui/conversation/import/").content.decode()
    assert f'value="{fmt}"' in form
    raw = (FIXTURES / path).read_bytes()
    response = super_client.post(
        "/admin/chatui/conversation/import/",
        {"file": SimpleUploadedFile("session.jsonl", raw), "format": fmt, "owner": user.pk},
    )
    assert response.status_code == 302
    conversation = Conversation.objects.get(owner=user)
    assert conversation.status == "completed"
    assert Message.objects.filter(conversation=conversation, role="tool").count() > 20
    page = super_client.get(response["Location"]).content.decode()
    assert "data-tool-batch" in page


def test_import_upload_shows_a_bad_file_as_a_form_error_and_creates_nothing(super_client, user):
    count = Conversation.objects.count()
    response = super_client.post(
        "/admin/chatui/conversation/import/",
        {
            "file": SimpleUploadedFile("bad.json", b"{not json"),
            "format": "openai",
            "owner": user.pk,
            "title": "Broken",
        },
    )
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert "file" in errors
    assert 'class="errorlist' in response.content.decode()
    assert Conversation.objects.count() == count


def post_import(client, user, raw: bytes, fmt: str):
    return client.post(
        "/admin/chatui/conversation/import/",
        {"file": SimpleUploadedFile("upload.txt", raw), "format": fmt, "owner": user.pk},
    )


@pytest.mark.parametrize(("fmt", "case", "raw", "says"), HOSTILE_FILES)
def test_sec6_import_upload_of_a_hostile_file_is_a_form_error_never_a_500(
    super_client, user, fmt, case, raw, says
):
    count = Conversation.objects.count()
    response = post_import(super_client, user, raw, fmt)
    assert response.status_code == 200
    (error,) = response.context["form"].errors["file"]
    assert says in error
    assert escape(says) in response.content.decode()
    assert Conversation.objects.count() == count


def test_import_upload_larger_than_the_setting_is_a_form_error(super_client, user, settings):
    settings.CHATUI_IMPORT_MAX_BYTES = 100
    response = post_import(super_client, user, b"x" * 101, "legacy")
    assert response.status_code == 200
    assert response.context["form"].errors["file"] == ["The file is larger than 100 B."]
    assert not Conversation.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_import_upload_parses_before_opening_a_transaction(super_client, user, monkeypatch):
    """A big file must not hold the database's write lock while it is parsed."""
    seen = spy_on_parser(monkeypatch, "legacy")
    response = post_import(
        super_client, user, (FIXTURES / "imports" / "legacy.json").read_bytes(), "legacy"
    )
    assert response.status_code == 302
    assert seen == [False]


def test_import_upload_needs_the_add_permission(corpus, auditor, auditor_client):
    response = auditor_client.post(
        "/admin/chatui/conversation/import/",
        {"file": upload("openai.json"), "format": "openai", "owner": auditor.pk},
    )
    assert response.status_code == 403
    auditor.user_permissions.add(Permission.objects.get(codename="add_conversation"))
    importer = client_for(User.objects.get(pk=auditor.pk))
    response = importer.post(
        "/admin/chatui/conversation/import/",
        {"file": upload("openai.json"), "format": "openai", "owner": auditor.pk},
    )
    assert response.status_code == 302


# -- API tokens ------------------------------------------------------------------------------


def test_api_tokens_are_listed_without_hashes_and_revocable_by_superusers(super_client, user):
    token, raw = ApiToken.issue(user, name="ci")
    listing = super_client.get("/admin/chatui/apitoken/").content.decode()
    assert token.prefix in listing and "ci" in listing
    detail = super_client.get(reverse("admin:chatui_apitoken_change", args=[token.pk]))
    for html in (listing, detail.content.decode()):
        assert token.key_hash not in html
        assert raw not in html
    assert super_client.get("/admin/chatui/apitoken/add/").status_code == 403
    assert (
        super_client.post(
            reverse("admin:chatui_apitoken_change", args=[token.pk]), {"name": "x"}
        ).status_code
        == 403
    )
    response = super_client.post(
        reverse("admin:chatui_apitoken_delete", args=[token.pk]), {"post": "yes"}
    )
    assert response.status_code == 302
    assert not ApiToken.objects.filter(pk=token.pk).exists()


def test_staff_with_token_permissions_but_not_superuser_cannot_revoke(user, db):
    staff = User.objects.create_user("staffer", password="staffer-password-1", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__endswith="_apitoken"))
    token, _ = ApiToken.issue(user)
    client = client_for(staff)
    assert client.get("/admin/chatui/apitoken/").status_code == 200
    assert (
        client.post(
            reverse("admin:chatui_apitoken_delete", args=[token.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    assert ApiToken.objects.filter(pk=token.pk).exists()
