"""The Django admin as the auditing tool (docs/rendering.md#admin).

Everything here reads; nothing writes a Message, a Run or an Event except
through `chatui.ingest.service` (the import view) and `reproject` (the re-project
action). Conversations, messages, events and runs are read-only for everyone,
superusers included; events (and the conversations that own them) can never be
deleted from the admin.

- Conversations: owner, status, counts of messages, tool calls and errors
  (annotated, one query); filters by status, errors, tool name, owner and date;
  search over titles, owners, message text and tool names. The change view shows
  the transcript with the page's own partials (chatui/_transcript.html), the tool
  calls with their args and results as pretty JSON, the runs, and links to the
  raw events. Actions: export (messages JSON, events JSONL, OTLP JSON: one file
  for one conversation, a zip of one file per conversation for several) for
  anyone who may view; re-project for users with `chatui.change_conversation`.
  An import view (`import/`) needs `chatui.add_conversation`.

One module per model admin; base.py holds what they share (AuditAdmin: the
stylesheet and read-only permissions), audit.py the conversation audit page.
- Events, messages, runs: read-only, payload and metadata pretty-printed.
- Auditors' notes and share links (notes.py, docs/sharing.md): notes are added from the
  audit page as `audit.note` events through ingest; links are listed, never their tokens.
- API tokens: listed without their hashes; superusers may revoke (delete) them.
  Tokens are created with `manage.py create_api_token`.

Invisible characters are shown to auditors as visible markers (`chatui.read.reveal`);
the stored text is never changed.

Untrusted text is escaped everywhere: whatever is marked safe here is built by
`format_html` or `reveal_invisible`, which escapes its input.
"""

from django.contrib import admin

from . import conversations, events, messages, notes, runs, tokens

admin.site.site_header = "chatui audit"
admin.site.site_title = "chatui audit"
admin.site.index_title = "Transcripts and their event logs"

__all__ = ["admin", "conversations", "events", "messages", "notes", "runs", "tokens"]
