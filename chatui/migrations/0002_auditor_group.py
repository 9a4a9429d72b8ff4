"""The `auditor` group: view-only access to transcripts in the admin (docs/rendering.md#admin).

Members (who also need `is_staff` to log into the admin) may view conversations,
their messages, raw events and runs, and nothing else: no change, add or delete
permission on anything, and no access to API tokens.

Permissions are normally created after the last migration (post_migrate); they
are created here first so that the group can be given them on a fresh database.
"""

from django.db import migrations

GROUP = "auditor"
CODENAMES = ["view_conversation", "view_message", "view_event", "view_run"]


def create_auditor_group(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    alias = schema_editor.connection.alias
    app_config = apps.get_app_config("chatui")
    # Historical app configs have no models module, and create_permissions wants one.
    app_config.models_module = True
    try:
        create_permissions(app_config, apps=apps, verbosity=0, using=alias)
    finally:
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    permissions = list(
        Permission.objects.using(alias).filter(
            content_type__app_label="chatui", codename__in=CODENAMES
        )
    )
    missing = set(CODENAMES) - {permission.codename for permission in permissions}
    if missing:
        raise RuntimeError(f"permissions missing for the auditor group: {sorted(missing)}")
    group, _ = Group.objects.using(alias).get_or_create(name=GROUP)
    group.permissions.set(permissions)


def remove_auditor_group(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.using(schema_editor.connection.alias).filter(name=GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("chatui", "0001_initial"),
    ]

    operations = [migrations.RunPython(create_auditor_group, remove_auditor_group)]
