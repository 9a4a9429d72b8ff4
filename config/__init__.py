"""The Django project that serves chatui on its own (settings, URLs, ASGI/WSGI).

The app itself is `chatui`; a host project can mount it instead (docs/embedding.md).
"""
