"""Whether a client may act, and whether a token is alive, each decided in one place (issue 39,
"One policy for clients and tokens"): `oauthclients/policy.py` and `tokens/liveness.py`.

This test reads every module of the project (the import-linter's packages, migrations aside) and
fails on a second copy of either decision:

- a client-status decision: a comparison with a review state (`ClientStatus.X`,
  `AUTHORIZABLE_STATUSES`, or a `.status` compared with one of their values), a query keyword on a
  client's status (`status=ClientStatus.X`, `application__status=...`), a review state in an SQL
  string, or a call of DOT's `is_usable` (which asks the policy);
- a token-liveness decision: a comparison of an `expires`, a `revoked` compared with None, a
  token's `.user.is_active`, `is_expired()`, or a query keyword on them (`expires__gt`,
  `revoked__isnull`, `user__is_active`, `access_token__expires__...`).

Allowed elsewhere only: the registered SQL twins (plumbing.handwritten.SQL_TWINS, compared with
their functions by tests/test_sql_twins.py), and the places below, each with the reason it is not
the decision: the review workflow that changes a state, the pages that name it, the sweeps of
rows long dead. A place listed here that no longer decides anything fails too, so the list stays
true.
"""

import ast
import importlib
import tomllib
from pathlib import Path

import pytest

import oauthflows.token.exchange  # noqa: F401  (each registers its SQL twin on import)
import signing.statuslist  # noqa: F401
import tokens.redemption  # noqa: F401
from oauthclients.models import ClientStatus
from plumbing.handwritten import SQL_TWINS

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]
THE_PLACES = {"client": "oauthclients/policy.py", "token": "tokens/liveness.py"}

REVIEW = "the review workflow: changes a client's state or decides the next one, not whether it may act"
SHOWN = "what a page, mail, count or admin says of the state, not whether the client may act"
ALLOWED = {
    "client": {
        ("oauthclients/models/clients.py", "OAuthClient.Meta"): "the column's check constraint",
        ("oauthclients/models/clients.py", "OAuthClient.is_unverified"): "the state's name, for pages and the ceiling",
        ("oauthclients/models/clients.py", "OAuthClient.is_approved"): "the state's name, for pages",
        ("oauthclients/models/clients.py", "OAuthClient.post_logout_redirect_uri_choices"): (
            "which URIs the approval covered (an approved client's reviewed snapshot), not whether it may act"
        ),
        ("oauthclients/services/review.py", "client_approve"): REVIEW,
        ("oauthclients/services/review.py", "client_reject"): REVIEW,
        ("oauthclients/services/clients.py", "resource_server_create"): REVIEW,
        ("oauthclients/services/clients.py", "_apply_edit"): REVIEW,
        ("oauthclients/services/registration.py", "client_document_refresh"): REVIEW,
        ("oauthclients/services/registration.py", "unused_registrations_remove"): REVIEW,
        ("oauthclients/services/registration.py", "client_registration_update"): REVIEW,
        ("oauthclients/services/registration.py", "client_registration_token_issue"): REVIEW,
        ("oauthflows/registration/cimd.py", "metadata_document_client"): (
            "whether a client ID metadata document is fetched again (an unverified client's), a registration's rule"
        ),
        ("oauthclients/admin.py", "OAuthClientAdmin.get_ordering"): SHOWN,
        ("oauthclients/admin.py", "OAuthClientAdmin.changes_since_approval"): SHOWN,
        ("oauthclients/admin.py", "OAuthClientAdmin.render_change_form"): SHOWN,
        ("oauthclients/emails.py", "review_email_send"): SHOWN,
        ("oauthclients/emails.py", "_review_email"): SHOWN,
        ("oauthclients/views.py", "_update_message"): SHOWN,
        ("oauthclients/selectors.py", "clients_with_verified_name_like"): SHOWN,
        ("oauthclients/templatetags/oauthclients_admin.py", "pending_client_count"): SHOWN,
        ("oauthclients/templatetags/oauthclients_admin.py", "unverified_client_count"): SHOWN,
        ("operations/metrics.py", "ScrapeCollector._review_queue"): SHOWN,
        ("operations/selectors.py", "morning_view_get"): SHOWN,
    },
    "token": {
        ("oauthclients/grants.py", "grants_end"): "ending a grant: the rows not yet revoked are the ones to revoke",
        ("tokens/services.py", "user_access_end"): "ending a user's access: the rows not yet revoked are revoked",
        ("tokens/cleanup.py", "expired_tokens_delete"): "the sweep of rows dead for a retention period",
        ("signing/statuslist.py", "status_lists_sweep"): "the sweep of lists whose every JWT expired",
        ("oauthflows/token/idjag.py", "_assertion_use"): "an assertion's jti record (RFC 7523 replay), no token",
        ("oauthflows/token/oauth2.py", "Validator.validate_refresh_token"): (
            "a revoked refresh token presented again is a replay that revokes its family (RFC 9700 §4.14.2); "
            "whether a token is alive is token_alive's, called right below"
        ),
    },
}

STATUS_NAMES = {"ClientStatus", "AUTHORIZABLE_STATUSES"}
STATUS_VALUES = set(ClientStatus.values)
TOKEN_KEYWORDS = ("expires__", "revoked__isnull", "user__is_active", "access_token__expires")


