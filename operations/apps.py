from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class OperationsConfig(AppConfig):
    """Health and readiness, metrics, access logs, traces and the admin's morning view
    (docs/operating.md). It reads the other apps; no app imports it."""

    name = "operations"
    verbose_name = _("Operations")

    def ready(self):
        # Imported in ready(): this module is imported while the app registry loads, before the models.
        from operations import checks, metrics, receivers  # noqa: F401 - registers its deploy checks
        from operations.tracing import tracing_setup

        receivers.connect()
        metrics.series_declare()
        tracing_setup()  # only with OTEL_EXPORTER_OTLP_ENDPOINT: nothing is imported otherwise
