"""Django settings. Everything that differs between machines comes from the environment (docs/configuration.md)."""

import re
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from oauthclients.algorithms import SIGNING_ALGORITHMS
from plumbing.env import env_bool, env_int, env_list, env_str
from scopes.catalog import SCOPES, ScopeLevel

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DJANGO_DEBUG", False)

SECRET_KEY = env_str("DJANGO_SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY is required when DJANGO_DEBUG is off")
    # Debug only: a per-checkout key is fine, a shared hard-coded one is not.
    SECRET_KEY = "insecure-debug-only-" + str(BASE_DIR)

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])

# Off lets the server run over plain HTTP on loopback (tests, benchmark, `make run`).
REQUIRE_HTTPS = env_bool("DJANGO_REQUIRE_HTTPS", not DEBUG)

# localhost, as `make run` serves: an IP address cannot be a WebAuthn relying party (passkeys).
OAUTH_ISSUER = (env_str("OAUTH_ISSUER") or "http://localhost:8000").rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",  # allauth's session list (/accounts/sessions/) shows "3 minutes ago" with it
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served from our static files (no CDN)
    "corsheaders",  # CORS for single-page apps; oauthflows/cors.py decides which origin
    "oauth2_provider",
    "scopes",
    "oauthclients",
    "signing",
    "tokens",
    "oauthflows",
    "profiles",
    # django-allauth (docs/accounts.md): accounts, second factors, upstream identity providers.
    "allauth",
    "accounts.apps.AllauthAccountConfig",  # allauth.account, requiring our wrapper of its middleware
    "allauth.mfa",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "allauth.usersessions",  # the account's sessions, for "Sign out everywhere" (accounts.views)
    "accounts.apps.AccountsConfig",
    "operations",  # health, readiness, metrics, access logs, traces, the admin's morning view
    "config.apps.ProjectConfig",  # the shell: registers the checks that wire the apps together
]

