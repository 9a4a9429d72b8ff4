"""SPEC §13: tool approval — two tool statuses (one 17 characters long) and chatui.approve_tool."""

from django.db import migrations, models


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
    ]
