from django.apps import AppConfig


class OperationsConfig(AppConfig):
    """Health and readiness, metrics, access logs, traces and the admin's morning view
    (docs/operating.md). It reads the other apps; no app imports it."""

    name = "operations"
    verbose_name = "Operations"

    def ready(self):
        from operations import checks, metrics, receivers  # noqa: F401 - registers its deploy checks

        receivers.connect()
        metrics.series_declare()
        from operations.tracing import tracing_setup

        tracing_setup()  # only with OTEL_EXPORTER_OTLP_ENDPOINT: nothing is imported otherwise
