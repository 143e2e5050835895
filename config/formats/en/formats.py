"""English dates as these pages have always shown them (15 Jan 2026, 13:30); every other language
keeps Django's own formats for it (FORMAT_MODULE_PATH, docs/languages.md)."""

DATETIME_FORMAT = "j M Y, H:i"
SHORT_DATE_FORMAT = "Y-m-d"
