"""What the server publishes for anyone to fetch: its metadata, OpenID discovery, the JWKS, the
token status lists."""
