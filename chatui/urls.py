"""The app's URLs: pages, the API and the health check. A project mounts them all with
one `path("<prefix>/", include("chatui.urls"))`; reversing uses the namespaces
`chatui:` (pages) and `api:` (the API), and `healthz`. Login, logout and the admin
are the project's (config/urls.py)."""

from django.urls import include, path, re_path

from chatui.web import (
    api,
    approval_views,
    attachment_views,
    health,
    note_views,
    otlp,
    replay_views,
    share_views,
    tool_text_views,
    views,
)

#: One conversation's pages, under c/<conversation_id>/.
conversation_pages = [
    path("", views.conversation_page, name="conversation"),
    path("messages", views.send_message, name="send-message"),
    path("transcript", views.transcript_fragment, name="transcript"),
    path("earlier", views.earlier_messages, name="earlier"),
    path("calls/<int:batch_start>/earlier", views.earlier_calls, name="earlier-calls"),
    path("stop", views.stop_run, name="stop-run"),
    path("at/<str:at>", replay_views.moment_fragment, name="moment"),
    path("replay", replay_views.replay_page, name="replay"),
    path("tools/<int:message_pk>/approval", approval_views.decide_from_page, name="decide-tool"),
    # docs/sharing.md: an auditor's note, the owner's share links.
    path("notes", note_views.add_note_from_page, name="add-note"),
    path("shares", share_views.create_from_page, name="create-share"),
    path("shares/<int:link_pk>/revoke", share_views.revoke_from_page, name="revoke-share"),
    # A tool entry's texts beyond the page's bound (presenters.TEXT_PARTS), on demand.
    re_path(
        r"^tools/(?P<message_pk>[0-9]{1,18})/(?P<part>output|details|args)$",
        tool_text_views.tool_text,
        name="tool-text",
    ),
    # docs/rendering.md#g21: an MCP result's image, audio or blob, to this conversation's readers.
    re_path(
        r"^attachments/(?P<sha256>[0-9a-f]{64})$", attachment_views.attachment, name="attachment"
    ),
]

page_patterns = [
    path("", views.conversation_list, name="conversation-list"),
    path("new/", views.new_conversation, name="new-conversation"),
    path("showcase", views.showcase, name="showcase"),
    path("c/<uuid:conversation_id>/", include(conversation_pages)),
    # docs/sharing.md#links: a share link, read-only and without an account.
    path("s/<str:token>/", share_views.shared_page, name="shared"),
    re_path(
        r"^s/(?P<token>[^/]+)/attachments/(?P<sha256>[0-9a-f]{64})$",
        attachment_views.shared_attachment,
        name="shared-attachment",
    ),
]

api_patterns = [
    path("conversations", api.conversations, name="conversations"),
    path("conversations/<uuid:conversation_id>", api.conversation_detail, name="conversation"),
    path(
        "conversations/<uuid:conversation_id>/events",
        api.conversation_events,
        name="conversation-events",
    ),
    path(
        "conversations/<uuid:conversation_id>/approvals/<path:tool_call_id>",
        approval_views.approval_endpoint,
        name="approval",
    ),
    # The key that verifies checkpoints, without a token (chatui.server.edge,
    # docs/auditing.md#the-signing-key).
    path("keys", api.keys, name="keys"),
    path(
        "conversations/<uuid:conversation_id>/notes",
        note_views.notes_endpoint,
        name="conversation-notes",
    ),
    path(
        "conversations/<uuid:conversation_id>/shares",
        share_views.shares_endpoint,
        name="conversation-shares",
    ),
    path("shares/<int:link_pk>", share_views.share_detail, name="share"),
    # docs/events.md#otlp: an OpenTelemetry exporter's endpoint is …/api/v1/otlp.
    path("otlp/v1/traces", otlp.otlp_traces, name="otlp-traces"),
    path("otlp/v1/logs", otlp.otlp_logs, name="otlp-logs"),
]

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("api/v1/", include((api_patterns, "api"))),
    re_path(r"^api(?:/|$)", api.not_found),  # unknown API paths answer JSON too
    path("", include((page_patterns, "chatui"))),
]
