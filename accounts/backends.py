"""Sign-in by username or email (allauth's backend), with the profile loaded with the user."""

from allauth.account.auth_backends import AuthenticationBackend

from profiles.backends import ProfileModelBackend


class AccountBackend(AuthenticationBackend):
    # The session's user is read with its profile in one query (profiles/backends.py), whichever
    # way the user signed in.
    get_user = ProfileModelBackend.get_user
