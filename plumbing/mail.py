"""Development mail: Django's console backend, but on stderr.

Commands such as `manage.py oauthclient` print JSON on stdout for scripts (`| jq`); a review
mail printed there would break that. The server's own log goes to stderr already.
"""

import sys

from django.core.mail.backends.console import EmailBackend as ConsoleEmailBackend


class StderrEmailBackend(ConsoleEmailBackend):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("stream", sys.stderr)
        super().__init__(*args, **kwargs)
