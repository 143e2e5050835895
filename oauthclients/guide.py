"""The integration guide as the developer pages show it: docs/integrating.md rendered from Markdown.

Rendering, not a read of the registry (so not a selector): the guide is written once, in Markdown,
for readers of the repository and of these pages alike.
"""

import itertools
import re
from urllib.parse import quote

from django.conf import settings
from markdown_it import MarkdownIt

from oauthclients.models import OAuthClient

GUIDE_ISSUER = "https://auth.example.com"
GUIDE_REDIRECT_URI = "https://app.example.com/callback"
GUIDE_INTRO = (
    "It uses `https://auth.example.com` for the server (`OAUTH_ISSUER`); against a local\n"
    "`make run`, that is `http://localhost:8000`."
)


def integration_guide_render(*, issuer: str | None = None, client: OAuthClient | None = None) -> str:
    """docs/integrating.md rendered from Markdown to HTML (CommonMark with tables; raw HTML in the
    file is escaped), with this server's URLs in place of the guide's example host and, given the
    developer's own client, its client_id and first redirect URI in place of the placeholders (as
    GitHub and Slack do)."""
    text = (settings.BASE_DIR / "docs" / "integrating.md").read_text(encoding="utf-8")
    issuer = issuer or settings.OAUTH_ISSUER
    shown = f"This copy shows this server's own address, `{issuer}`"
    text = text.replace(GUIDE_INTRO, shown + (f", and the values of your client “{client.name}”." if client else "."))
    text = text.replace(quote(GUIDE_ISSUER, safe=""), quote(issuer, safe="")).replace(GUIDE_ISSUER, issuer)
    if client is not None:
        text = text.replace("client_id=CLIENT_ID", f"client_id={client.client_id}")
        text = text.replace("$CLIENT_ID", client.client_id)
        if client.redirect_uri_list:
            text = text.replace(GUIDE_REDIRECT_URI, client.redirect_uri_list[0])
    html = MarkdownIt("commonmark", {"html": False}).enable("table").render(text)
    # Accessible as a page: a wide code block can be scrolled from the keyboard, and an empty
    # header cell (a table whose first column has no title) is a plain cell.
    html = html.replace("<pre>", '<pre tabindex="0">').replace("<th></th>", "<td></td>")
    # A wide table scrolls in its own keyboard-reachable region on a phone.
    numbers = itertools.count(1)
    html = re.sub(
        "<table>",
        lambda _match: f'<div class="scroll" tabindex="0" role="region" aria-label="Table {next(numbers)}"><table>',
        html,
    )
    return html.replace("</table>", "</table></div>")
