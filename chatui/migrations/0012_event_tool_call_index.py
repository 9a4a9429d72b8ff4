"""Look a tool up by its call id within its conversation (docs/PERFORMANCE.md#p2, issue 12).

SQLite keeps no statistics, and rated lookups by tool_call_id alone dearer than
walking the conversation: for each tool event it read every tool message of the
conversation by the (conversation, role, …) index, and for a batch's early-progress
lookup (an IN list of its calls) every event of the conversation's log.

Message gets (conversation, role, tool_call_id); its tool_call_id index stays (the
admin searches by exact call id across conversations). Event gets (conversation,
tool_call_id) and loses its tool_call_id index, which nothing else uses (one index
fewer per event insert) — dropped in SQL, since AlterField would copy the whole
event log into a new table on SQLite.
"""

import copy

from django.db import migrations, models


def drop_tool_call_id_index(apps, schema_editor):
    event = apps.get_model("chatui", "Event")
    # Every single-column index on it: PostgreSQL also has a varchar_pattern_ops one.
    for name in schema_editor._constraint_names(event, ["tool_call_id"], index=True):
        schema_editor.execute(schema_editor._delete_index_sql(event, name))


def restore_tool_call_id_index(apps, schema_editor):
    event = apps.get_model("chatui", "Event")
    field = copy.copy(event._meta.get_field("tool_call_id"))
    field.db_index = True
    for sql in schema_editor._field_indexes_sql(event, field):
        schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [
        ("chatui", "0011_run_order_and_fk_orderings"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="event",
                    name="tool_call_id",
                    field=models.CharField(blank=True, max_length=200),
                ),
            ],
            database_operations=[
                migrations.RunPython(drop_tool_call_id_index, restore_tool_call_id_index),
            ],
        ),
        migrations.AddIndex(
            model_name="message",
            index=models.Index(
                fields=["conversation", "role", "tool_call_id"],
                name="chatui_mess_convers_e2f538_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="event",
            index=models.Index(
                fields=["conversation", "tool_call_id"], name="chatui_even_convers_edfae7_idx"
            ),
        ),
    ]
