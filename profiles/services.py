from django.db import transaction

from profiles.models import DEFAULTS, Profile


@transaction.atomic
def profile_update(*, user, **changes) -> Profile:
    """Apply validated changes (model field names) to the user's profile, creating it if needed."""
    profile, _ = Profile.objects.select_for_update().get_or_create(user=user, defaults=dict(DEFAULTS))
    for field, value in changes.items():
        setattr(profile, field, value)
    profile.full_clean()
    profile.save()
    return profile
