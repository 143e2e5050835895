"""Who a person is, decided once (issue 38's finding 3; issue 39, "One rule for who a person is").

accounts/identity.py is the only code that finds an account from an upstream identity: from a
(provider, `sub`) link, or from an address. Its `upstream_person` is the rule; the sign-in through
a provider and ID-JAG both call it (tests/accounts/test_upstream_identity.py asks both doors the
same questions). This test reads every module of the project and fails on a second copy: a query on
SocialAccount, EmailAddress or the user model that looks an account up by `uid` or by an email
without naming the account it concerns (`user=`), or a call of allauth's `filter_users_by_email`.
A lookup of one known account's own rows (`EmailAddress.objects.filter(user=user, email=...)`) is
not finding a person, and passes.
"""

import ast
import tomllib
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
# Every package of the project: the import-linter's list (pyproject.toml).
PACKAGES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]
THE_ONE_PLACE = "accounts/identity.py"
MODELS = {"SocialAccount", "EmailAddress", "User"}
QUERY_METHODS = {"filter", "get", "exclude", "get_or_create", "update_or_create", "filter_by", "first"}
SCOPED_BY = ("user", "user_id", "user__pk", "user__id", "pk", "id")
FINDERS = {"filter_users_by_email", "get_users_for"}


def _model_of(node: ast.AST) -> str | None:
    """The model a manager chain (`X.objects.filter(...)...`) starts from, if it is one we watch."""
    while isinstance(node, ast.Attribute | ast.Call):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id == "get_user_model":
                return "User"
            node = node.func
        else:
            node = node.value
    return node.id if isinstance(node, ast.Name) and node.id in MODELS else None


def _finds_a_person(keyword: str) -> bool:
    field = keyword.split("__")[0]
    return field in ("email", "uid") or keyword.startswith(("emailaddress__email", "socialaccount__uid"))


def person_lookups(source: str, filename: str) -> list[str]:
    """Each place in `source` that finds an account from an address or an upstream `sub`."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in FINDERS:
            found.append(f"{filename}:{node.lineno} {name}()")
            continue
        if name not in QUERY_METHODS or _model_of(func) is None:
            continue
        keywords = [keyword.arg for keyword in node.keywords if keyword.arg]
        # Q(email=...) objects passed positionally find people just the same.
        for argument in node.args:
            if isinstance(argument, ast.Call) and isinstance(argument.func, ast.Name) and argument.func.id == "Q":
                keywords += [keyword.arg for keyword in argument.keywords if keyword.arg]
        if any(_finds_a_person(keyword) for keyword in keywords) and not any(
            keyword in SCOPED_BY for keyword in keywords
        ):
            found.append(f"{filename}:{node.lineno} {_model_of(func)}.{name}({', '.join(keywords)})")
    return found


def project_modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if "/migrations/" not in relative:
                yield relative, path.read_text()


def test_no_code_but_the_one_rule_finds_a_person_from_an_upstream_identity_or_an_address():
    modules = dict(project_modules())
    assert THE_ONE_PLACE in modules and len(modules) > 100
    elsewhere = [
        hit for name, source in modules.items() if name != THE_ONE_PLACE for hit in person_lookups(source, name)
    ]
    assert elsewhere == []
    # The one place does find people (else this test would pass for reading nothing).
    assert len(person_lookups(modules[THE_ONE_PLACE], THE_ONE_PLACE)) >= 3


@pytest.mark.parametrize(
    "copy",
    [
        # What oauthflows/token/idjag.py and accounts/socialadapter.py did before the rule was one.
        'link = SocialAccount.objects.filter(provider=p.slug, uid=claims["sub"]).first()',
        "address = EmailAddress.objects.filter(email__iexact=email, verified=True).first()",
        "existing = get_user_model().objects.filter(email__iexact=email).first()",
        "user = User.objects.get(Q(email=email))",
        "users = filter_users_by_email(email, prefer_verified=True)",
    ],
)
def test_a_second_copy_of_the_rule_fails_this_test(copy):
    assert person_lookups(copy, "elsewhere.py") != []


def test_a_known_accounts_own_rows_are_not_finding_a_person():
    own = "EmailAddress.objects.filter(user=user, email__iexact=email, verified=True).exists()"
    assert person_lookups(own, "elsewhere.py") == []


def test_allauth_finds_nobody_by_email_either():
    # allauth's own "email authentication" would match an upstream sign-in to a local account by
    # address, outside the rule; it stays off (no app settings of ours turn it on: accounts.socialadapter).
    assert settings.SOCIALACCOUNT_EMAIL_AUTHENTICATION is False
    assert "email_authentication" not in (ROOT / "accounts/socialadapter.py").read_text()
