"""The login form: allauth's (username or email, ACCOUNT_LOGIN_METHODS), accepting the old field name."""

from allauth.account.forms import LoginForm as AllauthLoginForm
from django.http import QueryDict


class LoginForm(AllauthLoginForm):
    def __init__(self, *args, **kwargs):
        data = kwargs.get("data")
        # The login form's field was `username` before allauth (`login` now); scripts and
        # integrations that post `username` keep working.
        if isinstance(data, QueryDict) and "login" not in data and "username" in data:
            data = data.copy()
            data["login"] = data["username"]
            kwargs["data"] = data
        super().__init__(*args, **kwargs)
