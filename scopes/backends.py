"""django-oauth-toolkit scopes backend backed by the catalog and each client's own scopes."""

from oauth2_provider.scopes import BaseScopes

from scopes.catalog import SCOPE_NAMES, SCOPES


class CatalogScopes(BaseScopes):
    def get_all_scopes(self):
        return {name: scope.description for name, scope in SCOPES.items()}

    def get_available_scopes(self, application=None, request=None, *args, **kwargs):
        # A legacy client predates scopes: any known name may be asked for (spec §5.8 step a).
        if application is None or application.is_legacy:
            return list(SCOPE_NAMES)
        return application.scope_list

    def get_default_scopes(self, application=None, request=None, *args, **kwargs):
        # No implicit scopes: a scoped client must ask for what it wants (spec §4.1).
        return []
