"""Each grant declares itself once (oauthflows/grants.py): the token endpoint, oauthlib's dispatch,
the server metadata, RFC 7591 registration, the OpenAPI document and the metrics read that
declaration, and every grant answers through the one builder (`token_response`), `token_type`
`bearer` from all of them (docs/choices.md).

The guard reads the project's source (the apps, the shell and the plumbing; not the tests, the
bench, the examples or the migrations) for a grant written by hand: a grant type URI, two grant
types in one literal (a list of them), or a grant type compared with or set as a `grant_type`."""

import ast
from pathlib import Path

import jsonschema
import pytest
from oauthlib.common import Request

from oauthflows.discovery.metadata import server_metadata
from oauthflows.grants import (
    AUTHORIZATION_CODE,
    GRANT_TYPES,
    GRANTS,
    JWT_BEARER,
    REFRESH_TOKEN,
    TOKEN_EXCHANGE,
    TOKEN_TYPE,
    AssertionState,
    CodeState,
    ExchangeState,
    GrantState,
    grant_state,
    token_response,
)
from oauthflows.registration import dynamic
from oauthflows.token.endpoints import DEFAULT_DESCRIPTIONS, REQUEST_ATTRIBUTE_NAMES, TokenView
from oauthflows.token.oauth2 import Server, Validator
from oauthflows.token.openapi import SCHEMAS
from operations.access import GRANT_TYPE_LABELS
from tokens.services import Lineage

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGES = (
    "accounts",
    "config",
    "oauthclients",
    "oauthflows",
    "operations",
    "plumbing",
    "profiles",
    "scopes",
    "signing",
    "tokens",
)
THE_DECLARATION = Path("oauthflows/grants.py")


def _constant(node) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _names_grant_type(node) -> bool:
    """`grant_type`, `params.get("grant_type")`, `x.grant_type`, `params["grant_type"]`."""
    return "grant_type" in ast.unparse(node)


def grants_by_hand(source: str, grant_types=GRANT_TYPES) -> list[int]:
    """The lines of `source` that write a declared grant by hand."""
    declared = set(grant_types)
    lines = []
    for node in ast.walk(ast.parse(source)):
        value = _constant(node)
        if value in declared and ":" in value:
            lines.append(node.lineno)  # a grant type URI: nobody types these but the declaration
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            if len({_constant(item) for item in node.elts} & declared) >= 2:
                lines.append(node.lineno)  # a list of grants
        elif isinstance(node, ast.Dict):
            keys = {_constant(key) for key in node.keys if key is not None}
            if len(keys & declared) >= 2:
                lines.append(node.lineno)  # a table keyed by grants
            for key, item in zip(node.keys, node.values, strict=True):
                if key is not None and _constant(key) == "grant_type" and _constant(item) in declared:
                    lines.append(item.lineno)  # {"grant_type": "authorization_code"}
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_constant(side) in declared for side in sides) and any(map(_names_grant_type, sides)):
                lines.append(node.lineno)  # grant_type == "refresh_token"
    return sorted(set(lines))


def test_no_grant_is_listed_by_hand_outside_the_declaration():
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if "migrations" in relative.parts or relative == THE_DECLARATION:
                continue
            lines = grants_by_hand(path.read_text())
            if lines:
                found[str(relative)] = lines
    assert found == {}, f"grants written by hand outside {THE_DECLARATION}: {found}"
    assert grants_by_hand((ROOT / THE_DECLARATION).read_text()), "the declaration itself names no grant"


def test_the_guard_sees_each_way_of_writing_a_grant_by_hand():
    assert grants_by_hand('X = "urn:ietf:params:oauth:grant-type:jwt-bearer"\n') == [1]
    assert grants_by_hand('GRANT_TYPES = ("authorization_code", "refresh_token")\n') == [1]
    assert grants_by_hand('x = 1\nlabels = {"refresh_token", "authorization_code", "other"}\n') == [2]
    assert grants_by_hand('TABLE = {"authorization_code": 1, "refresh_token": 2}\n') == [1]
    assert grants_by_hand('body = {"grant_type": "refresh_token", "refresh_token": "x"}\n') == [1]
    assert grants_by_hand('if params.get("grant_type") == "authorization_code":\n    pass\n') == [1]
    assert grants_by_hand('if grant_type in ("refresh_token",):\n    pass\n') == []  # one name is no list...
    assert grants_by_hand('if grant_type == "refresh_token":\n    pass\n') == [1]  # ...but a comparison is
    # A refresh token as a parameter or a token type hint is not the grant.
    assert grants_by_hand('hint = "refresh_token"\nvalue = params.get("refresh_token")\n') == []


# --- everything that lists grants reads the declaration ------------------------------------------


