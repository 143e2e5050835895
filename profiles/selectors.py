from profiles.models import DEFAULTS, Profile


def profile_get_for_user(*, user) -> Profile:
    """The user's profile, or an unsaved one with the defaults (reads never write)."""
    try:
        return user.profile
    except Profile.DoesNotExist:
        return Profile(user=user, **DEFAULTS)
