"""Event: look a tool's logged events up by (conversation, tool_call_id).

The single-column index on tool_call_id is dropped: nothing looks events up by
tool_call_id across conversations, and with it SQLite (no statistics) rated the
projector's IN list of a batch's calls dearer than walking the conversation's
events (SPEC §8 P2, issue 12). Dropped in SQL rather than by AlterField, which on
SQLite would copy the whole event log into a new table.
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
            model_name="event",
            index=models.Index(
                fields=["conversation", "tool_call_id"], name="chatui_even_convers_edfae7_idx"
            ),
        ),
    ]