MIDDLEWARE = [
    "plumbing.requestid.RequestIdMiddleware",  # X-Request-ID on the response and on every log line
    # Then: /healthz, /readyz and /metrics for their networks before the HTTPS redirect and the
    # host check (docs/operating.md).
    "operations.middleware.OperationsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "plumbing.dbfailure.DatabaseUnavailableMiddleware",
    "corsheaders.middleware.CorsMiddleware",
    "plumbing.securityheaders.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "plumbing.ratelimit.RateLimitMiddleware",
    "plumbing.requestlimits.RequestLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "plumbing.csrf.FetchMetadataCsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The page's language: ui_locales, the person's choice, Accept-Language; off the machine paths.
    "accounts.languages.LanguageMiddleware",
    "accounts.middleware.AccountMiddleware",  # allauth's, off the /v2 and metadata paths
    "profiles.middleware.AdminTimeZoneMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "accounts.middleware.StaffSecondFactorMiddleware",  # /admin/ only: staff need a second factor
    "accounts.middleware.RecentLoginMiddleware",  # admin pages that grant a power; secrets
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
# Django's ModelBackend, with the profile loaded in the user's query (profiles/backends.py).
# Sessions name the backend that logged them in: a session from before this setting (Django's
# ModelBackend) ends, and its user logs in again.
# accounts.backends.AccountBackend: allauth's, for sign-in by email (ACCOUNT_LOGIN_METHODS), same profile join.
AUTHENTICATION_BACKENDS = ["profiles.backends.ProfileModelBackend", "accounts.backends.AccountBackend"]
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "profiles.context_processors.user_time_zone",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend, with a health check that sends no SELECT 1 to a quiet connection
    # (plumbing/postgresql/base.py). DATABASE_HEALTH_CHECK=ping keeps Django's own (a SELECT 1 at
    # every request's first query), =off none at all; the bench measures both (docs/performance.md).
    health_check = env_str("DATABASE_HEALTH_CHECK") or "poll"
    if health_check not in ("poll", "ping", "off"):
        raise ImproperlyConfigured("DATABASE_HEALTH_CHECK must be poll, ping or off.")
    DATABASES["default"].update(
        ENGINE="plumbing.postgresql", CONN_HEALTH_CHECKS=health_check != "off", HEALTH_CHECK=health_check
    )
    # psycopg's server-side binding: parameters sent apart from the SQL, and a statement run more
    # than DATABASE_PREPARE_THRESHOLD times on a connection is prepared (parsed and planned once
    # per connection). On by default: 17-28 % less CPU per request in `make bench` (docs/performance.md,
    # "Performance"). Behind PgBouncer in transaction mode, prepared statements need PgBouncer
    # >= 1.22 with max_prepared_statements > 0 (psycopg sends DEALLOCATE ALL after a rollback,
    # which older versions refuse): otherwise keep the binding and turn preparing off
    # (DATABASE_PREPARE_THRESHOLD=off), or turn both off (DATABASE_SERVER_SIDE_BINDING=0).
    if env_bool("DATABASE_SERVER_SIDE_BINDING", True):
        threshold = env_str("DATABASE_PREPARE_THRESHOLD", "1")
        DATABASES["default"].setdefault("OPTIONS", {}).update(
            server_side_binding=True,
            # psycopg: None never prepares; 0 prepares on the first run.
            prepare_threshold=None if threshold.strip().lower() == "off" else env_int("DATABASE_PREPARE_THRESHOLD", 1),
        )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Writers wait for the lock instead of failing at once, and every atomic block takes the
    # write lock up front (BEGIN IMMEDIATE) so that read-check-write services serialize.
    DATABASES["default"].setdefault("OPTIONS", {}).update({"timeout": 20, "transaction_mode": "IMMEDIATE"})
    DATABASES["default"]["CONN_MAX_AGE"] = 0

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Argon2id at OWASP's first recommendation (accounts/hashers.py; docs/configuration.md, "Password
# hashing"); PBKDF2 verifies the hashes stored before it, each upgraded at the person's next sign-in.
# `check --deploy` warns (config.W006) when the first is weaker.
PASSWORD_HASHERS = [
    "accounts.hashers.Argon2idPasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]

LOGIN_URL = "/accounts/login/"
# Without `next`, accounts.adapter.AccountAdapter sends developers to their clients, others to Connected apps.
LOGIN_REDIRECT_URL = "/settings/apps/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

# --- Accounts: django-allauth (accounts/, docs/accounts.md) ---
# Self sign-up: "off" (default; accounts come from the scheduling service, an administrator or an
# identity provider) or "open".
OAUTH_SIGNUP = (env_str("OAUTH_SIGNUP") or "off").strip().lower()
if OAUTH_SIGNUP not in ("off", "open"):
    raise ImproperlyConfigured(f"OAUTH_SIGNUP must be off or open (got {OAUTH_SIGNUP!r})")
ACCOUNT_ADAPTER = "accounts.adapter.AccountAdapter"
ACCOUNT_FORMS = {"login": "accounts.forms.LoginForm", "signup": "accounts.forms.SignupForm"}
ACCOUNT_LOGIN_METHODS = {"username", "email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "username*", "password1*", "password2*"]
ACCOUNT_UNIQUE_EMAIL = True
# Mandatory, so that allauth's enumeration prevention (ACCOUNT_PREVENT_ENUMERATION, on) answers a
# sign-up alike whether its address has an account or not; but only for accounts made at the
# sign-up page (accounts.models.SelfSignup, accounts.stages): those made by administrators,
# `createsuperuser`, `seed_demo` or an identity provider sign in without a proved address, as
# before. An ID token says email_verified only for an address the user proved (oauthflows/token/userinfo.py).
ACCOUNT_EMAIL_VERIFICATION = "mandatory"
# The link followed in the browser that signed up finishes that sign-up as its sign-in (allauth keeps
# the pending sign-in in that session only): a fresh password sign-in (accounts.adapter.AccountAdapter.post_login).
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True
ACCOUNT_EMAIL_UNKNOWN_ACCOUNTS = False  # a reset asked for an unknown address mails nobody; the page is the same
ACCOUNT_SESSION_REMEMBER = True  # sessions last as before (no "remember me" box)
# prompt=login and max_age send a signed-in user to the login page: it must ask again, not skip.
ACCOUNT_AUTHENTICATED_LOGIN_REDIRECTS = False
ACCOUNT_LOGOUT_REDIRECT_URL = LOGOUT_REDIRECT_URL
# A password change keeps this session and ends the others (Django's session hash); a reset ends all.
ACCOUNT_LOGOUT_ON_PASSWORD_CHANGE = False
ACCOUNT_LOGIN_ON_PASSWORD_RESET = False
PASSWORD_RESET_TIMEOUT = 60 * 60  # a reset link expires after an hour, and works once (Django's token)
# One rate-limit mechanism for the login: ours (plumbing/ratelimit.py, per address and per
# identifier, the admin's form included), and for the second factor's codes and re-authentication
# (per address and per account, counted in Redis or PostgreSQL). allauth's "login_failed" would count
# both in its own way, and its "reauthenticate" (every post, per user) is ours now: both stay off.
# allauth keeps its limits on what ours does not cover (password reset requests, reset links, email
# verification, passkey sign-in), in Django's default cache: see "Rate limiting and cache" below.
ACCOUNT_RATE_LIMITS = {"login": False, "login_failed": False, "reauthenticate": False}
# Second factors (allauth.mfa): TOTP with single-use recovery codes, and passkeys (WebAuthn), also
# for passwordless sign-in. Secrets are sealed with the signing keys' key-encryption key
# (accounts.adapter.MFAAdapter); the WebAuthn relying party is OAUTH_ISSUER's host.
MFA_ADAPTER = "accounts.adapter.MFAAdapter"
# allauth's forms, ours (accounts.forms): the code typed to activate an authenticator app is used
# up, as a sign-in's is; typed again, the second step says it was used; a passkey credential fido2
# cannot read is a form error at every door, never a 500; a new passkey signs in on its own unless
# unticked.
MFA_FORMS = {
    "activate_totp": "accounts.forms.ActivateTOTPForm",
    "authenticate": "accounts.forms.AuthenticateForm",
    "reauthenticate": "accounts.forms.ReauthenticateForm",
    "authenticate_webauthn": "accounts.forms.AuthenticateWebAuthnForm",
    "login_webauthn": "accounts.forms.LoginWebAuthnForm",
    "reauthenticate_webauthn": "accounts.forms.ReauthenticateWebAuthnForm",
    "add_webauthn": "accounts.forms.AddWebAuthnForm",
    "signup_webauthn": "accounts.forms.SignupWebAuthnForm",
}
MFA_SUPPORTED_TYPES = ["totp", "recovery_codes", "webauthn"]
MFA_PASSKEY_LOGIN_ENABLED = True
MFA_TOTP_ISSUER = env_str("MFA_TOTP_ISSUER", "")  # the name authenticator apps show; default the issuer's host
# Off: it would let allauth accept a passkey ceremony from any origin. Every ceremony accepts exactly
# OAUTH_ISSUER's origin (accounts.passkeys), http://localhost:PORT included (browsers allow WebAuthn
# over plain http on localhost only: development and tests).
MFA_WEBAUTHN_ALLOW_INSECURE_ORIGIN = False
# Administrators must have a second factor (accounts.middleware.StaffSecondFactorMiddleware); on by
# default with debug off, and `check --deploy` warns when it is off.
OAUTH_STAFF_MFA_REQUIRED = env_bool("OAUTH_STAFF_MFA_REQUIRED", not DEBUG)
# Upstream OpenID Connect providers (accounts.models.IdentityProvider, `manage.py identityprovider`):
# accounts made just in time, linked by (provider, sub); an email finds a person only by
# accounts.identity's rule, never allauth's email authentication (accounts.socialadapter).
SOCIALACCOUNT_ADAPTER = "accounts.socialadapter.SocialAccountAdapter"
SOCIALACCOUNT_AUTO_SIGNUP = True
SOCIALACCOUNT_STORE_TOKENS = False  # upstream tokens are used once, at sign-in, and never stored
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False
SOCIALACCOUNT_LOGIN_ON_GET = False  # "Continue with NAME" is a POST (CSRF-protected)
# Every upstream sign-in sends PKCE (S256) and a nonce, and takes one `sub` (accounts.upstream).
SOCIALACCOUNT_PROVIDERS = {
    "openid_connect": {"provider_class": "accounts.upstream.UpstreamProvider", "OAUTH_PKCE_ENABLED": True}
}
# The redirect URI to register at a provider is OAUTH_ISSUER's: with debug on and no OAUTH_ISSUER set,
# `identityprovider` warns that it printed the default's, which a server on another port does not use.
OAUTH_ISSUER_FROM_ENVIRONMENT = bool(env_str("OAUTH_ISSUER"))
# allauth.usersessions records each sign-in's session (at login, not per request: no middleware,
# nothing on the token path), so that "Sign out everywhere" can end them whatever the session store.
USERSESSIONS_TRACK_ACTIVITY = False

# --- Languages (docs/languages.md) ---
# English, and every language whose catalogue (locale/<code>/LC_MESSAGES/django.po) is complete:
# tests/i18n/test_catalogues.py checks each one listed here. Adding a language is one line here
# plus its .po and .mo. Pages and mail follow ui_locales, then the person's choice, then the
# browser (accounts.languages); the metadata's ui_locales_supported lists exactly these.
LANGUAGES = [
    ("en", "English"),
    ("de", "Deutsch"),
    ("fr", "Français"),
    ("es", "Español"),
    ("it", "Italiano"),
    ("pt-br", "Português (Brasil)"),
    ("nl", "Nederlands"),
    ("ja", "日本語"),
    ("zh-hans", "简体中文"),
    ("ko", "한국어"),
    ("ar", "العربية"),
]
LANGUAGE_CODE = "en"
# Our catalogues; allauth's, Django's and the admin's come with them, as they ship.
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Serve from the finders too, so `gunicorn config.wsgi` with debug off works even before
# `collectstatic` has run (make run collects anyway).
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# Security headers. Secure cookies and HSTS only when HTTPS is required.
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "no-referrer"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = REQUIRE_HTTPS
CSRF_COOKIE_SECURE = REQUIRE_HTTPS
SECURE_SSL_REDIRECT = REQUIRE_HTTPS and env_bool("DJANGO_SSL_REDIRECT", True)
# A year; DJANGO_HSTS_SECONDS=0 sends none (the production path tried on localhost, whose HSTS would
# also send `make run`'s plain http://localhost to https; docs/deploying.md, "Try it on one machine").
SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 31536000) if REQUIRE_HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = REQUIRE_HTTPS
if env_bool("DJANGO_BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Bounds for every form and /v2 JSON body. The OAuth endpoints and /v2 query strings have tighter
# ones (8 KB query, 64 KB body) in plumbing/requestlimits.py; no legitimate form here has 200 fields.
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_NUMBER_FIELDS = 200

# django-oauth-toolkit: every model swapped for ours (oauthclients/models/) from the first
# migration, so the flows can store digests and carry our review state without a rewrite.
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauthclients.OAuthClient"
OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL = "oauthclients.AccessToken"
OAUTH2_PROVIDER_REFRESH_TOKEN_MODEL = "oauthclients.RefreshToken"
OAUTH2_PROVIDER_GRANT_MODEL = "oauthclients.Grant"
OAUTH2_PROVIDER_ID_TOKEN_MODEL = "oauthclients.IDToken"

# RFC 6749 §4.1.2 recommends at most 10 minutes; single use, bound to client, redirect URI and PKCE.
OAUTH_AUTHORIZATION_CODE_LIFETIME = env_int("OAUTH_AUTHORIZATION_CODE_LIFETIME", 600, minimum=1)
OAUTH_ACCESS_TOKEN_LIFETIME = 1800  # spec §2.2 / §8: expires_in is 1800
OAUTH_REFRESH_TOKEN_LIFETIME = env_int("OAUTH_REFRESH_TOKEN_LIFETIME", 60 * 60 * 24 * 90, minimum=1)
# A refresh token presented again within this many seconds of its use is a racing duplicate (refused,
# nothing revoked); later, a replay (its token family is revoked). Codes get no grace: any second
# presentation revokes what the code produced (RFC 9700 §4.5). See oauthflows/token/oauth2.py.
OAUTH_REPLAY_GRACE_SECONDS = env_int("OAUTH_REPLAY_GRACE_SECONDS", 5)

# PostgreSQL: redeem a code or refresh token in one hand-written statement when every check
# passes (tokens/redemption.py); 0 sends every redemption through the ORM's full path instead.
OAUTH_FAST_REDEMPTION = env_bool("OAUTH_FAST_REDEMPTION", True)
# PostgreSQL: 1, the default, writes the authorization code in the same statement as the consent and
# its audit row (tokens/consents.py); 0 lets Django INSERT the code. Four make bench trials side
# by side measured the single statement at 1.03-1.05 x the flow, and a fifth the INSERT at 0.92 x:
# all one way, where a trial that changes nothing reads 0.97-1.04 x (docs/performance.md, "The hot paths", 7).
OAUTH_CONSENT_STATEMENT = env_bool("OAUTH_CONSENT_STATEMENT", True)

# The paths the code names (the URLconfs serve them: tests/test_each_constant_in_one_place.py holds
# them together; which kind of endpoint each is: plumbing/paths.py).
# Under API_PATH_PREFIX errors answer in the /v2 JSON shape; under OAUTH_API_PATH_PREFIX in RFC 6749
# §5.2's (plumbing.errors).
API_PATH_PREFIX = "/v2"
API_ME_PATH = "/v2/me"
OAUTH_API_PATH_PREFIX = "/v2/auth/oauth2/"
OAUTH_AUTHORIZE_PATH = "/auth/oauth2/authorize"
OAUTH_TOKEN_PATH = "/v2/auth/oauth2/token"
OAUTH_REVOKE_PATH = "/v2/auth/oauth2/revoke"
OAUTH_INTROSPECT_PATH = "/v2/auth/oauth2/introspect"
# How /v2 views in this process verify bearer tokens (scopes.verifiers): here, one indexed query on
# the token table. Other services use scopes.introspection.IntrospectionVerifier
# (docs/protecting-endpoints.md).
OAUTH_TOKEN_VERIFIER = "tokens.verifier.LocalTokenVerifier"
# RFC 8707 / RFC 9728: this server's own API (/v2/me) as a protected resource. Apps may bind a
# token to it (`resource=`); a token bound to another resource is refused here. A token issued
# without `resource` is accepted everywhere unless OAUTH_REQUIRE_AUDIENCE is set (docs/agents.md).
OAUTH_RESOURCE_URI = (env_str("OAUTH_RESOURCE_URI") or f"{OAUTH_ISSUER}/v2").rstrip("/")
OAUTH_REQUIRE_AUDIENCE = env_bool("OAUTH_REQUIRE_AUDIENCE", False)
OAUTH_RESOURCE_NAME = env_str("OAUTH_RESOURCE_NAME", "Scheduling API")
OAUTH_RESOURCE_DOCUMENTATION = env_str("OAUTH_RESOURCE_DOCUMENTATION", f"{OAUTH_ISSUER}/v2/docs")

OAUTH_METADATA_PATH = "/.well-known/oauth-authorization-server"

# Signing keys (signing.keys, `manage.py signingkey`): their private parts are stored encrypted
# under this key, which lives in the environment only. Under DJANGO_DEBUG (make run) a key derived
# from the secret key stands in; `check --deploy` errors without a real one.
OAUTH_SIGNING_KEY_ENCRYPTION_KEY = env_str("OAUTH_SIGNING_KEY_ENCRYPTION_KEY") or (
    "debug-only-signing-key-encryption:" + SECRET_KEY if DEBUG else ""
)
# A rotated-in key is published this many seconds before it signs (the JWKS is cached for less).
OAUTH_SIGNING_KEY_PUBLISH_AHEAD = env_int("OAUTH_SIGNING_KEY_PUBLISH_AHEAD", 600)
# JWT access tokens (RFC 9068) for resource servers registered with --token-format jwt
# (signing.jwtokens, docs/verifying-tokens.md): signed with the current key of this algorithm.
OAUTH_JWT_ACCESS_TOKEN_ALGORITHM = env_str("OAUTH_JWT_ACCESS_TOKEN_ALGORITHM", "ES256")
if OAUTH_JWT_ACCESS_TOKEN_ALGORITHM not in SIGNING_ALGORITHMS:
    raise ImproperlyConfigured(f"OAUTH_JWT_ACCESS_TOKEN_ALGORITHM must be one of {', '.join(SIGNING_ALGORITHMS)}.")
# Token status lists (signing.statuslist): how long a resource server may keep one (so how long
# a revoked JWT may still pass there), and how many tokens one list holds (a multiple of 256).
OAUTH_STATUS_LIST_TTL = env_int("OAUTH_STATUS_LIST_TTL", 10, minimum=1)
OAUTH_STATUS_LIST_SIZE = env_int("OAUTH_STATUS_LIST_SIZE", 131072, minimum=256)
if OAUTH_STATUS_LIST_SIZE % 256:
    raise ImproperlyConfigured("OAUTH_STATUS_LIST_SIZE must be a multiple of 256.")
OAUTH_JWKS_PATH = "/.well-known/jwks.json"
OAUTH_STATUS_LIST_PATH = "/v2/auth/oauth2/status-lists/"  # + the list's number
# OpenID Connect (docs/openid-connect.md): discovery, userinfo, RP-initiated logout.
OAUTH_OPENID_CONFIGURATION_PATH = "/.well-known/openid-configuration"
OAUTH_USERINFO_PATH = "/v2/auth/oauth2/userinfo"
OAUTH_END_SESSION_PATH = "/auth/oauth2/logout"

# Agents and tools that register themselves (docs/agents.md). OAUTH_DYNAMIC_REGISTRATION:
# "unverified" (default: RFC 7591 registration is open and a new client is usable at once within
# OAUTH_UNVERIFIED_SCOPES), "pending" (it lands in the review queue, usable by nobody until
# approved) or "off" (no registration endpoint).
OAUTH_REGISTRATION_PATH = "/v2/auth/oauth2/register"
OAUTH_DYNAMIC_REGISTRATION = (env_str("OAUTH_DYNAMIC_REGISTRATION") or "unverified").strip().lower()
if OAUTH_DYNAMIC_REGISTRATION not in ("unverified", "pending", "off"):
    raise ImproperlyConfigured(
        f"OAUTH_DYNAMIC_REGISTRATION must be unverified, pending or off (got {OAUTH_DYNAMIC_REGISTRATION!r})"
    )
# The ceiling of an unverified client: by default the personal *_READ scopes (no TEAM_, ORG_ or
# *_WRITE). A comma-separated list of catalog names replaces it.
OAUTH_UNVERIFIED_SCOPES = env_list(
    "OAUTH_UNVERIFIED_SCOPES",
    [scope.name for scope in SCOPES.values() if scope.level is ScopeLevel.PERSONAL and scope.name.endswith("_READ")],
)
if unknown := [name for name in OAUTH_UNVERIFIED_SCOPES if name not in SCOPES]:
    raise ImproperlyConfigured(f"OAUTH_UNVERIFIED_SCOPES names unknown scopes: {', '.join(unknown)}")
# Client ID metadata documents (docs/agents.md) are fetched over https from public addresses only;
# this also allows http on 127.0.0.1, localhost and [::1]: for development and tests, never production.
OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK = env_bool("OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK", False)
# How many metadata documents the whole server fetches at once (every process together, counted
# where the rate limits count: oauthflows/registration/cimd.py); past it the authorization page says "try again".
OAUTH_CLIENT_METADATA_MAX_FETCHES = env_int("OAUTH_CLIENT_METADATA_MAX_FETCHES", 2, minimum=1)
# Self-registered clients nobody authorized within this many days are removed by `cleanup`.
OAUTH_UNUSED_REGISTRATION_DAYS = env_int("OAUTH_UNUSED_REGISTRATION_DAYS", 7, minimum=1)
# The owner recorded on self-registered clients: an inactive account that cannot log in.
OAUTH_SELF_REGISTERED_OWNER = env_str("OAUTH_SELF_REGISTERED_OWNER", "self-registered")

# CORS (django-cors-headers) for the metadata, token and revocation endpoints only; which origin
# may read an answer is decided per request by oauthflows.cors (no static allow-list, never
# credentials). Introspection is for servers, so it has none.
_cors_paths = (
    OAUTH_METADATA_PATH,
    OAUTH_OPENID_CONFIGURATION_PATH,
    OAUTH_TOKEN_PATH,
    OAUTH_REVOKE_PATH,
    OAUTH_REGISTRATION_PATH,
    OAUTH_USERINFO_PATH,
    API_ME_PATH,
)
# RFC 7592's client configuration endpoints too: the registration path and a client_id.
CORS_URLS_REGEX = (
    "^(" + "|".join(re.escape(path) for path in _cors_paths) + "|" + re.escape(OAUTH_REGISTRATION_PATH) + "/[^/]+)$"
)
CORS_ALLOWED_ORIGINS: list[str] = []
CORS_ALLOW_CREDENTIALS = False
CORS_ALLOW_METHODS = ("GET", "POST", "PATCH", "PUT", "DELETE", "OPTIONS")  # PUT, DELETE: RFC 7592
# mcp-protocol-version: the MCP SDKs send it with their discovery requests (MCP Inspector's page does).
CORS_ALLOW_HEADERS = ("accept", "authorization", "content-type", "mcp-protocol-version")
CORS_PREFLIGHT_MAX_AGE = 600

OAUTH2_PROVIDER = {
    "SCOPES_BACKEND_CLASS": "scopes.backends.CatalogScopes",
    "OAUTH2_VALIDATOR_CLASS": "oauthflows.token.oauth2.Validator",
    "OAUTH2_BACKEND_CLASS": "oauthflows.token.oauth2.Backend",
    "ACCESS_TOKEN_GENERATOR": "oauthflows.token.oauth2.generate_access_token",
    "REFRESH_TOKEN_GENERATOR": "oauthflows.token.oauth2.generate_token",
    "PKCE_REQUIRED": False,  # decided per client in Validator.is_pkce_required (public clients)
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": OAUTH_AUTHORIZATION_CODE_LIFETIME,
    "ACCESS_TOKEN_EXPIRE_SECONDS": OAUTH_ACCESS_TOKEN_LIFETIME,
    "REFRESH_TOKEN_EXPIRE_SECONDS": OAUTH_REFRESH_TOKEN_LIFETIME,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "ALLOWED_REDIRECT_URI_SCHEMES": ["https", "http"],
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "OIDC_ISS_ENDPOINT": OAUTH_ISSUER,
    # OpenID Connect (docs/openid-connect.md) through DOT's machinery: ID tokens signed by the one
    # key store (signing.keys; no OIDC_RSA_PRIVATE_KEY), every code exchange through
    # oauthlib's OpenID grant (oauthflows.token.oauth2.Server), userinfo and RP-initiated logout ours.
    "OIDC_ENABLED": True,
    "OIDC_SERVER_CLASS": "oauthflows.token.oauth2.Server",
    "OIDC_USERINFO_ENDPOINT": OAUTH_ISSUER + OAUTH_USERINFO_PATH,
    "OIDC_RP_INITIATED_LOGOUT_ENABLED": True,
    "OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT": True,  # the user confirms every logout an app asks for
    # Logging out of this server ends the session here; it does not revoke what other apps hold
    # (DOT would delete every access token of the user, for every app).
    "OIDC_RP_INITIATED_LOGOUT_DELETE_TOKENS": False,
    "OIDC_RESPONSE_TYPES_SUPPORTED": ["code"],
    "ID_TOKEN_EXPIRE_SECONDS": 3600,
    # RFC 7591 registration through DOT's view (oauthflows.registration.dynamic): open to anyone (the rate
    # limits and the unverified tier are the gate), off with OAUTH_DYNAMIC_REGISTRATION=off.
    "DCR_ENABLED": OAUTH_DYNAMIC_REGISTRATION != "off",
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauthflows.registration.dynamic.OpenRegistration",),
    # Client ID metadata documents are resolved at the authorization endpoint (oauthflows.registration.cimd) with
    # DOT's fetcher; its own hook in the validator stays off. Bounds of the draft's §6.6: 5 KB, 5 s.
    "CIMD_ENABLED": False,
    "CIMD_FETCH_TIMEOUT_SECONDS": 5,
    "CIMD_MAX_DOCUMENT_SIZE": 5 * 1024,
}

REST_FRAMEWORK = {
    # /v2 resource views are scopes.views.ScopedApiView (bearer token + scope check, deny by default);
    # the token, revoke and introspect endpoints are APIViews only so that the schema describes them.
    "DEFAULT_AUTHENTICATION_CLASSES": ["scopes.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["scopes.permissions.HasRequiredScope"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["scopes.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "config.exception_handlers.api_exception_handler",
    "UNAUTHENTICATED_USER": None,
    # Operation security and descriptions from the scope declarations (scopes/openapi.py).
    "DEFAULT_SCHEMA_CLASS": "scopes.openapi.ScopedAutoSchema",
}

# The public client Swagger UI (/v2/docs/) authorizes as; `seed_demo` makes one with this client_id.
OAUTH_DOCS_CLIENT_ID = env_str("OAUTH_DOCS_CLIENT_ID", "api-docs-demo")

# OpenAPI schema at /v2/schema/, docs at /v2/docs/ (config/openapi.py, docs/walkthrough.md, "API documentation").
SPECTACULAR_SETTINGS = {
    "TITLE": "Scheduling API",
    "DESCRIPTION": "The /v2 resource API and the OAuth 2.0 token, revocation and introspection endpoints.",
    "VERSION": "2",
    "SERVERS": [{"url": OAUTH_ISSUER}],
    "SCHEMA_PATH_PREFIX": "/v2",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_AUTHENTICATION": [],  # public: no token needed (nor checked) for the schema and docs
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "POSTPROCESSING_HOOKS": ["config.openapi.add_components"],  # enums stay inline
    # Swagger UI's "Authorize" runs the authorization code flow with PKCE against this server, as a
    # public client whose redirect URI is the page below (seed_demo registers one for the demo).
    "SWAGGER_UI_SETTINGS": {"oauth2RedirectUrl": f"{OAUTH_ISSUER}/v2/docs/oauth2-redirect.html"},
    "SWAGGER_UI_OAUTH2_CONFIG": {
        "clientId": OAUTH_DOCS_CLIENT_ID,
        "usePkceWithAuthorizationCodeGrant": True,
        "scopes": ["PROFILE_READ"],
    },
}

# Mail (client review notifications): printed on stderr by default (stdout stays for the JSON of
# management commands), SMTP when EMAIL_HOST is set.
EMAIL_HOST = env_str("EMAIL_HOST", "")
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "plumbing.mail.StderrEmailBackend",
)
EMAIL_PORT = env_int("EMAIL_PORT", 587, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Scheduling API <no-reply@localhost>")

# Log lines as text, or as JSON objects for a log pipeline (docs/operating.md, "Logs").
LOG_FORMAT = (env_str("LOG_FORMAT") or "text").strip().lower()
if LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be text or json (got {LOG_FORMAT!r})")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "redact_credentials": {"()": "plumbing.logfilters.RedactCredentials"},
        "request_id": {"()": "plumbing.requestid.RequestIdFilter"},
    },
    # LOG_FORMAT=json: one JSON object per line (operations/logs.py); text otherwise.
    "formatters": {
        "text": {"format": "%(message)s"},
        "json": {"()": "operations.logs.JsonLines"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["redact_credentials", "request_id"],
            "formatter": LOG_FORMAT,
        },
        # oauthlib logs codes and tokens in plaintext at DEBUG (plumbing/logfilters.py). This handler
        # writes nothing: on each library's top logger it redacts the records of all its modules
        # before they propagate to any other handler.
        "redact_in_place": {"class": "plumbing.logfilters.RedactInPlaceHandler"},
    },
    "root": {"handlers": ["console"], "level": env_str("DJANGO_LOG_LEVEL", "INFO")},
    "loggers": {
        # DOT logs request details at DEBUG; keep it quiet unless asked for explicitly.
        "oauth2_provider": {"level": env_str("OAUTH_LOG_LEVEL", "WARNING"), "handlers": ["redact_in_place"]},
        "oauthlib": {"level": env_str("OAUTH_LOG_LEVEL", "WARNING"), "handlers": ["redact_in_place"]},
        # Django's default config gives "django" a console handler of its own (when DEBUG is on)
        # on top of the root's: every record twice ("Watching for file changes" in `make run`).
        "django": {"handlers": [], "level": "INFO"},
        # Django's template engine logs a failed variable lookup at DEBUG with the exception, whose
        # text holds the whole template context: on the TOTP set-up page, the secret. Never DEBUG.
        "django.template": {"level": "INFO", "handlers": ["redact_in_place"]},
    },
}


# --- Rate limiting and cache ---
# docs/configuration.md "Rate limits" and "Caches". Counts live in Redis when REDIS_URL names one; else in PostgreSQL
# when that is the database (shared by every server process either way); per process only on SQLite. The default
# cache holds django-allauth's security state (used authenticator-app codes, its own limits: allauth uses no other
# cache), so it is shared the same way: Redis, else a table of PostgreSQL, per process only on SQLite. Nothing on
# the token, introspection, userinfo or authorization hot paths uses it.
from plumbing.env import env_networks, env_rate  # noqa: E402

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            # A hung Redis must not hang every login and token request (the limiter fails open).
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            # Culling at the default 300 entries would let a flood of addresses erase counters.
            "OPTIONS": {"MAX_ENTRIES": 100_000},
        }
    }
