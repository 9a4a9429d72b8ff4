"""docs/auditing.md#verifying-a-log: every event gets its content and chain hashes; existing logs are chained
here, conversation by conversation in seq order, with the same arithmetic as ingest
(chatui.ingest.chain, whose definition is fixed by the spec). No checkpoint is signed
here: each conversation's next event signs its log (verify_log says "not signed" until).

Adding NOT NULL columns makes Django rebuild chatui_conversation on SQLite, which drops the
title index's delete trigger (0006_search_index): it is created again here, forwards and
backwards, as 0010 and 0013 do.
"""

import django.db.models.deletion
from django.db import migrations, models

from chatui.ingest.chain import chain

CHUNK = 1000
TITLE_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS chatui_title_search_forget AFTER DELETE ON chatui_conversation"
    " BEGIN DELETE FROM chatui_title_search WHERE rowid IN (SELECT rowid FROM chatui_title_search"
    " WHERE conversation MATCH '\"' || old.id || '\"'); END"
)


def restore_title_trigger(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(TITLE_TRIGGER)


def chain_every_log(apps, schema_editor):
    Conversation = apps.get_model("chatui", "Conversation")
    Event = apps.get_model("chatui", "Event")
    for conversation in Conversation.objects.order_by().iterator(chunk_size=200):
        events = Event.objects.filter(conversation_id=conversation.pk).order_by("seq")
        previous, batch = "", []
        for event in events.iterator(chunk_size=CHUNK):
            previous = chain([event], previous)
            batch.append(event)
            if len(batch) == CHUNK:
                Event.objects.bulk_update(batch, ["content_hash", "chain_hash"])
                batch = []
        if batch:
            Event.objects.bulk_update(batch, ["content_hash", "chain_hash"])
        Conversation.objects.filter(pk=conversation.pk).update(chain_hash=previous)


class Migration(migrations.Migration):
    dependencies = [
        ("chatui", "0015_w5_cancelled_status"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="chain_hash",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.AddField(
            model_name="conversation",
            name="signed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="event",
            name="chain_hash",
            field=models.CharField(default="", max_length=64),
        ),
        migrations.AddField(
            model_name="event",
            name="content_hash",
            field=models.CharField(default="", max_length=64),
        ),
        migrations.CreateModel(
            name="Checkpoint",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("size", models.PositiveBigIntegerField()),
                ("chain_hash", models.CharField(max_length=64)),
                ("signed_at", models.DateTimeField()),
                ("note", models.TextField()),
                (
                    "conversation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="checkpoints",
                        to="chatui.conversation",
                    ),
                ),
            ],
            options={
                "ordering": ["conversation_id", "size", "id"],
                "indexes": [
                    models.Index(
                        fields=["conversation", "size"], name="chatui_chec_convers_b69d93_idx"
                    )
                ],
            },
        ),
        migrations.RunPython(restore_title_trigger, restore_title_trigger),
        migrations.RunPython(chain_every_log, migrations.RunPython.noop, elidable=False),
    ]
