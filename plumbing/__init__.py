"""Shared HTTP and database plumbing, below every app: middleware (rate limits, request limits,
CSRF by Fetch Metadata, security headers, database outages), environment parsing, error pages,
client addresses, log redaction, the console mail backend, OpenAPI helpers, request-parameter
parsing and the PostgreSQL engine. It imports no app of ours and not `config` (an import-linter
contract in `make lint` says so)."""