def test_the_declared_grants_are_the_four_of_the_spec_and_the_rfcs():
    assert GRANTS == (AUTHORIZATION_CODE, REFRESH_TOKEN, TOKEN_EXCHANGE, JWT_BEARER)
    assert GRANT_TYPES == (
        "authorization_code",
        "refresh_token",
        "urn:ietf:params:oauth:grant-type:token-exchange",
        "urn:ietf:params:oauth:grant-type:jwt-bearer",
    )
    assert len({grant.state for grant in GRANTS}) == len(GRANTS)  # each its own typed state


def test_the_metadata_registration_and_metrics_list_the_declared_grants(settings):
    assert server_metadata()["grant_types_supported"] == list(GRANT_TYPES)
    assert (AUTHORIZATION_CODE.grant_type, REFRESH_TOKEN.grant_type) == dynamic.GRANT_TYPES
    assert set(GRANT_TYPES) <= set(GRANT_TYPE_LABELS)
    assert all(grant.grant_type in DEFAULT_DESCRIPTIONS["unsupported_grant_type"] for grant in GRANTS)


def test_oauthlib_dispatches_exactly_the_declared_grants():
    server = Server(Validator())
    assert set(server._grant_types) == set(GRANT_TYPES)
    assert server._grant_types[AUTHORIZATION_CODE.grant_type] is server.openid_connect_auth
    assert type(server._grant_types[TOKEN_EXCHANGE.grant_type]).__name__ == "TokenExchangeGrant"
    assert type(server._grant_types[JWT_BEARER.grant_type]).__name__ == "JwtBearerGrant"


def test_the_token_endpoint_accepts_each_declared_grants_parameters():
    for grant in GRANTS:
        assert grant.parameters <= TokenView.accepted, grant.grant_type
    # The names it takes although oauthlib's Request answers them as attributes are exactly these:
    # a grant declaring a parameter named like one (`client`, `user`, ...) would let it stand in.
    assert TokenView.accepted & REQUEST_ATTRIBUTE_NAMES == {
        "client_id",
        "client_secret",
        "grant_type",
        "code",
        "redirect_uri",
        "code_verifier",
        "refresh_token",
        "scope",
        "resource",
    }


def test_the_openapi_document_describes_each_grants_request_and_answer():
    mapping = SCHEMAS["TokenRequest"]["discriminator"]["mapping"]
    assert list(mapping) == list(GRANT_TYPES)
    for grant in GRANTS:
        request = SCHEMAS[grant.request_schema[0]]
        assert request["properties"]["grant_type"]["enum"] == [grant.grant_type]
        assert request["required"][0] == "grant_type"
        assert SCHEMAS[grant.response_schema[0]] is grant.response_schema[1]


# --- one answer for every grant --------------------------------------------------------------------

ISSUED = {"access_token": "a", "refresh_token": "r", "token_type": "Bearer", "expires_in": 1800, "scope": "X Y"}


@pytest.mark.parametrize("grant", GRANTS, ids=lambda grant: grant.grant_type)
def test_each_grants_answer_is_its_declared_schema_with_the_spec_token_type(grant, settings):
    # Whatever the oauthlib grant said (oauthlib's BearerToken says "Bearer"), the answer says `bearer`.
    answer = token_response(grant, ISSUED)
    assert answer["token_type"] == TOKEN_TYPE == "bearer"
    jsonschema.validate(answer, grant.response_schema[1])
    assert ("refresh_token" in answer) is grant.issues_refresh_token
    assert answer.get("issued_token_type") == grant.issued_token_type


def test_the_code_grants_answer_carries_the_id_token_when_there_is_one(settings):
    answer = token_response(AUTHORIZATION_CODE, ISSUED | {"id_token": "i"})
    assert answer["id_token"] == "i"
    jsonschema.validate(answer, AUTHORIZATION_CODE.response_schema[1])
    assert "id_token" not in token_response(AUTHORIZATION_CODE, ISSUED)


# --- each grant's typed state ----------------------------------------------------------------------


def test_a_grant_never_reads_another_grants_state():
    request = Request("https://example.invalid/")
    assert grant_state(request, GrantState) is None
    request.grant_state = AssertionState(provider=None, lifetime=60, lineage=Lineage(), auth_time=None)
    assert grant_state(request, ExchangeState) is None and grant_state(request, CodeState) is None
    assert grant_state(request, AssertionState) is request.grant_state


def test_a_parameter_named_like_the_state_is_not_the_state():
    request = Request("https://example.invalid/", body={"grant_state": "forged"})
    assert request.grant_state == "forged"  # oauthlib serves parameters as attributes...
    assert grant_state(request, GrantState) is None  # ...and the typed read ignores it
