"""`python -m examples.scheduling_mcp --port N [--host H]`: run the example MCP server (uvicorn).

Its resource URI is http://H:N/mcp unless OAUTH_RESOURCE_URI says otherwise; the resource server
whose credentials it uses must be registered with that URI (docs/agents.md, "Run the example MCP
server").
"""

import argparse
import os
import sys


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m examples.scheduling_mcp", description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8931, help="Port to listen on (default 8931).")
    parser.add_argument("--host", default="127.0.0.1", help="Address to listen on (default 127.0.0.1).")
    args = parser.parse_args(argv)
    shown_host = f"[{args.host}]" if ":" in args.host else args.host
    os.environ.setdefault("OAUTH_RESOURCE_URI", f"http://{shown_host}:{args.port}/mcp")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "examples.scheduling_mcp.settings")

    try:
        import mcp  # noqa: F401
        import uvicorn
    except ImportError:
        sys.exit("The MCP SDK is not installed: run `make test` once, or .venv/bin/pip install '.[test]'.")
    import django
    from django.conf import settings

    django.setup()
    missing = [
        name for name in ("OAUTH_RESOURCE_SERVER_ID", "OAUTH_RESOURCE_SERVER_SECRET") if not getattr(settings, name)
    ]
    if missing:
        sys.exit(
            f"{' and '.join(missing)} must be set: create a resource server on the authorization server with\n"
            f"  manage.py oauthclient create --resource-server --owner ADMIN --name 'Scheduling MCP' "
            f"--resource-uri {settings.OAUTH_RESOURCE_URI}\n"
            "and export its client_id and client_secret as OAUTH_RESOURCE_SERVER_ID and OAUTH_RESOURCE_SERVER_SECRET."
        )
    from examples.scheduling_mcp.server import application

    print(f"MCP server: {settings.OAUTH_RESOURCE_URI} (tokens from {settings.OAUTH_ISSUER})", flush=True)
    uvicorn.run(application(args.host), host=args.host, port=args.port, log_level="info")


if __name__ == "__main__":
    main()
