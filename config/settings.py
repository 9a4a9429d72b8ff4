"""Settings for the chatui project, read from the environment (README.md).

Defaults give a working single-machine install: SQLite in WAL mode with immediate
transactions (so concurrent writers queue instead of failing with "database is
locked") and the in-memory channel layer with a raised capacity.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.management.utils import get_random_secret_key

from chatui.conf import DEFAULTS

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


def app_setting(name: str, cast: Callable[[str], Any] = str) -> Any:
    """An app setting (chatui.conf) from the environment, else the app's default."""
    value = os.environ.get(name)
    return DEFAULTS[name] if value is None else cast(value)


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
    # The security headers come before WhiteNoise, which answers static files itself:
    # static responses carry them too.
    "django.middleware.security.SecurityMiddleware",
    "chatui.web.middleware.ContentSecurityPolicyMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = "config.wsgi.application"

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

POSTGRES_POOL = {
    # Per process. An ASGI process holds few connections at once (the threads running
    # its requests, its sockets' database calls, the agents' thread; for good: the
    # token thread and 4 ingest writer threads, chatui.server.ingest_route), so N processes
    # fit PostgreSQL's max_connections (100 by default; 200 under make run-cluster).
    "min_size": int(os.environ.get("CHATUI_DB_POOL_MIN", "2")),
    "max_size": int(os.environ.get("CHATUI_DB_POOL_MAX", "10")),
    # Waiting longer for a free connection only hides an overload; fail the request.
    "timeout": float(os.environ.get("CHATUI_DB_POOL_TIMEOUT", "10")),
}

if os.environ.get("DATABASE_URL"):
    DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"])}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "db.sqlite3",
        }
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Not persistent, measured (issue 12): under ASGI Django runs each request's sync
    # code on a thread of its own (asgiref's ThreadSensitiveContext per request), so a
    # kept connection is never reused by the next request; it would only be left for
    # the garbage collector to close. The edge's token lookups and the events POST
    # keep theirs on threads of their own (chatui.server.edge, chatui.server.ingest_route).
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {}).update(SQLITE_OPTIONS)
    # Tests get a real file too: an in-memory shared-cache database locks whole
    # tables ("database table is locked") when a run's thread writes beside a request.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test.sqlite3")}
    # Django's backend, with each statement's placeholders converted once (chatui.db.sqlite).
    DATABASES["default"]["ENGINE"] = "chatui.db.sqlite"
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # psycopg 3's pool (Django 5.1+) instead of persistent connections, which Django
    # refuses beside a pool: a connection goes back to the pool at each request's end.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = POSTGRES_POOL

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

if os.environ.get("REDIS_URL"):
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                # redis-py 8 reads with a 5 s socket timeout by default, as long as
                # channels-redis's blocking receive (BZPOPMIN, 5 s): an idle process's
                # read timed out and killed the consumer holding the receive lock, one
                # socket every 5 s (tests/cluster/test_redis_layer.py). Longer than
                # that wait, and still bounded when Redis stops answering.
                # max_connections: redis-py 8 caps a pool at 100 connections and raises
                # MaxConnectionsError past it; 300 viewers reconnecting at once to two
                # processes (each handshake joins three groups) went past it
                # (bench/cluster_faults.py). Redis itself allows 10,000 clients.
                "hosts": [
                    {
                        "address": os.environ["REDIS_URL"],
                        "socket_timeout": 15,
                        "max_connections": 1000,
                    }
                ],
                "capacity": 1000,
            },
        }
    }
    # Live frames cross processes through Redis pub/sub, one message per process per
    # group (chatui.live.fanout, docs/SCALING.md#fan-out); run workers keep the layer above.
    CHATUI_LIVE_RELAY_URL = os.environ["REDIS_URL"]
else:
    CHANNEL_LAYERS = {
        # The socket is a fast path only; resume from the event log covers what a
        # full queue drops.
        "default": {
            "BACKEND": "chatui.db.internals.InMemoryChannelLayer",
            "CONFIG": {"capacity": 5000},
        }
    }
    CHATUI_LIVE_RELAY_URL = None
# The viewers' sockets: each process's own group memberships, in memory, in both modes
# (chatui.live.fanout). A full queue drops a frame; the page resumes by seq. Channels'
# in-memory layer, sweeping expired messages once a second rather than on every call.
CHANNEL_LAYERS["live"] = {
    "BACKEND": "chatui.db.internals.InMemoryChannelLayer",
    "CONFIG": {"capacity": 5000},
}

