"""allauth's login stages as ours (accounts.adapter.AccountAdapter.get_login_stages).

ACCOUNT_EMAIL_VERIFICATION is "mandatory": allauth's enumeration prevention needs it to answer a
sign-up alike whether the address has an account or not (docs/accounts.md, "Sign-up"). What it
makes mandatory here is narrower than allauth's: an account made at the sign-up page
(accounts.models.SelfSignup) signs in only once it has proved an address; every other account (made
by an administrator, `createsuperuser`, `seed_demo`, an identity provider) signs in as it did,
proved address or not, and is sent a link at sign-up as with "optional". A sign-up that names an
address with an account already (allauth's Login without a user) stays mandatory: the same page,
and a mail to the address's owner instead of a new account.
"""

from allauth.account import app_settings
from allauth.account.stages import EmailVerificationStage as AllauthEmailVerificationStage

from accounts.selectors import self_signup_must_verify


class EmailVerificationStage(AllauthEmailVerificationStage):
    def handle(self):
        login = self.login
        if (
            login.email_verification == app_settings.EmailVerificationMethod.MANDATORY
            and login.user is not None
            and not self_signup_must_verify(user=login.user)
        ):
            login.email_verification = app_settings.EmailVerificationMethod.OPTIONAL
        return super().handle()
