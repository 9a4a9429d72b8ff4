from django.apps import AppConfig


class ChatuiConfig(AppConfig):
    name = "chatui"
    verbose_name = "chatui"
    default_auto_field = "django.db.models.BigAutoField"
