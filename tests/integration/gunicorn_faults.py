"""The fleet test's gunicorn configuration: the production one (config/gunicorn.py: the readiness
drain, Prometheus's multiprocess directory) plus fault injection (tests/integration/faults.py),
which each worker installs around its WSGI application once it has loaded it.

    gunicorn -c tests/integration/gunicorn_faults.py config.wsgi   # with FAULT_INJECTION_TOKEN set

Never used outside the tests; without FAULT_INJECTION_TOKEN a worker refuses to boot.
"""

import os

from config.gunicorn import *  # noqa: F403 - every production setting and hook, unchanged


def post_worker_init(worker):
    from tests.integration.faults import LOADED, TOKEN_VARIABLE, kill_switch

    worker.wsgi = kill_switch(worker.wsgi, os.environ.get(TOKEN_VARIABLE, ""))
    worker.log.info("%s (pid %s)", LOADED, worker.pid)
