"""Passwords are stored with Argon2id at the documented parameters (accounts/hashers.py), and a hash
from before (Django's PBKDF2) still signs in and is stored as Argon2id afterwards; that upgrade, like
a password change, ends the person's other sessions, once (docs/configuration.md, "Password
hashing"). The suite hashes with MD5 for speed (config/settings_test.py): these tests use the
production list."""

import pytest
from django.contrib.auth.hashers import Argon2PasswordHasher, PBKDF2PasswordHasher, identify_hasher, make_password
from django.test import Client

from accounts.hashers import Argon2idPasswordHasher
from config import settings as production
from tests.accounts.helpers import log_in
from tests.factories import PASSWORD

ARGON2ID_PREFIX = "argon2$argon2id$v=19$m=19456,t=2,p=1$"


@pytest.fixture(autouse=True)
def _production_hashers(settings):
    settings.PASSWORD_HASHERS = production.PASSWORD_HASHERS


def _stored(user) -> str:
    user.refresh_from_db(fields=["password"])
    return user.password


def _signed_in(browser) -> bool:
    return browser.get("/settings/apps/").status_code == 200


def test_production_hashes_with_argon2id_first_and_still_verifies_pbkdf2():
    assert production.PASSWORD_HASHERS == [
        "accounts.hashers.Argon2idPasswordHasher",
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    ]


def test_a_new_password_is_stored_as_argon2id_with_the_documented_parameters(end_user):
    end_user.set_password(PASSWORD)
    end_user.save()
    assert _stored(end_user).startswith(ARGON2ID_PREFIX)
    assert isinstance(identify_hasher(end_user.password), Argon2idPasswordHasher)
    assert end_user.check_password(PASSWORD) and not end_user.check_password(PASSWORD + "x")


def test_a_pbkdf2_hash_from_before_the_change_still_signs_in_and_is_stored_as_argon2id_afterwards(end_user):
    # As the previous release stored it: Django's PBKDF2-SHA256, 1,000,000 iterations.
    end_user.password = make_password(PASSWORD, hasher=PBKDF2PasswordHasher())
    end_user.save(update_fields=["password"])
    assert end_user.password.startswith("pbkdf2_sha256$1000000$")
    browser, answer = log_in("enduser")
    assert answer.status_code == 302 and not answer["Location"].startswith("/accounts/")
    assert _stored(end_user).startswith(ARGON2ID_PREFIX)
    assert _signed_in(browser)
    _, again = log_in("enduser")  # and the new hash signs in
    assert again.status_code == 302 and not again["Location"].startswith("/accounts/")


def test_a_wrong_password_upgrades_nothing(end_user):
    before = make_password(PASSWORD, hasher=PBKDF2PasswordHasher())
    end_user.password = before
    end_user.save(update_fields=["password"])
    _, answer = log_in("enduser", PASSWORD + "x")
    assert answer.status_code == 200  # the form again
    assert _stored(end_user) == before


def test_djangos_own_argon2_parameters_are_upgraded_too(end_user):
    # Django's Argon2PasswordHasher (m = 100 MiB, p = 8): the same algorithm, other parameters.
    end_user.password = make_password(PASSWORD, hasher=Argon2PasswordHasher())
    end_user.save(update_fields=["password"])
    assert "m=102400,t=2,p=8" in end_user.password
    _, answer = log_in("enduser")
    assert answer.status_code == 302
    assert _stored(end_user).startswith(ARGON2ID_PREFIX)


def test_the_upgrade_ends_the_other_sessions_once_and_keeps_this_one(end_user):
    # Django's session hash is an HMAC of the stored password hash: storing it again signs the other
    # sessions out, as a password change does. This sign-in's session is made after the upgrade.
    end_user.password = make_password(PASSWORD, hasher=PBKDF2PasswordHasher())
    end_user.save(update_fields=["password"])
    tablet = Client()
    tablet.force_login(end_user)  # signed in before the change, with the PBKDF2 hash
    assert _signed_in(tablet)
    laptop, _ = log_in("enduser")  # upgrades
    assert _stored(end_user).startswith(ARGON2ID_PREFIX)
    assert _signed_in(laptop)
    assert not _signed_in(tablet)  # signed out by the upgrade
    # Once: an Argon2id hash at the parameters is not stored again, and the other sessions stay.
    desk, _ = log_in("enduser")
    assert _signed_in(desk) and _signed_in(laptop)
