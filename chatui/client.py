"""``chatui.client``, the runtime client's first name (docs/events.md#python-client), kept for
existing code.

The client lives in its own package, ``chatui_client`` (``clients/python/``), so a runtime
can install it without Django, Channels or daphne. This module only re-exports it: new
code imports ``chatui_client``. ``make install`` installs both.
"""

from chatui_client import *  # noqa: F403
from chatui_client import __all__ as __all__
