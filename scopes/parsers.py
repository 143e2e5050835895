"""Request parsers for /v2 resource endpoints."""

import re

from rest_framework import parsers
from rest_framework.exceptions import ParseError

# JSON's "\ud800" escapes spell lone UTF-16 surrogates, which no UTF-8 encoder takes (the
# database, the renderer echoing a refused value): a 500. The OAuth endpoints' rule is
# plumbing.requestparams.unicode_scalars_only; scopes ships alone, so it keeps its own copy.
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _holds_a_surrogate(value) -> bool:
    stack = [value]  # iterative: a value as deep as the decoder allows cannot exhaust the stack
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, except that a body nested too deeply for the decoder, or holding a lone
    UTF-16 surrogate, is a 400, not a 500."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body is nested too deeply.") from None
        if _holds_a_surrogate(data):
            raise ParseError("JSON parse error - a lone UTF-16 surrogate is not a Unicode character.")
        return data
