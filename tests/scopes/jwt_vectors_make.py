"""Writes scopes/jwt_vectors.json: the JWT test vectors of docs/verifying-tokens.md §7 (a JWKS, a
status list, and signed access tokens valid and broken), with a key made for the occasion and then
dropped. Run it only to change the vectors; tests/scopes/test_jwt_vectors.py checks the file.

    .venv/bin/python -m tests.scopes.jwt_vectors_make
"""

import base64
import json
import zlib
from pathlib import Path

from jwcrypto import jwk, jws

ISSUER = "https://auth.example.com"
RESOURCE = "https://bookings.example.com/v2"
STATUS_URI = ISSUER + "/v2/auth/oauth2/status-lists/0"
IAT, EXP = 1767225600, 4102444800  # 2026-01-01 and 2100-01-01: the vectors do not expire
TARGET = Path(__file__).resolve().parents[2] / "scopes" / "jwt_vectors.json"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _signed(key, header: dict, claims: dict) -> str:
    token = jws.JWS(json.dumps(claims, separators=(",", ":")).encode())
    token.add_signature(key, alg=header["alg"], protected=json.dumps(header))
    return token.serialize(compact=True)


def main() -> None:
    key = jwk.JWK.generate(kty="EC", crv="P-256")
    key = jwk.JWK(**(key.export(as_dict=True) | {"kid": key.thumbprint()}))
    other = jwk.JWK.generate(kty="EC", crv="P-256")
    public = key.export_public(as_dict=True) | {"use": "sig", "alg": "ES256"}
    header = {"alg": "ES256", "kid": key.kid, "typ": "at+jwt"}
    bits = bytearray(2)
    bits[0] |= 1 << 3  # index 3 revoked
    status_list = _signed(
        key,
        {"alg": "ES256", "kid": key.kid, "typ": "statuslist+jwt"},
        {"iss": ISSUER, "sub": STATUS_URI, "iat": IAT, "exp": EXP, "ttl": 300,
         "status_list": {"bits": 1, "lst": _b64(zlib.compress(bytes(bits)))}},
    )  # fmt: skip

    def claims(index: int, **changes) -> dict:
        return {
            "iss": ISSUER, "sub": "42", "aud": RESOURCE, "client_id": "vectors-app", "scope": "BOOKING_READ",
            "jti": f"vector-{index}", "iat": IAT, "exp": EXP, "auth_time": IAT - 10,
            "status": {"status_list": {"idx": index, "uri": STATUS_URI}},
        } | changes  # fmt: skip

    valid = _signed(key, header, claims(1))
    tampered = valid.rsplit(".", 1)[0] + "." + _signed(key, header, claims(2)).rsplit(".", 1)[1]
    cases = [
        {"name": "valid", "token": valid, "active": True, "sub": "42", "scope": "BOOKING_READ"},
        {"name": "revoked: its status list bit is set", "token": _signed(key, header, claims(3)), "active": False},
        {"name": "signature of another token", "token": tampered, "active": False},
        {"name": "signed by a key not in the JWKS", "token": _signed(other, header, claims(4)), "active": False},
        {"name": "another audience", "token": _signed(key, header, claims(5, aud="https://x.test")), "active": False},
        {"name": "another issuer", "token": _signed(key, header, claims(6, iss="https://x.test")), "active": False},
        {"name": "expired", "token": _signed(key, header, claims(7, exp=IAT + 1800)), "active": False},
        {"name": "typ is not at+jwt", "token": _signed(key, header | {"typ": "JWT"}, claims(8)), "active": False},
        {"name": "index beyond its list", "token": _signed(key, header, claims(4000)), "active": False},
    ]  # fmt: skip
    document = {
        "issuer": ISSUER,
        "resource": RESOURCE,
        "jwks": {"keys": [public]},
        "status_lists": {STATUS_URI: status_list},
        "cases": cases,
    }
    TARGET.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
