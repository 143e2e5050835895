"""The fast /v2/me renderer and the documented OutputSerializer describe the same object."""

import pytest

from profiles.apis import MeApi, profile_data
from profiles.models import Profile
from profiles.selectors import profile_get_for_user
from tests.factories import make_user


@pytest.mark.parametrize("saved", [False, True])
def test_profile_data_equals_the_output_serializer(db, saved):
    user = make_user("ada", first_name="Ada")
    if saved:
        Profile.objects.create(
            user=user, name="Ada L.", time_zone="Europe/London", locale="en-GB", time_format=12, week_start="Sunday"
        )
    profile = profile_get_for_user(user=user)
    assert profile_data(profile) == dict(MeApi.OutputSerializer(profile).data)
    assert set(profile_data(profile)) == set(MeApi.OutputSerializer().fields)
