from django.db import models


class HourlyCount(models.Model):
    """What happened in one hour, shared by every process and server: the admin's morning view
    reads these (operations.selectors), never one process's Prometheus counters.

    Each process adds up in memory and writes at most every OPERATIONS_HOURLY_FLUSH_SECONDS (operations.hourly), one
    statement for everything it counted; rows older than KEPT_HOURS are swept by the same writer.
    Bounded: a handful of names, and per hour at most the clients that were refused.
    """

    hour = models.IntegerField()  # hours since the Unix epoch (UTC): time.time() // 3600
    name = models.CharField(max_length=64)  # operations.hourly: TOKENS_ISSUED, TOKENS_REFUSED, ...
    label = models.CharField(max_length=255, blank=True, default="")  # a client_id or a limit's name
    count = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["hour", "name", "label"], name="hourly_count_unique")]
        indexes = [models.Index(fields=["name", "hour"])]

    def __str__(self):
        return f"{self.name} {self.label} hour {self.hour} = {self.count}"