RATELIMIT_CACHE = "default"
if not REDIS_URL and DATABASES["default"]["ENGINE"] == "plumbing.postgresql":
    # No Redis but PostgreSQL: the counters live in the database, shared by every worker and
    # server (plumbing/countercache.py); per process remains only for SQLite development.
    CACHES["ratelimit"] = {"BACKEND": "plumbing.countercache.PostgresCounterCache", "LOCATION": "ratelimit_counters"}
    RATELIMIT_CACHE = "ratelimit"
    # And allauth's security state, in a table that `migrate` makes (plumbing/sharedcache.py). The
    # counter table above holds numbers only, and allauth stores lists and strings.
    CACHES["default"] = {"BACKEND": "plumbing.sharedcache.SharedStateCache"}
RATELIMIT_ENABLED = env_bool("RATELIMIT_ENABLED", True)
# Proxies whose X-Forwarded-For is believed (plumbing/clientip.py). Empty: REMOTE_ADDR only.
TRUSTED_PROXIES = env_networks("DJANGO_TRUSTED_PROXIES")
for _retired in ("RATELIMIT_REVOKE_REQUESTS_PER_CLIENT", "RATELIMIT_INTROSPECT_REQUESTS_PER_CLIENT"):
    # Strangers could fill a per-client request limit with the public client_id: replaced by the
    # *_FAILURES_PER_CLIENT limits. Said loudly rather than ignored.
    if (env_str(_retired) or "").strip():
        raise ImproperlyConfigured(
            f"{_retired} is gone: set {_retired.replace('REQUESTS', 'FAILURES')} (docs/configuration.md)."
        )
