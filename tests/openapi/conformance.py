"""Check a real response (Django test client) against the OpenAPI document served at /v2/schema/."""

import functools

import jsonschema
from django.test import Client

SCHEMA_URL = "/v2/schema/?format=json"


@functools.cache
def openapi() -> dict:
    response = Client().get(SCHEMA_URL)
    assert response.status_code == 200, response.content[:500]
    return response.json()


def operation(method: str, path: str) -> dict:
    paths = openapi()["paths"]
    assert path in paths, f"{path} is not documented"
    assert method.lower() in paths[path], f"{method.upper()} {path} is not documented"
    return paths[path][method.lower()]


def validator(schema: dict) -> jsonschema.Draft7Validator:
    """A JSON Schema validator for one schema of the document; its $refs resolve within the document."""
    return jsonschema.Draft7Validator(
        {"allOf": [schema], "components": openapi()["components"]}, format_checker=jsonschema.FormatChecker()
    )


def resolved(schema: dict) -> dict:
    while "$ref" in schema:
        schema = openapi()["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def undocumented_keys(value, schema: dict, where: str = "body") -> list[str]:
    """Object keys in `value` that no matching schema names (drift the schema does not forbid)."""
    schema = resolved(schema)
    if "oneOf" in schema:
        matching = [branch for branch in schema["oneOf"] if validator(branch).is_valid(value)]
        return undocumented_keys(value, matching[0], where) if matching else []
    if isinstance(value, dict) and "properties" in schema:
        found = [f"{where}.{key}" for key in value if key not in schema["properties"]]
        for key, item in value.items():
            if key in schema["properties"]:
                found += undocumented_keys(item, schema["properties"][key], f"{where}.{key}")
        return found
    return []


def request_schema(method: str, path: str, media_type: str) -> dict:
    content = operation(method, path)["requestBody"]["content"]
    assert media_type in content, f"{media_type} is not a documented request body of {method} {path}"
    return content[media_type]["schema"]


def assert_request_documented(method: str, path: str, media_type: str, body: dict) -> None:
    validator(request_schema(method, path, media_type)).validate(body)


def assert_conforms(method: str, path: str, response) -> None:
    """Status, media type, headers and body of `response` are what the document says."""
    responses = operation(method, path)["responses"]
    status = str(response.status_code)
    assert status in responses, (
        f"{method.upper()} {path} answered {status}, which is not documented: {response.content[:300]!r}"
    )
    documented = responses[status]

    for name, header in documented.get("headers", {}).items():
        if header.get("required"):
            assert response.has_header(name), f"{status}: the documented header {name} is missing"
        if response.has_header(name):
            validator(header["schema"]).validate(response[name])

    content = documented.get("content")
    if not content:
        assert response.content == b"", f"{status} is documented without a body: {response.content[:300]!r}"
        return
    media_type = response["Content-Type"].split(";")[0].strip()
    assert media_type in content, f"{status}: {media_type} is not documented ({', '.join(content)})"
    body = response.json()
    schema = content[media_type]["schema"]
    validator(schema).validate(body)
    assert undocumented_keys(body, schema) == [], f"{status}: keys the schema does not name"
