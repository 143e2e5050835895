"""The password hasher: Argon2id with parameters chosen for this deployment (docs/configuration.md,
"Password hashing").

Django's own Argon2PasswordHasher is Argon2id already, with m = 100 MiB and p = 8: at gunicorn's
default worker count (config/gunicorn.py, 2 x cores + 1) a 16-core server could hold 3.3 GiB in
hashes at once. Here the parameters are OWASP's first recommendation for Argon2id (Password Storage
Cheat Sheet: m = 19 MiB, t = 2, p = 1): about 20 ms of one core per hash where Django's default
PBKDF2 (1,000,000 iterations of SHA-256) takes about 220 (docs/performance.md, scenario 9), and
19 MiB per worker hashing at once, 627 MiB for the 33 workers of a 16-core server.

Hashes made with other parameters, and Django's PBKDF2 hashes from before (still verified:
settings.PASSWORD_HASHERS lists PBKDF2 after this one), are stored again with these at the person's
next successful sign-in: Django's check_password calls its setter when must_update says so.
"""

from django.contrib.auth.hashers import Argon2PasswordHasher

# OWASP's first recommendation for Argon2id: the floor `check --deploy` holds PASSWORD_HASHERS[0] to
# (config.checks.password_hasher_strong). Memory in KiB, as argon2 counts it.
MINIMUM_MEMORY_KIB = 19 * 1024
MINIMUM_TIME_COST = 2
PARALLELISM = 1  # OWASP: p = 1; a sync worker hashes on one core


class Argon2idPasswordHasher(Argon2PasswordHasher):
    """Django's Argon2id hasher (argon2-cffi) with this deployment's parameters, named "argon2" as
    Django's is, so that a hash of either verifies with the other and is upgraded when they differ."""

    memory_cost = MINIMUM_MEMORY_KIB
    time_cost = MINIMUM_TIME_COST
    parallelism = PARALLELISM
