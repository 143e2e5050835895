"""The authentication backend: Django's ModelBackend, loading the user's profile with the user.

Every page behind the session reads the signed-in user, and most show their name or times in
their time zone (the consent page's "Signed in as", the admin's times), which live on the
profile. Loading the profile in the same query as the user (a LEFT JOIN: a user without a
saved profile reads as one with the defaults, profiles.selectors) saves a query on each.
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend


class ProfileModelBackend(ModelBackend):
    def get_user(self, user_id):
        user_model = get_user_model()
        try:
            user = user_model._default_manager.select_related("profile").get(pk=user_id)
        except user_model.DoesNotExist:
            return None
        return user if self.user_can_authenticate(user) else None
