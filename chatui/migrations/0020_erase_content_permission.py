"""The chatui.erase_content permission (docs/auditing.md#erasing-content)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("chatui", "0019_g21_attachments"),
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
                    ("annotate", "Can add an auditor's note to a conversation they can see"),
                    ("erase_content", "Can erase events' content, keeping the log's proof"),
                ],
            },
        ),
    ]
