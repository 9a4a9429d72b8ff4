"""ASGI entry point: chatui's application (chatui.asgi) around Django's."""

import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from chatui.asgi import build_application  # noqa: E402 (needs Django set up first)

application = build_application(django_asgi_app)

# Everything imported so far lives as long as the process: freeze it out of the
# garbage collector's scans, and collect less often. Full collections otherwise
# pause the event loop for ~80 ms under load (bench/p1, 100 viewers).
gc.collect()
gc.freeze()
gc.set_threshold(50_000, 20, 100)
