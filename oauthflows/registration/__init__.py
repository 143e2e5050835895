"""Clients that register themselves: RFC 7591 registration and RFC 7592 management (`dynamic`),
client ID metadata documents (`cimd`)."""
