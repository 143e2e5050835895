"""The authorized user's profile as /v2/me shows it (spec §4.4: fields not shown; chosen here)."""

from django.conf import settings
from django.db import models


class WeekStart(models.TextChoices):
    MONDAY = "Monday"
    TUESDAY = "Tuesday"
    WEDNESDAY = "Wednesday"
    THURSDAY = "Thursday"
    FRIDAY = "Friday"
    SATURDAY = "Saturday"
    SUNDAY = "Sunday"


class TimeFormat(models.IntegerChoices):
    TWELVE_HOUR = 12, "12-hour"
    TWENTY_FOUR_HOUR = 24, "24-hour"


DEFAULTS = {"name": "", "time_zone": "UTC", "locale": "en", "time_format": 24, "week_start": WeekStart.MONDAY}


class Profile(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    name = models.CharField(max_length=255, blank=True, default=DEFAULTS["name"])
    time_zone = models.CharField(max_length=64, default=DEFAULTS["time_zone"])
    locale = models.CharField(max_length=16, default=DEFAULTS["locale"])
    time_format = models.PositiveSmallIntegerField(choices=TimeFormat.choices, default=DEFAULTS["time_format"])
    week_start = models.CharField(max_length=9, choices=WeekStart.choices, default=DEFAULTS["week_start"])
    # The language of this server's pages and mail, as the person chose it on their account pages
    # (accounts.languages); empty until they do. Not `locale`, which apps read and write through
    # /v2/me: no app changes a person's interface language (docs/languages.md).
    interface_language = models.CharField(max_length=16, blank=True, default="")
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(time_format__in=[12, 24]), name="profile_time_format_valid"),
            models.CheckConstraint(
                condition=models.Q(week_start__in=WeekStart.values), name="profile_week_start_valid"
            ),
        ]

    def __str__(self):
        return f"Profile of {self.user_id}"
