"""Migrations are named for what they change, never after an issue number (docs/architecture.md).
The one named so before the rule stays: renaming an applied migration would break the history of
every database that has it."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APPLIED_BEFORE_THE_RULE = {"0004_issue13_client_presentation.py"}


def test_no_new_migration_is_named_after_an_issue():
    names = [path.name for path in ROOT.glob("*/migrations/0*.py")]
    assert len(names) >= 10  # positive control: the migrations were found
    offending = [name for name in names if re.search(r"issue|task|_\d+_", name) and name not in APPLIED_BEFORE_THE_RULE]
    assert offending == []


def test_the_rule_catches_an_issue_name():
    assert re.search(r"issue|task|_\d+_", "0011_issue19_keys.py")
