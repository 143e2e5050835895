"""Settings for `make bench`: the production settings, plus bench-only routes and a query counter.

- ROOT_URLCONF: bench.urls = config.urls + the floor views under /floor/ (bench/floor.py);
- bench.middleware.QueryCountMiddleware, outermost: every response carries X-DB-Queries, the
  number of SQL statements the request ran (the bench's "queries per request" column);
- rate limits, if the settings define any, raised out of reach: the load comes from one address
  and one client at hundreds of requests a second. The limiter still runs (its cost is measured),
  it just never refuses.

Everything else (debug off, secret key, HTTPS, database) comes from the environment as in
production; bench/run.py sets DJANGO_DEBUG=0, DJANGO_REQUIRE_HTTPS=0 and a random secret key.
"""

from config.settings import *  # noqa: F403
from config.settings import MIDDLEWARE

ROOT_URLCONF = "bench.urls"
MIDDLEWARE = ["bench.middleware.QueryCountMiddleware", *MIDDLEWARE]

if isinstance(globals().get("RATELIMITS"), dict):
    RATELIMITS = {name: (10**9, limit[1]) for name, limit in globals()["RATELIMITS"].items()}