# (count, seconds) per limit name in plumbing/ratelimit.py ROUTES.
RATELIMITS = {
    "token_failures_per_address": env_rate("RATELIMIT_TOKEN_FAILURES_PER_ADDRESS", "60/m"),
    "token_failures_per_client": env_rate("RATELIMIT_TOKEN_FAILURES_PER_CLIENT", "20/m"),
    "token_requests_per_address": env_rate("RATELIMIT_TOKEN_REQUESTS_PER_ADDRESS", "600/m"),
    "revoke_requests_per_address": env_rate("RATELIMIT_REVOKE_REQUESTS_PER_ADDRESS", "300/m"),
    # Per client_id: failed client authentications only (plumbing/ratelimit.py, judged after the view).
    "revoke_failures_per_client": env_rate("RATELIMIT_REVOKE_FAILURES_PER_CLIENT", "20/m"),
    "introspect_requests_per_address": env_rate("RATELIMIT_INTROSPECT_REQUESTS_PER_ADDRESS", "300/m"),
    "introspect_failures_per_client": env_rate("RATELIMIT_INTROSPECT_FAILURES_PER_CLIENT", "20/m"),
    # Inactive answers to one resource server (its valid traffic is never counted).
    "introspect_inactive_per_resource_server": env_rate("RATELIMIT_INTROSPECT_INACTIVE_PER_RESOURCE_SERVER", "3000/m"),
    "login_failures_per_address": env_rate("RATELIMIT_LOGIN_FAILURES_PER_ADDRESS", "10/5m"),
    "login_failures_per_username": env_rate("RATELIMIT_LOGIN_FAILURES_PER_USERNAME", "10/5m"),
    # Wrong second-factor codes (and re-authentications) per account, per address: a 6-digit code can
    # be guessed, so past the limit even the right one waits for the window (plumbing/ratelimit.py).
    "second_factor_failures_per_account": env_rate("RATELIMIT_SECOND_FACTOR_FAILURES_PER_ACCOUNT", "30/15m"),
    "second_factor_failures_per_address": env_rate("RATELIMIT_SECOND_FACTOR_FAILURES_PER_ADDRESS", "30/15m"),
    "consent_failures_per_address": env_rate("RATELIMIT_CONSENT_FAILURES_PER_ADDRESS", "20/m"),
    "consent_failures_per_user": env_rate("RATELIMIT_CONSENT_FAILURES_PER_USER", "20/m"),
    # Logo uploads on the developer pages (each is decoded): per signed-in user, per address.
    "logo_uploads_per_user": env_rate("RATELIMIT_LOGO_UPLOADS_PER_USER", "10/h"),
    "logo_uploads_per_address": env_rate("RATELIMIT_LOGO_UPLOADS_PER_ADDRESS", "30/h"),
    # RFC 7591 registration is open: per address, and for everyone together.
    "registrations_per_address": env_rate("RATELIMIT_REGISTRATIONS_PER_ADDRESS", "50/h"),
    "registrations_total": env_rate("RATELIMIT_REGISTRATIONS_TOTAL", "1000/h"),
    # RFC 7592 client configuration: every call per address; wrong tokens per client_id.
    "registration_management_per_address": env_rate("RATELIMIT_REGISTRATION_MANAGEMENT_PER_ADDRESS", "120/h"),
    "registration_management_failures_per_client": env_rate(
        "RATELIMIT_REGISTRATION_MANAGEMENT_FAILURES_PER_CLIENT", "20/m"
    ),
}