# WebSockets (SEC4). An open socket re-checks its session and permission this often, as
# a backstop for changes that send no signal (chatui.live.revocation handles those that do).
CHATUI_WS_RECHECK_SECONDS = float(app_setting("CHATUI_WS_RECHECK_SECONDS"))
# Bearer tokens found valid are trusted this long without a lookup (chatui.web.tokens);
# a change made elsewhere that takes access away is seen within it. 0: look up every time.
CHATUI_TOKEN_CACHE_SECONDS = app_setting("CHATUI_TOKEN_CACHE_SECONDS", float)
# Sockets one user may hold open in one server process; more are closed with 4429.
CHATUI_MAX_SOCKETS_PER_USER = int(app_setting("CHATUI_MAX_SOCKETS_PER_USER"))
# Threads serving the sockets' handshakes' reads, beside Channels' one database thread.
CHATUI_HANDSHAKE_THREADS = int(app_setting("CHATUI_HANDSHAKE_THREADS"))
# The ingest channel (docs/events.md#streaming-channel): bytes one socket holds before its writes
# catch up (more is refused with 429, re-sent by the runtime), and sockets one API token holds in
# one server process (more are closed with 4429).
CHATUI_INGEST_MAX_PENDING_BYTES = int(app_setting("CHATUI_INGEST_MAX_PENDING_BYTES"))
CHATUI_MAX_INGEST_SOCKETS_PER_TOKEN = int(app_setting("CHATUI_MAX_INGEST_SOCKETS_PER_TOKEN"))
# Approval long polls (docs/events.md#approvals) one user may have waiting in one server process
# (429).
CHATUI_MAX_LONG_POLLS_PER_USER = int(app_setting("CHATUI_MAX_LONG_POLLS_PER_USER"))
# docs/sharing.md: auditors' notes on the owner's page; a share link's default expiry.
CHATUI_NOTES_VISIBLE_TO_OWNER = env_bool("CHATUI_NOTES_VISIBLE_TO_OWNER", True)
CHATUI_SHARE_DEFAULT_DAYS = int(app_setting("CHATUI_SHARE_DEFAULT_DAYS"))
# S4 (docs/rendering.md#s4): JSON, {"model": {"input": 0.15, "output": 0.6}} US dollars per
# million tokens; read (and checked at startup) by chatui.read.cost.
CHATUI_PRICES = app_setting("CHATUI_PRICES")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
# A2 (docs/rendering.md#a2): the time zone the admin shows times in (an IANA name).
TIME_ZONE = os.environ.get("DJANGO_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
# Serve straight from the finders so a fresh clone works with DEBUG off and no
# collectstatic step; WhiteNoise still adds caching headers.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Security headers (SEC3). The CSP itself is set by chatui.web.middleware.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"

# HTTPS deployments: off by default, so `make run` works over plain http.
# CHATUI_HTTPS=1 when browsers reach chatui over https (directly or through a proxy):
# cookies only over https, HSTS, http redirected to https.
CHATUI_HTTPS = env_bool("CHATUI_HTTPS")
SESSION_COOKIE_SECURE = CHATUI_HTTPS
CSRF_COOKIE_SECURE = CHATUI_HTTPS
SECURE_SSL_REDIRECT = env_bool("CHATUI_SSL_REDIRECT", CHATUI_HTTPS)
SECURE_HSTS_SECONDS = int(os.environ.get("CHATUI_HSTS_SECONDS", 31_536_000 if CHATUI_HTTPS else 0))
# Both reach beyond this app (every subdomain; browsers' built-in lists): opt in.
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("CHATUI_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = env_bool("CHATUI_HSTS_PRELOAD")
# Only behind a proxy that sets X-Forwarded-Proto itself and strips the client's:
# otherwise any client could claim https.
if env_bool("CHATUI_BEHIND_TLS_PROXY"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Ingest limits (SEC6).
CHATUI_MAX_EVENT_BYTES = int(app_setting("CHATUI_MAX_EVENT_BYTES"))
CHATUI_MAX_REQUEST_BYTES = int(app_setting("CHATUI_MAX_REQUEST_BYTES"))
CHATUI_MAX_JSON_DEPTH = DEFAULTS["CHATUI_MAX_JSON_DEPTH"]
# docs/rendering.md#g21: an MCP result's image, audio or blob larger than this keeps its
# digest and size in the log, not its bytes.
CHATUI_MAX_ATTACHMENT_BYTES = int(app_setting("CHATUI_MAX_ATTACHMENT_BYTES"))
DATA_UPLOAD_MAX_MEMORY_SIZE = CHATUI_MAX_REQUEST_BYTES

# Edge limits (chatui.server.edge): refused as the request arrives, before its body is kept.
# The API's is CHATUI_MAX_REQUEST_BYTES; forms (login, admin, stop) get this:
CHATUI_MAX_FORM_BYTES = int(app_setting("CHATUI_MAX_FORM_BYTES"))
# Form encoding at most triples a message (%XX per non-ASCII byte, \n sent as %0D%0A),
# so the composer takes every message the event limit takes.
CHATUI_MAX_COMPOSER_BYTES = 3 * CHATUI_MAX_EVENT_BYTES + CHATUI_MAX_FORM_BYTES
# A request's headers and body must arrive within this many seconds of its request
# line; a connection that sends nothing is closed after as long.
CHATUI_REQUEST_TIMEOUT = float(app_setting("CHATUI_REQUEST_TIMEOUT"))

# Agents (docs/events.md#agents). `demo` needs nothing; the others read their endpoints from here.
CHATUI_AGENT = os.environ.get("CHATUI_AGENT", "demo")
CHATUI_DEMO_DELAY = app_setting("CHATUI_DEMO_DELAY", float)
CHATUI_PUBLIC_URL = app_setting("CHATUI_PUBLIC_URL")

# docs/auditing.md#verifying-a-log: the Ed25519 key that signs the logs' checkpoints, made
# (mode 0600) on first use; never in the database.
CHATUI_SIGNING_KEY_FILE = os.environ.get("CHATUI_SIGNING_KEY_FILE", str(DATA_DIR / "signing_key"))

# Run workers (docs/deploying.md#run-workers): with CHATUI_RUN_WORKERS=1 a web
# process only enqueues runs; `manage.py run_worker` processes drive them. A worker
# touches its runs' heartbeat every HEARTBEAT seconds; a run whose heartbeat is
# older than LOST seconds (its worker died, or no worker took it) ends failed.
CHATUI_RUN_WORKERS = env_bool("CHATUI_RUN_WORKERS")
CHATUI_RUN_HEARTBEAT_SECONDS = app_setting("CHATUI_RUN_HEARTBEAT_SECONDS", float)
CHATUI_RUN_LOST_SECONDS = app_setting("CHATUI_RUN_LOST_SECONDS", float)
# How long Stop waits for the worker holding the run before failing the run itself.
CHATUI_RUN_STOP_WAIT_SECONDS = app_setting("CHATUI_RUN_STOP_WAIT_SECONDS", float)
CHATUI_WEBHOOK_URL = os.environ.get("CHATUI_WEBHOOK_URL", "")
CHATUI_WEBHOOK_TOKEN = os.environ.get("CHATUI_WEBHOOK_TOKEN", "")
CHATUI_WEBHOOK_ATTEMPTS = int(os.environ.get("CHATUI_WEBHOOK_ATTEMPTS", "5"))
CHATUI_WEBHOOK_BACKOFF = float(os.environ.get("CHATUI_WEBHOOK_BACKOFF", "0.5"))
CHATUI_WEBHOOK_TIMEOUT = float(os.environ.get("CHATUI_WEBHOOK_TIMEOUT", "10"))
CHATUI_WEBHOOK_RUN_TIMEOUT = float(os.environ.get("CHATUI_WEBHOOK_RUN_TIMEOUT", "900"))
# CHATUI_AGENT=agui: the AG-UI agent's endpoint, and headers for it as a JSON object.
CHATUI_AGUI_URL = os.environ.get("CHATUI_AGUI_URL", "")
CHATUI_AGUI_HEADERS = os.environ.get("CHATUI_AGUI_HEADERS", "")
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
OPENAI_MODEL = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "")
CHATUI_OPENAI_MAX_STEPS = int(os.environ.get("CHATUI_OPENAI_MAX_STEPS", "8"))
CHATUI_OPENAI_TIMEOUT = float(os.environ.get("CHATUI_OPENAI_TIMEOUT", "120"))
# Seconds a tool call may work before it fails as timed out (its work runs off the
# event loop; a Stop cuts the wait at once).
CHATUI_TOOL_TIMEOUT = float(os.environ.get("CHATUI_TOOL_TIMEOUT", "30"))

# Transcript imports (docs/events.md#importers): the largest file and the most events one import may
# hold.
CHATUI_IMPORT_MAX_BYTES = int(app_setting("CHATUI_IMPORT_MAX_BYTES"))
CHATUI_IMPORT_MAX_EVENTS = int(app_setting("CHATUI_IMPORT_MAX_EVENTS"))

# Characters of a tool entry's full texts a page inlines; beyond, they load on demand.
CHATUI_TOOL_TEXT_INLINE_CHARS = int(app_setting("CHATUI_TOOL_TEXT_INLINE_CHARS"))
# Time travel (chatui.read.replay, docs/PERFORMANCE.md): moments projected at once per process,
# how long another waits before a 503, and the memory (MB) a process keeps for moments.
CHATUI_MOMENT_WORKERS = int(app_setting("CHATUI_MOMENT_WORKERS"))
CHATUI_MOMENT_WAIT_SECONDS = app_setting("CHATUI_MOMENT_WAIT_SECONDS", float)
CHATUI_MOMENT_CACHE_MB = app_setting("CHATUI_MOMENT_CACHE_MB", float)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("CHATUI_LOG_LEVEL", "WARNING")},
}
