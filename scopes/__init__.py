"""The scheduling API's scopes: the catalog and its rules, and bearer-token checks for DRF services.

Installable on its own (scopes/pyproject.toml, distribution `scheduling-scopes`); it imports no
other package of this repository.
"""

__version__ = "1.0.0"
