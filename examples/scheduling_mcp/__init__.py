"""An example MCP server for agents, protected by `scopes` (docs/agents.md).

`.venv/bin/python -m examples.scheduling_mcp --port 8931` serves the Model Context Protocol's
streamable HTTP transport at http://127.0.0.1:8931/mcp with two tools, `whoami` (PROFILE_READ) and
`list_bookings` (BOOKING_READ). Tokens are verified by introspection at the authorization server
(scopes.introspection), bound to this server's resource URI (RFC 8707), and scoped per tool by the
same rules as every other service (scopes.catalog). Its RFC 9728 metadata lists only the scopes its
tools need, so an agent asks for nothing more.
"""
