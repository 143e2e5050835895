"""Stock django-oauth-toolkit for the bench's comparison point (docs/performance.md).

DOT's models are swappable process-wide (OAUTH2_PROVIDER_*_MODEL), and the project swaps every
one of them, so stock DOT cannot run in the project's process: it gets this settings module, its
own database (bench_stock on the same PostgreSQL server) and its own gunicorn, run after the
project's, never at the same time.

What it is: a minimal Django project as `startproject` makes it (auth, contenttypes, sessions,
messages, the default middleware) plus `oauth2_provider` with its DEFAULT models, validator,
backend, client-secret hasher (Django's default, PBKDF2) and token storage. Only two DOT settings
change, so the same requests work: PKCE is not required (the bench's confidential client sends
none) and one scope, "read". DOT's URLs are mounted under /stock/o/; /stock/me is a DOT
ScopedProtectedResourceView (scope "read") standing in for /v2/me (bench/stock_urls.py).
"""

import os

import dj_database_url

SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "oauth2_provider",
]

MIDDLEWARE = [
    "bench.middleware.QueryCountMiddleware",  # the X-DB-Queries header, as in config.settings_bench
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "bench.stock_urls"
WSGI_APPLICATION = "config.wsgi.application"

# DOT's consent page needs no context processor beyond the built-in CSRF one.
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}]

DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"], conn_max_age=60, conn_health_checks=True)}
# The project's engine (Django's, with a health check that pings only a connection the server has
# spoken on, config/postgresql): so that X-DB-Queries counts the same round trips on every target.
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["ENGINE"] = "plumbing.postgresql"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "/static/"
LOGIN_URL = "/stock/accounts/login/"  # never reached: the bench's browsers carry seeded sessions

OAUTH2_PROVIDER = {
    "PKCE_REQUIRED": False,
    "SCOPES": {"read": "Read scope"},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("DJANGO_LOG_LEVEL", "WARNING")},
}
