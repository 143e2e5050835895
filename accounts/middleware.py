"""allauth's AccountMiddleware, kept off the machine-to-machine paths.

allauth's middleware sets `request.allauth`, enters a context variable holding the request (its
adapters read it), turns its exceptions into responses, and redirects a 404 at `/accounts/` to the
login page. None of that concerns the token, revocation, introspection, userinfo, status-list and
/v2 API endpoints, nor the metadata documents, whose cost per request the bench measures
(README, "Performance"): there, the request goes straight on.
"""

from allauth.account.middleware import AccountMiddleware as _AllauthAccountMiddleware

# Every path under these serves apps and resource servers, never a person with a browser session.
MACHINE_PATH_PREFIXES = ("/v2/", "/.well-known/", "/static/")


def is_machine_path(path: str) -> bool:
    return path.startswith(MACHINE_PATH_PREFIXES)


class AccountMiddleware:
    sync_capable = True
    async_capable = False

    def __init__(self, get_response):
        self.get_response = get_response
        self.allauth = _AllauthAccountMiddleware(get_response)

    def __call__(self, request):
        if is_machine_path(request.path_info):
            return self.get_response(request)
        return self.allauth(request)

    def process_exception(self, request, exception):
        if is_machine_path(request.path_info):
            return None
        return self.allauth.process_exception(request, exception)
