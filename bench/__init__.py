"""`make bench`: the load benchmark of the authorization server (docs/performance.md).

Nothing here is imported by the server in production: the bench runs the project under
config.settings_bench (production settings + bench.urls + the query-count middleware) and stock
django-oauth-toolkit under bench.stock_settings, each in its own gunicorn.
"""
