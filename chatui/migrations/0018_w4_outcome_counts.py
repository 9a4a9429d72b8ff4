"""W4 one count (docs/rendering.md#w4): a conversation's denied, expired and cancelled
tool calls as columns beside `tool_count` and `failed_tool_count`, kept by the
projection from now on, filled here once from the messages. (Failed attempts a later
attempt retried are marked by the projection; rows projected before it keep counting
them until the conversation is re-projected.)

Adding a NOT NULL column makes Django rebuild chatui_conversation on SQLite, which
drops the title index's delete trigger (0006_search_index): it is created again here,
as 0010 does.
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
    """Denied and cancelled from the status column, in one UPDATE; expired ones (stored
    `denied`, `approval.decision` "expired") read in Python: the metadata whole, never
    a key lookup (on PostgreSQL that reads the json column as jsonb, which refuses an
    old row's "\\u0000")."""
    Conversation = apps.get_model("chatui", "Conversation")
    Message = apps.get_model("chatui", "Message")
    alias = schema_editor.connection.alias

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
    Conversation.objects.using(alias).update(
        denied_tool_count=count(tools & Q(tool_status="denied")),
        cancelled_tool_count=count(tools & Q(tool_status="cancelled")),
    )
    expired: dict = {}
    denied = Message.objects.using(alias).filter(tools, tool_status="denied")
    for conversation_id, metadata in denied.values_list("conversation_id", "metadata"):
        approval = metadata.get("approval") if isinstance(metadata, dict) else None
        if isinstance(approval, dict) and approval.get("decision") == "expired":
            expired[conversation_id] = expired.get(conversation_id, 0) + 1
    for conversation_id, number in expired.items():
        row = Conversation.objects.using(alias).filter(pk=conversation_id)
        row.update(
            expired_tool_count=number,
            denied_tool_count=models.F("denied_tool_count") - number,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("chatui", "0017_notes_and_share_links"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="denied_tool_count",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="conversation",
            name="expired_tool_count",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="conversation",
            name="cancelled_tool_count",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(restore_title_trigger, restore_title_trigger),
        migrations.RunPython(fill_counts, migrations.RunPython.noop),
    ]