# --- Operations (docs/operating.md) ---
# Who may call /healthz and /readyz over plain HTTP with any Host (the load balancer, the kubelet):
# judged by the socket's peer address, never X-Forwarded-For. Default: loopback only.
HEALTH_CHECK_NETWORKS = env_networks("HEALTH_CHECK_NETWORKS") or ["127.0.0.0/8", "::1/128"]
# /metrics (Prometheus): from these networks by the socket's peer (default loopback, a scraper beside
# the server), or from anywhere with METRICS_TOKEN as a bearer token (unset: no token opens it).
METRICS_NETWORKS = env_networks("METRICS_NETWORKS") or ["127.0.0.0/8", "::1/128"]
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
# The operator's rotation plan for signing keys: the metrics count down to it and the shipped alert
# fires past it (`manage.py signingkey rotate`).
OAUTH_SIGNING_KEY_ROTATION_DAYS = env_int("OAUTH_SIGNING_KEY_ROTATION_DAYS", 90, minimum=1)
# The admin's morning view: each process writes its hourly counts at most this often (operations.hourly).
OPERATIONS_HOURLY_FLUSH_SECONDS = 10
# Checks of `check --deploy` that do not apply here, each with its reason; every remaining warning is
# explained in docs/deploying.md.
SILENCED_SYSTEM_CHECKS = [
    # No CsrfViewMiddleware: plumbing.csrf.FetchMetadataCsrfViewMiddleware replaces it (Fetch Metadata,
    # then Django's token check); operations.E001 errors if neither is installed.
    "security.W003",
    # HSTS preload submits the domain and every subdomain to the browsers' lists for good: the
    # operator's decision, not a default (DJANGO_HSTS_PRELOAD=1 sets it; docs/deploying.md).
    "security.W021",
    # http redirect URIs: oauthclients/validators.py allows http only on loopback hosts (RFC 8252
    # §7.3 native apps); every other redirect URI must be https (SECURITY.md).
    "oauth2_provider.W008",
    # PKCE: required per client by oauthflows.token.oauth2.Validator.is_pkce_required (every public client;
    # a confidential client that sent a challenge must send the verifier), as SECURITY.md says.
    "oauth2_provider.W010",
]
SECURE_HSTS_PRELOAD = REQUIRE_HTTPS and env_bool("DJANGO_HSTS_PRELOAD", False)
