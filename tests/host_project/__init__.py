"""A minimal second Django project that mounts chatui the way docs/embedding.md
says: the app in INSTALLED_APPS, one include("chatui.urls") under a prefix,
its own login, no admin, and no CHATUI_* settings (the app's defaults apply)."""
