"""The bench's trial "Django's default hasher" (bench/run.py, HASHER_TRIAL): the bench's settings
(config.settings_bench) with Django's own PASSWORD_HASHERS, whose first is PBKDF2-SHA256 at Django's
1,000,000 iterations, in place of the project's Argon2id (accounts/hashers.py). Its server signs in
the seed's `default_hasher_login_users`, whose hashes are Django's default, so that neither server
stores the other's hashes again."""

from django.conf import global_settings

from config.settings_bench import *  # noqa: F403

PASSWORD_HASHERS = global_settings.PASSWORD_HASHERS
