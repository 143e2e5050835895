"""Signal receivers: they notice a change made elsewhere and hand it to a service (no logic here).

A user saved with `is_active` going from true to false (the admin's user page, a script) has every
code, token and consent ended by `services.user_access_end`. A bulk `QuerySet.update(is_active=False)`
sends no signal: deactivate users through `save()` or call the service yourself.

A user deleted outright takes their tokens with them by cascade, which bypasses AccessToken's own
delete: their JWT access tokens' status bits are set first (oauthclients.statuslist).
"""

from django.contrib.auth import get_user_model
from django.db.models.signals import post_save, pre_delete, pre_save
from django.dispatch import receiver

from oauthclients.models import AccessToken
from oauthclients.services import user_access_end
from oauthclients.statuslist import status_bits_set


def _touches_is_active(update_fields) -> bool:
    return update_fields is None or "is_active" in update_fields


@receiver(pre_save, sender=get_user_model(), dispatch_uid="oauthclients.user_was_active")
def user_was_active(sender, instance, update_fields=None, **kwargs):
    # A login saves only last_login: no query for that.
    if instance.pk is None or not _touches_is_active(update_fields):
        return
    instance._was_active = sender.objects.filter(pk=instance.pk).values_list("is_active", flat=True).first()


@receiver(post_save, sender=get_user_model(), dispatch_uid="oauthclients.user_deactivated")
def user_deactivated(sender, instance, created=False, update_fields=None, **kwargs):
    if created or not _touches_is_active(update_fields):
        return
    if getattr(instance, "_was_active", None) and not instance.is_active:
        user_access_end(user=instance)
    instance._was_active = instance.is_active


@receiver(pre_delete, sender=get_user_model(), dispatch_uid="oauthclients.user_deleted")
def user_deleted(sender, instance, **kwargs):
    status_bits_set(
        AccessToken.objects.filter(user=instance, status_index__isnull=False).values_list("status_list", "status_index")
    )
