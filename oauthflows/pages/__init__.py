"""The browser's pages: the authorization request and its consent page (Allow, Deny), Connected
apps, RP-initiated logout."""
