"""Event.payload and Message.metadata keep their key order on PostgreSQL (json, not
jsonb: see chatui/fields.py). Other databases already store the text as sent, so
only PostgreSQL's columns change (SQLite would otherwise copy both tables whole)."""

from django.db import migrations

import chatui.fields

COLUMNS = (("chatui_event", "payload"), ("chatui_message", "metadata"))


def alter_columns(type_name):
    def alter(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for table, column in COLUMNS:
            schema_editor.execute(
                f'ALTER TABLE "{table}" ALTER COLUMN "{column}" TYPE {type_name}'
            )

    return alter


class Migration(migrations.Migration):

    dependencies = [
        ("chatui", "0003_indexes_for_reconcile_and_runs"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="event",
                    name="payload",
                    field=chatui.fields.OrderedJSONField(),
                ),
                migrations.AlterField(
                    model_name="message",
                    name="metadata",
                    field=chatui.fields.OrderedJSONField(blank=True, default=dict),
                ),
            ],
            database_operations=[
                migrations.RunPython(alter_columns("json"), alter_columns("jsonb")),
            ],
        ),
    ]
