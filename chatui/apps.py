from django.apps import AppConfig


class ChatuiConfig(AppConfig):
    name = "chatui"
    verbose_name = "chatui"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Connects the live push to ingest's on-commit signal, and the closing of
        # sockets whose access was taken away to auth's signals.
        from . import broadcast, revocation  # noqa: F401
