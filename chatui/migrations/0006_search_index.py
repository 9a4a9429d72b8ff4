"""The full-text index of docs/rendering.md#search, in the database's own engine (see chatui.read.search).

SQLite: two FTS5 tables — chatui_message_search (rowid = message id) and
chatui_title_search (title, and the conversation's id as a token to find its row).
PostgreSQL: two tables with a `tsvector` column and a GIN index each.

chatui.read.search writes them inside ingest's transaction. Deleting is the database's
job: a trigger removes a message's (or conversation's) row with it, whoever deletes
it — reconciliation, re-projection, a cascade, a test's flush. (On SQLite a trigger
lives with its table: if a later migration makes Django rebuild chatui_message or
chatui_conversation, that migration must run these statements again. Searches join
back to the live rows, so a stale index row is never shown.)

The backfill indexes what already exists, through the same code as ingest.
"""

from django.db import migrations

SQLITE = [
    "CREATE VIRTUAL TABLE chatui_message_search USING fts5("
    " document, tokenize = 'unicode61 remove_diacritics 0')",
    "CREATE VIRTUAL TABLE chatui_title_search USING fts5("
    " title, conversation, tokenize = 'unicode61 remove_diacritics 0')",
    "CREATE TRIGGER chatui_message_search_forget AFTER DELETE ON chatui_message BEGIN"
    " DELETE FROM chatui_message_search WHERE rowid = old.id; END",
    "CREATE TRIGGER chatui_title_search_forget AFTER DELETE ON chatui_conversation BEGIN"
    " DELETE FROM chatui_title_search WHERE rowid IN (SELECT rowid FROM chatui_title_search"
    " WHERE conversation MATCH '\"' || old.id || '\"'); END",
]

SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS chatui_title_search_forget",
    "DROP TRIGGER IF EXISTS chatui_message_search_forget",
    "DROP TABLE IF EXISTS chatui_title_search",
    "DROP TABLE IF EXISTS chatui_message_search",
]

POSTGRES = [
    "CREATE TABLE chatui_message_search ("
    " message_id bigint PRIMARY KEY, document tsvector NOT NULL)",
    "CREATE INDEX chatui_message_search_document ON chatui_message_search USING gin (document)",
    "CREATE TABLE chatui_title_search ("
    " conversation_id uuid PRIMARY KEY, document tsvector NOT NULL)",
    "CREATE INDEX chatui_title_search_document ON chatui_title_search USING gin (document)",
    # No foreign keys: they would make Django's TRUNCATE (test flushes) fail. Triggers
    # do the cascade instead, per statement, for DELETE and for TRUNCATE.
    """CREATE FUNCTION chatui_message_search_forget() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM chatui_message_search;
      ELSE
        DELETE FROM chatui_message_search s USING gone WHERE s.message_id = gone.id;
      END IF;
      RETURN NULL;
    END $$""",
    """CREATE FUNCTION chatui_title_search_forget() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM chatui_title_search;
      ELSE
        DELETE FROM chatui_title_search t USING gone WHERE t.conversation_id = gone.id;
      END IF;
      RETURN NULL;
    END $$""",
    "CREATE TRIGGER chatui_message_search_forget AFTER DELETE ON chatui_message"
    " REFERENCING OLD TABLE AS gone FOR EACH STATEMENT"
    " EXECUTE FUNCTION chatui_message_search_forget()",
    "CREATE TRIGGER chatui_message_search_truncate AFTER TRUNCATE ON chatui_message"
    " FOR EACH STATEMENT EXECUTE FUNCTION chatui_message_search_forget()",
    "CREATE TRIGGER chatui_title_search_forget AFTER DELETE ON chatui_conversation"
    " REFERENCING OLD TABLE AS gone FOR EACH STATEMENT"
    " EXECUTE FUNCTION chatui_title_search_forget()",
    "CREATE TRIGGER chatui_title_search_truncate AFTER TRUNCATE ON chatui_conversation"
    " FOR EACH STATEMENT EXECUTE FUNCTION chatui_title_search_forget()",
]

POSTGRES_DROP = [
    "DROP TRIGGER IF EXISTS chatui_title_search_truncate ON chatui_conversation",
    "DROP TRIGGER IF EXISTS chatui_title_search_forget ON chatui_conversation",
    "DROP TRIGGER IF EXISTS chatui_message_search_truncate ON chatui_message",
    "DROP TRIGGER IF EXISTS chatui_message_search_forget ON chatui_message",
    "DROP FUNCTION IF EXISTS chatui_title_search_forget()",
    "DROP FUNCTION IF EXISTS chatui_message_search_forget()",
    "DROP TABLE IF EXISTS chatui_title_search",
    "DROP TABLE IF EXISTS chatui_message_search",
]


def _statements(vendor: str, *, drop: bool) -> list[str]:
    if vendor == "sqlite":
        return SQLITE_DROP if drop else SQLITE
    if vendor == "postgresql":
        return POSTGRES_DROP if drop else POSTGRES
    raise NotImplementedError(f"chatui's search index needs SQLite or PostgreSQL, not {vendor}")


def create_index(apps, schema_editor):
    for statement in _statements(schema_editor.connection.vendor, drop=False):
        schema_editor.execute(statement, params=None)
    from chatui.ingest import search_index as search

    search.rebuild(apps.get_model("chatui", "Message"), apps.get_model("chatui", "Conversation"))


def drop_index(apps, schema_editor):
    for statement in _statements(schema_editor.connection.vendor, drop=True):
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("chatui", "0005_conversation_created_at_index"),
    ]

    operations = [
        migrations.RunPython(create_index, drop_index),
    ]
