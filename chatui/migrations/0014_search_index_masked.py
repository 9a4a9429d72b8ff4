"""Rebuild the full-text index from masked text (T3, issue 28).

Until now the index held every word of a tool's args, result and error as sent, so a
search (or the admin's) could find a message by a secret's value the page shows as
`••••` and its last 4 characters, letter by letter. chatui.ingest.search_index now indexes the
masked text, of messages and titles; this rebuilds every row that already exists the
same way, so an existing database forgets the raw secret words too.
"""

from django.db import migrations


def rebuild_masked(apps, schema_editor) -> None:
    from chatui.ingest import search_index as search

    search.rebuild(apps.get_model("chatui", "Message"), apps.get_model("chatui", "Conversation"))


class Migration(migrations.Migration):
    dependencies = [("chatui", "0013_conversation_rebuilds")]

    # Backwards there is nothing to undo: masked words are what the index should hold.
    operations = [migrations.RunPython(rebuild_masked, migrations.RunPython.noop)]