def _names_a_state(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in STATUS_NAMES:
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in STATUS_NAMES:
            return True
    return False


def _attributes(node: ast.AST) -> set[str]:
    return {sub.attr for sub in ast.walk(node) if isinstance(sub, ast.Attribute)}


def _client_decision(node: ast.AST) -> str | None:
    if isinstance(node, ast.Compare):
        if _names_a_state(node):
            return ast.unparse(node)
        constants = {sub.value for sub in ast.walk(node) if isinstance(sub, ast.Constant)}
        if "status" in _attributes(node) and constants & STATUS_VALUES:
            return ast.unparse(node)
    if isinstance(node, ast.keyword) and node.arg and "status" in node.arg.split("__") and _names_a_state(node.value):
        return f"{node.arg}=…"
    if isinstance(node, ast.JoinedStr) and _names_a_state(node):
        return "a review state in SQL text"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "is_usable":
        return "is_usable()"
    return None


def _token_decision(node: ast.AST) -> str | None:
    if isinstance(node, ast.Compare):
        attributes = _attributes(node)
        if "expires" in attributes:
            return ast.unparse(node)
        if "revoked" in attributes and any(
            isinstance(sub, ast.Constant) and sub.value is None for sub in [node.left, *node.comparators]
        ):
            return ast.unparse(node)
    user = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "user"
    if user and node.attr == "is_active":
        return ast.unparse(node)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "is_expired":
        return "is_expired()"
    if isinstance(node, ast.keyword) and node.arg and node.arg.startswith(TOKEN_KEYWORDS):
        return f"{node.arg}=…"
    return None


def decisions(source: str, filename: str) -> list[tuple[str, str, int, str]]:
    """(kind, enclosing function or class, line, what) of each decision in `source`."""
    found = []

    def visit(node, stack):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(child, [*stack, child.name])
                continue
            where = ".".join(stack) or "<module>"
            for kind, detect in (("client", _client_decision), ("token", _token_decision)):
                what = detect(child)
                if what:
                    found.append((kind, where, child.lineno, what))
            visit(child, stack)

    visit(ast.parse(source, filename), [])
    return found


def _twins() -> set[tuple[str, str]]:
    """(path, function) of each registered SQL twin."""
    places = set()
    for name in SQL_TWINS:
        module, _, function = name.rpartition(".")
        path = importlib.import_module(module).__file__
        places.add((str(Path(path).relative_to(ROOT)), function))
    return places


def project_decisions() -> list[tuple[str, str, str, int, str]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            relative = str(path.relative_to(ROOT))
            for kind, where, line, what in decisions(path.read_text(), relative):
                found.append((kind, relative, where, line, what))
    return found


@pytest.mark.parametrize("kind", ["client", "token"])
def test_no_decision_outside_its_one_place(kind):
    twins = _twins()
    stray = [
        f"{path}:{line} {where}: {what}"
        for found_kind, path, where, line, what in project_decisions()
        if found_kind == kind
        and path != THE_PLACES[kind]
        and (path, where) not in ALLOWED[kind]
        and (path, where) not in twins
    ]
    assert stray == [], f"decided outside {THE_PLACES[kind]} (call it instead): {stray}"


@pytest.mark.parametrize("kind", ["client", "token"])
def test_each_allowed_place_still_decides_something(kind):
    found = {(path, where) for found_kind, path, where, _line, _what in project_decisions() if found_kind == kind}
    assert set(ALLOWED[kind]) - found == set()


@pytest.mark.parametrize("kind", ["client", "token"])
def test_the_one_place_is_where_the_rule_is(kind):
    assert any(path == THE_PLACES[kind] for found_kind, path, *_rest in project_decisions() if found_kind == kind)


COPIES = {
    "client": [
        "def f(client):\n    return client.status == ClientStatus.REJECTED\n",
        "def f(client):\n    return client.status in AUTHORIZABLE_STATUSES\n",
        "def f(client):\n    return client.status != 'pending'\n",
        "def f():\n    return Token.objects.exclude(application__status=ClientStatus.REJECTED)\n",
        "def f(client, request):\n    return client.is_usable(request)\n",
        "def f(c):\n    return f\"WHERE {c} = '{ClientStatus.APPROVED.value}'\"\n",
    ],
    "token": [
        "def f(token, now):\n    return token.expires > now\n",
        "def f(token):\n    return token.revoked is None\n",
        "def f(token):\n    return token.user.is_active\n",
        "def f(token):\n    return token.is_expired()\n",
        "def f(now):\n    return Token.objects.filter(expires__gt=now, revoked__isnull=True)\n",
        "def f():\n    return Token.objects.filter(user__is_active=True)\n",
    ],
}


@pytest.mark.parametrize(("kind", "source"), [(kind, source) for kind, sources in COPIES.items() for source in sources])
def test_the_guard_sees_a_copy(kind, source):
    assert [found_kind for found_kind, *_rest in decisions(source, "copy.py")] and all(
        found_kind == kind for found_kind, *_rest in decisions(source, "copy.py")
    )


def test_the_guard_lets_a_person_be_active_and_a_form_be_valid():
    source = "def f(user, form):\n    return user.is_active and form.is_valid() and client_may_act(1, 2, 3)\n"
    assert decisions(source, "fine.py") == []
