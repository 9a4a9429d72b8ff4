"""Count a conversation's projection rebuilds (docs/PERFORMANCE.md#p2, issue 12).

Live frames keep a conversation's latest messages per process and bring them up to
date from each ingest's ChangeSet (chatui.live.tail_cache). `ingest.reproject` writes new
rows under the same seqs, which no seq stamp can tell: it bumps this counter, which
every ingest reads under the conversation's row lock, so a kept copy from before a
rebuild in another process is never used.

Adding a NOT NULL column makes Django rebuild chatui_conversation on SQLite, which
drops the title index's delete trigger (0006_search_index): it is created again here,
forwards and backwards, as 0010 does.
"""

from django.db import migrations, models

TITLE_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS chatui_title_search_forget AFTER DELETE ON chatui_conversation"
    " BEGIN DELETE FROM chatui_title_search WHERE rowid IN (SELECT rowid FROM chatui_title_search"
    " WHERE conversation MATCH '\"' || old.id || '\"'); END"
)


def restore_title_trigger(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(TITLE_TRIGGER)


class Migration(migrations.Migration):
    dependencies = [("chatui", "0012_event_tool_call_index")]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="rebuilds",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(restore_title_trigger, restore_title_trigger),
    ]
