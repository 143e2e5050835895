"""Where the authorize page's milliseconds go, middleware by middleware (docs/performance.md).

    .venv/bin/python -m bench.middleware_cost [--requests 400]

In one process, on a throwaway SQLite database: a signed-in user opens an approved client's
consent page (`GET /auth/oauth2/authorize`, scenario 4's first step) again and again, with a
probe between every two middleware of settings.MIDDLEWARE and one around the view. A
middleware's own time is the time inside its probe less the time inside the next one (what the
rest of the stack and the view took). Each figure is the median over the requests, in
microseconds of wall time on this machine (one process, nothing else measured), so it shows
which middleware costs what relative to the others, not the bench's ratios. `GET /v2/me` (a
machine path, scenario 1) is measured the same way, to show what the people's middleware
leaves the API paying.
"""

import argparse
import os
import statistics
import sys
import time

PROBES = 40
_marks: list[tuple[int, str, int]] = []


def _probe_class(position: int):
    class Probe:
        def __init__(self, get_response):
            self.get_response = get_response

        def __call__(self, request):
            _marks.append((position, "in", time.perf_counter_ns()))
            try:
                return self.get_response(request)
            finally:
                _marks.append((position, "out", time.perf_counter_ns()))

    Probe.__name__ = Probe.__qualname__ = f"Probe{position}"
    return Probe


for _position in range(PROBES):
    globals()[f"Probe{_position}"] = _probe_class(_position)


def own_times(marks, names: list[str]) -> dict[str, int]:
    """Each layer's own nanoseconds from one request's marks: probe i wraps layer i and all below."""
    inside = {}
    entered = {}
    for position, kind, at in marks:
        if kind == "in":
            entered[position] = at
        else:
            inside[position] = at - entered[position]
    result = {}
    for i, name in enumerate(names):
        below = inside.get(i + 1, 0)
        result[name] = inside.get(i, 0) - below
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400)
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DJANGO_DEBUG", "0")
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-middleware-cost-" + "x" * 40)
    os.environ.setdefault("DATABASE_URL", "sqlite:////tmp/bench-middleware-cost.sqlite3")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django
    from django.conf import settings

    django.setup()
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import override_settings

    call_command("migrate", verbosity=0, interactive=False)
    from tests.factories import make_client, make_tokens, make_user

    owner = make_user("bench-owner")
    person = make_user("bench-person")
    created = make_client(owner, scopes=["PROFILE_READ"], approve=True)
    access, _refresh = make_tokens(person, created.client)
    from urllib.parse import urlencode

    authorize = "/auth/oauth2/authorize?" + urlencode(
        {
            "client_id": created.client.client_id,
            "redirect_uri": created.client.redirect_uri_list[0],
            "scope": "PROFILE_READ",
            "state": "bench",
            "prompt": "consent",
        }
    )
    # Under `python -m` this file runs as __main__; the probes in the stack are the importable
    # module's, with its own list of marks.
    from bench import middleware_cost as probes

    marks = probes._marks
    names = list(settings.MIDDLEWARE) + ["view (URL resolving, the view, the template)"]
    stack = []
    for i, middleware in enumerate(settings.MIDDLEWARE):
        stack += [f"bench.middleware_cost.Probe{i}", middleware]
    stack.append(f"bench.middleware_cost.Probe{len(settings.MIDDLEWARE)}")

    def measure(client, path, headers) -> dict[str, float]:
        samples: dict[str, list[int]] = {name: [] for name in names}
        for _ in range(20):  # warm-up: compiled queries, caches, templates
            client.get(path, **headers)
        for _ in range(args.requests):
            marks.clear()
            response = client.get(path, **headers)
            assert response.status_code == 200, response.status_code
            for name, ns in own_times(list(marks), names).items():
                samples[name].append(ns)
        return {name: statistics.median(values) / 1000 for name, values in samples.items()}

    with override_settings(MIDDLEWARE=stack, ALLOWED_HOSTS=["testserver"], SECURE_SSL_REDIRECT=False):
        browser = Client()
        browser.force_login(person)
        page = measure(browser, authorize, {})
        api = measure(Client(), "/v2/me", {"HTTP_AUTHORIZATION": f"Bearer {access}"})
    print(f"{'middleware':60} {'authorize page µs':>18} {'GET /v2/me µs':>14}")
    for name in names:
        print(f"{name:60} {page[name]:18.1f} {api[name]:14.1f}")
    print(f"{'total (sum of medians)':60} {sum(page.values()):18.1f} {sum(api.values()):14.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
