"""Settings for chatui, read from the environment (SPEC §12).

Defaults give a working single-machine install: SQLite in WAL mode with immediate
transactions (so concurrent writers queue instead of failing with "database is
locked") and the in-memory channel layer with a raised capacity.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.management.utils import get_random_secret_key

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("CHATUI_DATA_DIR", BASE_DIR / "var"))
STATIC_ROOT = DATA_DIR / "staticfiles"
# SQLite does not create its folder, and WhiteNoise warns about a missing STATIC_ROOT.
STATIC_ROOT.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DJANGO_DEBUG", False)


def _secret_key() -> str:
    """DJANGO_SECRET_KEY, else one generated once and kept in the data folder, so a
    restart of `make run` does not log everyone out."""
    if os.environ.get("DJANGO_SECRET_KEY"):
        return os.environ["DJANGO_SECRET_KEY"]
    path = DATA_DIR / "secret_key"
    if not path.exists():
        fresh = path.with_name(f"secret_key.{os.getpid()}")
        fresh.touch(mode=0o600)
        fresh.write_text(get_random_secret_key())
        fresh.replace(path)  # atomic: a reader never sees a half-written key
    return path.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "daphne",  # first, so `runserver` is the ASGI server
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "template_partials.apps.SimpleAppConfig",
    "chatui",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "chatui.middleware.ContentSecurityPolicyMiddleware",
]

ROOT_URLCONF = "chatui.urls"
ASGI_APPLICATION = "chatui.asgi.application"
WSGI_APPLICATION = "chatui.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "OPTIONS": {
            # Partials are builtins, so templates read as Django 6's {% partialdef %}.
            "builtins": ["template_partials.templatetags.partials"],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            "loaders": [
                (
                    "template_partials.loader.Loader",
                    [
                        (
                            "django.template.loaders.cached.Loader",
                            [
                                "django.template.loaders.filesystem.Loader",
                                "django.template.loaders.app_directories.Loader",
                            ],
                        )
                    ],
                )
            ],
        },
    },
]

SQLITE_OPTIONS = {
    # WAL lets readers run beside the writer; IMMEDIATE takes the write lock at BEGIN
    # so two writers queue on the busy timeout instead of deadlocking on upgrade.
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
}

if os.environ.get("DATABASE_URL"):
    DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"], conn_max_age=60)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "db.sqlite3",
        }
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {}).update(SQLITE_OPTIONS)
    # Tests get a real file too: an in-memory shared-cache database locks whole
    # tables ("database table is locked") when a run's thread writes beside a request.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

if os.environ.get("REDIS_URL"):
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [os.environ["REDIS_URL"]], "capacity": 1000},
        }
    }
else:
    CHANNEL_LAYERS = {
        # The socket is a fast path only; resume from the event log covers what a
        # full queue drops.
        "default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 5000}}
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Serve straight from the finders so a fresh clone works with DEBUG off and no
# collectstatic step; WhiteNoise still adds caching headers.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Security headers (SEC3). The CSP itself is set by chatui.middleware.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"

# Ingest limits (SEC6).
CHATUI_MAX_EVENT_BYTES = int(os.environ.get("CHATUI_MAX_EVENT_BYTES", 1024 * 1024))
CHATUI_MAX_REQUEST_BYTES = int(os.environ.get("CHATUI_MAX_REQUEST_BYTES", 8 * 1024 * 1024))
CHATUI_MAX_JSON_DEPTH = 64
DATA_UPLOAD_MAX_MEMORY_SIZE = CHATUI_MAX_REQUEST_BYTES

# Agents (SPEC §9). `demo` needs nothing; the others read their endpoints from here.
CHATUI_AGENT = os.environ.get("CHATUI_AGENT", "demo")
CHATUI_DEMO_DELAY = float(os.environ.get("CHATUI_DEMO_DELAY", "0.35"))
CHATUI_PUBLIC_URL = os.environ.get("CHATUI_PUBLIC_URL", "http://127.0.0.1:8000")
CHATUI_WEBHOOK_URL = os.environ.get("CHATUI_WEBHOOK_URL", "")
CHATUI_WEBHOOK_TOKEN = os.environ.get("CHATUI_WEBHOOK_TOKEN", "")
CHATUI_WEBHOOK_ATTEMPTS = int(os.environ.get("CHATUI_WEBHOOK_ATTEMPTS", "5"))
CHATUI_WEBHOOK_BACKOFF = float(os.environ.get("CHATUI_WEBHOOK_BACKOFF", "0.5"))
CHATUI_WEBHOOK_TIMEOUT = float(os.environ.get("CHATUI_WEBHOOK_TIMEOUT", "10"))
CHATUI_WEBHOOK_RUN_TIMEOUT = float(os.environ.get("CHATUI_WEBHOOK_RUN_TIMEOUT", "900"))
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
OPENAI_MODEL = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "")
CHATUI_OPENAI_MAX_STEPS = int(os.environ.get("CHATUI_OPENAI_MAX_STEPS", "8"))
CHATUI_OPENAI_TIMEOUT = float(os.environ.get("CHATUI_OPENAI_TIMEOUT", "120"))
# Seconds a tool call may work before it fails as timed out (its work runs off the
# event loop; a Stop cuts the wait at once).
CHATUI_TOOL_TIMEOUT = float(os.environ.get("CHATUI_TOOL_TIMEOUT", "30"))

# Transcript imports (SPEC §9): the largest file and the most events one import may hold.
CHATUI_IMPORT_MAX_BYTES = int(os.environ.get("CHATUI_IMPORT_MAX_BYTES", 32 * 1024 * 1024))
CHATUI_IMPORT_MAX_EVENTS = int(os.environ.get("CHATUI_IMPORT_MAX_EVENTS", 100_000))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("CHATUI_LOG_LEVEL", "WARNING")},
}
