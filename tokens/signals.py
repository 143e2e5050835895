"""Signal receivers: they notice a change made elsewhere and hand it to a service (no logic here).

The registry's grants_end (a client rejected or deleted, a user deactivated, Connected apps'
revoke) sends `grants_ending`: the standing consents end with the grant (tokens.consents).

A user saved with `is_active` going from true to false (the admin's user page, a script) has every
code, token and consent ended by `services.user_access_end`. A bulk `QuerySet.update(is_active=False)`
sends no signal: deactivate users through `save()` or call the service yourself.

JWT access tokens' status bits need no receiver: the database sets them when a token's row goes,
its user is made inactive (a bulk update included) or its client is rejected
(signing.statuslist).
"""

from django.contrib.auth import get_user_model
from django.db.models.signals import post_save, pre_save
from django.dispatch import receiver

from oauthclients.grants import grants_ending
from tokens.consents import consents_end
from tokens.services import user_access_end


@receiver(grants_ending, dispatch_uid="tokens.consents_end")
def grant_consents_end(sender, client=None, user=None, **kwargs) -> int:
    return consents_end(client=client, user=user)


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
