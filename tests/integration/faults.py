"""Fault injection for the fleet test: a gunicorn worker SIGKILLs itself on a request the test marks.

Test-only. tests/integration/gunicorn_faults.py (config/gunicorn.py plus a post_worker_init hook)
wraps each worker's WSGI application with `kill_switch`; the production configuration
(config/settings.py, config/wsgi.py, config/gunicorn.py) never imports this module
(tests/integration/test_fault_injection.py checks). Even where installed, it acts only on a request
carrying the header `X-Fault-Injection: <mode> <token>` whose token is FAULT_INJECTION_TOKEN, made
fresh by the test that starts the server; without that variable the hook refuses to install.

Modes:
- `kill-after-commit`: the application runs to its end (the token view's transaction committed,
  every middleware done, the response built) and the worker is SIGKILLed before gunicorn writes a
  byte of it: the client (through HAProxy, a 502) never learns what was committed.
- `cut-before`: the connection is closed on arrival, before the application sees the request, and
  the worker lives on (no reboot to wait for): the client sees the same 502, nothing was committed,
  and a retry is the first redemption.

Each worker logs LOADED once it has loaded the application (gunicorn logs "Booting worker" when it
forks one, before that), so that a test can wait until every worker serves.
"""

import hmac
import os
import signal
import socket

HEADER = "X-Fault-Injection"
ENVIRON_KEY = "HTTP_X_FAULT_INJECTION"
TOKEN_VARIABLE = "FAULT_INJECTION_TOKEN"
KILL_AFTER_COMMIT = "kill-after-commit"
CUT_BEFORE = "cut-before"
MODES = frozenset({KILL_AFTER_COMMIT, CUT_BEFORE})
LOADED = "Fault injection installed: the worker serves"
BOOTING = "Booting worker with pid"  # gunicorn's line at each fork


def mark(mode: str, token: str) -> dict[str, str]:
    """The header that marks a request for `mode`."""
    assert mode in MODES, mode
    return {HEADER: f"{mode} {token}"}


def marked_mode(environ: dict, token: str) -> str | None:
    """The request's mode if it carries a known mode and the right token, else None."""
    mode, _, presented = environ.get(ENVIRON_KEY, "").partition(" ")
    if mode in MODES and hmac.compare_digest(presented.encode(), token.encode()):
        return mode
    return None


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def cut(environ: dict, start_response) -> list[bytes]:
    """Close the connection to the client (the proxy) without an answer; the worker goes on."""
    environ["gunicorn.socket"].shutdown(socket.SHUT_RDWR)
    # gunicorn's write to the closed socket fails with EPIPE, which it ignores.
    start_response("502 Bad Gateway", [])
    return [b""]


def kill_switch(application, token: str):
    """`application`, except that a marked request kills the worker (module docstring)."""
    if not token:
        raise RuntimeError(f"{TOKEN_VARIABLE} is empty: fault injection is not installed without it")

    def with_kill_switch(environ, start_response):
        mode = marked_mode(environ, token)
        if mode == CUT_BEFORE:
            return cut(environ, start_response)
        result = application(environ, start_response)
        if mode == KILL_AFTER_COMMIT:
            # Django's response is complete and its transaction committed; gunicorn writes the
            # headers and the body only when it iterates `result`, which it never will.
            die()
        return result

    with_kill_switch.fault_injection = True
    return with_kill_switch
