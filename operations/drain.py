"""The drain flag: set in the gunicorn master at SIGTERM, read by every worker's /readyz.

Imported by the gunicorn configuration (config/gunicorn.py) in the master before it forks the
workers, so the one-byte shared memory below is the same page in the master and every worker
(`multiprocessing.RawValue` is an anonymous MAP_SHARED mapping). Reading it costs no system call.
Without that configuration (manage.py runserver, the test client) each process has its own flag,
which nothing sets: /readyz never drains there.

Stdlib only: the master imports it before Django is set up.
"""

import multiprocessing

_draining = multiprocessing.RawValue("b", 0)


def drain_start() -> None:
    """From now on /readyz answers 503 (the load balancer stops sending); requests are still served."""
    _draining.value = 1


def draining() -> bool:
    return bool(_draining.value)


def drain_reset() -> None:
    """Tests only: the flag is per test run."""
    _draining.value = 0
