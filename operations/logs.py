"""JSON lines for a log pipeline (LOG_FORMAT=json): one object per record, with the time, level,
logger, message, the request id, and whatever the record carries in `extra` (the access line's
fields). Built on python-json-logger. Credentials are redacted before any formatter runs
(plumbing.logfilters.RedactCredentials on the handler), so JSON shows what text would.

Imported by the logging configuration, before the apps are ready: nothing here touches models.
"""

import time

from pythonjsonlogger.json import JsonFormatter

# What a record's `extra` may add: plain values. Anything else is left out, because its repr is not
# ours to vouch for: Django logs every 4xx/5xx with extra={"request": request}, and a request's repr
# shows its query string (where a careless client puts its secret).
PLAIN = (str, int, float, bool, type(None))


class JsonLines(JsonFormatter):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("rename_fields", {"asctime": "time", "levelname": "level", "name": "logger"})
        kwargs.setdefault("timestamp", False)
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s", *args, **kwargs)

    # (second, its text): logging's formatTime makes the same "2026-11-26 02:36:55" for every line of
    # a second, from localtime and strftime; the access line is written on every request, so each
    # second's text is made once. One tuple, replaced whole: threads read a matching pair.
    _second = (None, "")

    def formatTime(self, record, datefmt=None) -> str:  # noqa: N802 - logging.Formatter's name
        if datefmt:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        cached = self._second
        if cached[0] != second:
            cached = (second, time.strftime(self.default_time_format, self.converter(record.created)))
            self._second = cached
        return self.default_msec_format % (cached[1], record.msecs)

    def add_fields(self, log_record, record, message_dict) -> None:
        super().add_fields(log_record, record, message_dict)
        for key in [key for key, value in log_record.items() if not isinstance(value, PLAIN)]:
            del log_record[key]
