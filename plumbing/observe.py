"""Events the operations app counts (metrics, the admin's morning view), sent from the places they
happen. Plain Django signals: the plumbing and the apps that send them know nothing of Prometheus,
and sending to no receiver costs a dictionary lookup. Each is sent at a refusal or a rare event,
never on a successful token request.
"""

from django.dispatch import Signal

# plumbing.ratelimit refused a request (429): limit=<its name in settings.RATELIMITS>.
ratelimit_refused = Signal()
# plumbing.dbfailure answered 503 because the database could not be reached: error=<class name>.
database_unavailable = Signal()
# oauthflows.registration.cimd, a client ID metadata document fetch: phase="started", then phase="finished" with
# outcome="fetched" | "refused" | "error"; or phase="skipped" with outcome="backoff" | "busy".
metadata_document_fetch = Signal()
METADATA_DOCUMENT_OUTCOMES = ("fetched", "refused", "error", "backoff", "busy")
# signing.statuslist signed a token status list again: number=<the list>.
status_list_built = Signal()
