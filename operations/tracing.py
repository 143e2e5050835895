"""OpenTelemetry traces, only when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/operating.md, "Traces").

Without it nothing of OpenTelemetry's SDK or instrumentations is imported, and no request pays for
it. With it: one span per request (opentelemetry-instrumentation-django) with the database
statements under it (opentelemetry-instrumentation-psycopg), sent over OTLP/HTTP in batches. The
exporter reads the standard OTEL_* variables (endpoint, headers, service name).

No credential in any attribute: request bodies and headers are not recorded, SQL is recorded with
its placeholders (never its parameters), and the query string, where a careless client may put a
token, is cut from the URL attributes (_request_hook), as is a key carried in the path.
"""

import os

from plumbing.logfilters import path_redacted


def _request_hook(span, request) -> None:
    if not span.is_recording():
        return
    # The path only: no query string, and no host (an unchecked Host header is the client's to write);
    # a key carried in the path (a password reset or email confirmation link) redacted, as in the logs.
    path = path_redacted(request.path)
    for attribute in ("http.target", "http.url", "url.full"):
        span.set_attribute(attribute, path)
    span.set_attribute("url.query", "")


def instrument(tracer_provider) -> None:
    """Django's requests and psycopg's statements, traced with this provider."""
    # Imported here: OpenTelemetry is loaded only when traces are on (module docstring).
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    DjangoInstrumentor().instrument(tracer_provider=tracer_provider, request_hook=_request_hook)
    PsycopgInstrumentor().instrument(tracer_provider=tracer_provider, enable_commenter=False)


def uninstrument() -> None:
    # Imported here: OpenTelemetry is loaded only when traces are on (module docstring).
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    DjangoInstrumentor().uninstrument()
    PsycopgInstrumentor().uninstrument()


def tracing_setup() -> bool:
    """Called once at start-up (OperationsConfig.ready). True if traces are on."""
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return False
    # Imported here: OpenTelemetry is loaded only when traces are on (module docstring).
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(
        resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "oauth-authorization-server")})
    )
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    instrument(provider)
    return True
