"""Issue 12: a conversation's list-row counts as columns (tool messages, failed ones),
kept by the projection from now on, filled here once from the messages.

Adding a NOT NULL column makes Django rebuild chatui_conversation on SQLite, which
drops the title index's delete trigger (0006_search_index): it is created again here,
forwards and backwards (removing the columns rebuilds the table too).
"""

from django.db import migrations, models
from django.db.models import Count, IntegerField, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

TITLE_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS chatui_title_search_forget AFTER DELETE ON chatui_conversation"
    " BEGIN DELETE FROM chatui_title_search WHERE rowid IN (SELECT rowid FROM chatui_title_search"
    " WHERE conversation MATCH '\"' || old.id || '\"'); END"
)


def restore_title_trigger(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(TITLE_TRIGGER)


def fill_counts(apps, schema_editor) -> None:
    """Every conversation's counts from its messages, in one UPDATE (the same rule as
    the projection: role "tool"; failed: tool_status "error")."""
    Conversation = apps.get_model("chatui", "Conversation")
    Message = apps.get_model("chatui", "Message")

    def count(condition: Q) -> Coalesce:
        matching = (
            Message.objects.filter(condition, conversation=OuterRef("pk"))
            .order_by()
            .values("conversation")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return Coalesce(Subquery(matching, output_field=IntegerField()), 0)

    tools = Q(role="tool")
    Conversation.objects.using(schema_editor.connection.alias).update(
        tool_count=count(tools), failed_tool_count=count(tools & Q(tool_status="error"))
    )


class Migration(migrations.Migration):
    dependencies = [
        ("chatui", "0009_tool_approval"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="tool_count",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="conversation",
            name="failed_tool_count",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(restore_title_trigger, restore_title_trigger),
        migrations.RunPython(fill_counts, migrations.RunPython.noop),
    ]
