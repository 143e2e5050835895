"""The integration guide as the developer pages show it: docs/integrating.md rendered from Markdown.

Rendering, not a read of the registry (so not a selector): the guide is written once, in Markdown,
for readers of the repository and of these pages alike.

In another language, the guide is that language's own Markdown file beside it
(docs/integrating.<language>.md, e.g. integrating.de.md), translated whole; a language without one
shows the English guide, marked as English (docs/languages.md). A translation's introduction
holds the translation of GUIDE_INTRO (the catalogue's), which is replaced as the English one is.
"""

import itertools
import re
from urllib.parse import quote

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext, gettext_noop
from markdown_it import MarkdownIt

from oauthclients.models import OAuthClient

GUIDE_ISSUER = "https://auth.example.com"
GUIDE_REDIRECT_URI = "https://app.example.com/callback"
# The introduction's sentence on the example addresses, replaced in every copy the pages show
# (marked for the catalogue: a translated guide holds its translation).
GUIDE_INTRO = gettext_noop(
    "It uses `https://auth.example.com` for the server (`OAUTH_ISSUER`); against a local\n"
    "`make run`, that is `http://localhost:8000`."
)


def guide_language() -> str:
    """The language the guide is shown in: the page's, when docs/ has the guide in it; else English."""
    language = translation.get_language() or settings.LANGUAGE_CODE
    return language if _guide_path(language).is_file() else settings.LANGUAGE_CODE


def _guide_path(language: str):
    docs = settings.BASE_DIR / "docs"
    if language == settings.LANGUAGE_CODE:
        return docs / "integrating.md"
    # Django's code as a file name: integrating.de.md, integrating.pt-br.md, integrating.zh-hans.md.
    return docs / f"integrating.{language.lower()}.md"


def integration_guide_render(*, issuer: str | None = None, client: OAuthClient | None = None) -> str:
    """docs/integrating.md (or its translation, guide_language) rendered from Markdown to HTML
    (CommonMark with tables; raw HTML in the file is escaped), with this server's URLs in place of
    the guide's example host and, given the developer's own client, its client_id and first
    redirect URI in place of the placeholders (as GitHub and Slack do)."""
    language = guide_language()
    text = _guide_path(language).read_text(encoding="utf-8")
    issuer = issuer or settings.OAUTH_ISSUER
    with translation.override(language):
        # Translators: replaces the guide's introduction sentence about its example addresses.
        shown = gettext("This copy shows this server's own address, `%(issuer)s`") % {"issuer": issuer}
        if client:
            shown += gettext(", and the values of your client “%(name)s”.") % {"name": client.name}
        else:
            shown += "."
        intro = gettext(GUIDE_INTRO)
    text = text.replace(intro, shown)
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
        lambda _match: '<div class="scroll" tabindex="0" role="region" aria-label="{}"><table>'.format(
            # Translators: how a screen reader names the guide's Nth table (a region that scrolls on a phone).
            gettext("Table %(number)s") % {"number": next(numbers)}
        ),
        html,
    )
    return html.replace("</table>", "</table></div>")
