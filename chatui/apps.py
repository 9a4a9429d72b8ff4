from django.apps import AppConfig
from django.conf import settings

from .conf import apply_defaults


class ChatuiConfig(AppConfig):
    name = "chatui"
    verbose_name = "chatui"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        apply_defaults(settings)  # a host project sets only the CHATUI_* it changes
        # Connects the live push to ingest's on-commit signal, the approvals' deadlines
        # and long polls to its approval signal (and an AG-UI agent's interrupted run,
        # resumed once its approvals are decided), and the closing of sockets whose
        # access was taken away to auth's signals; and a deleted conversation's
        # attachments go with it unless another conversation holds them (G21).
        from chatui.agents import agui  # noqa: F401
        from chatui.ingest import attachments  # noqa: F401
        from chatui.live import approval_clock, broadcast, revocation  # noqa: F401

        # S4: a CHATUI_PRICES that cannot be read stops the start, naming what is wrong,
        # rather than failing each page that shows a cost.
        from chatui.read.cost import prices

        prices()
