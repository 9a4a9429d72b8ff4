"""docs/events.md#approvals: tool approval — two tool statuses (one 17 characters long) and chatui.approve_tool.

Widening `tool_status` makes Django rebuild chatui_message on SQLite, which drops the
search index's delete trigger (0006_search_index): it is created again here.
"""

from django.db import migrations, models

MESSAGE_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS chatui_message_search_forget AFTER DELETE ON chatui_message"
    " BEGIN DELETE FROM chatui_message_search WHERE rowid = old.id; END"
)


def restore_search_trigger(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(MESSAGE_TRIGGER)


class Migration(migrations.Migration):
    dependencies = [
        ("chatui", "0008_run_worker"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="conversation",
            options={
                "ordering": ["-updated_at"],
                "permissions": [
                    ("ingest_any", "Can post events to any user's conversation"),
                    (
                        "approve_tool",
                        "Can approve or deny a tool call in any conversation they can see",
                    ),
                ],
            },
        ),
        migrations.AlterField(
            model_name="message",
            name="tool_status",
            field=models.CharField(
                blank=True,
                choices=[
                    ("queued", "Queued"),
                    ("running", "Running"),
                    ("success", "Success"),
                    ("error", "Error"),
                    ("skipped", "Skipped"),
                    ("awaiting_approval", "Awaiting approval"),
                    ("denied", "Denied"),
                ],
                max_length=20,
            ),
        ),
        # Backwards, the rebuild back to 16 characters drops it again: restored too.
        migrations.RunPython(restore_search_trigger, restore_search_trigger),
    ]
