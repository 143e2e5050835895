"""django-oauth-toolkit scopes backend backed by the catalog and each client's own scopes."""

from oauth2_provider.scopes import BaseScopes

from scopes.catalog import OPENID_SCOPES, SCOPE_NAMES, SCOPES


class CatalogScopes(BaseScopes):
    def get_all_scopes(self):
        return {name: scope.description for name, scope in SCOPES.items()} | OPENID_SCOPES

    def get_available_scopes(self, application=None, request=None, *args, **kwargs):
        # The OpenID Connect scopes are every client's to ask for; they are not API scopes and are
        # not enabled per client (docs/openid-connect.md).
        # A legacy client predates scopes: any known name may be asked for (spec §5.8 step a).
        if application is None or application.is_legacy:
            return [*SCOPE_NAMES, *OPENID_SCOPES]
        return [*application.scope_list, *OPENID_SCOPES]

    def get_default_scopes(self, application=None, request=None, *args, **kwargs):
        # No implicit scopes: a scoped client must ask for what it wants (spec §4.1).
        return []
