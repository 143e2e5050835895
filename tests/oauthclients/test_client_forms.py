"""How the developer forms carry the services' errors to the page."""

from django.core.exceptions import ValidationError

from oauthclients.exceptions import InvalidTransition
from oauthclients.forms import ClientCreateForm
from tests.oauthclients.pages import registration_data


def _valid_form() -> ClientCreateForm:
    form = ClientCreateForm(registration_data())
    assert form.is_valid(), form.errors
    return form


def test_service_errors_land_on_the_field_they_name():
    form = _valid_form()

    form.add_service_errors(ValidationError({"client_type": "Kind must be one of: confidential, public.", "name": "x"}))

    assert form.errors["kind"] == ["Kind must be one of: confidential, public."]
    assert form.errors["name"] == ["x"]


def test_errors_on_fields_the_form_lacks_and_domain_errors_go_to_the_whole_form():
    form = _valid_form()

    form.add_service_errors(ValidationError({"reason": "Not a field here."}))
    form.add_service_errors(InvalidTransition("Not from this state."))

    assert form.non_field_errors() == ["Not a field here.", "Not from this state."]


def test_a_posted_is_legacy_never_reaches_the_service():
    form = ClientCreateForm(registration_data(is_legacy="on"))

    assert form.is_valid()
    assert "is_legacy" not in form.service_arguments()
    assert form.service_arguments()["redirect_uris"] == [
        "https://mirror.example.com/callback",
        "http://127.0.0.1:8765/callback",
    ]
