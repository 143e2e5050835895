"""`manage.py cleartokens_expired`: remove expired codes and dead tokens (tokens.cleanup), for cron."""

import json
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError

from tokens.cleanup import DEFAULT_BATCH_SIZE, expired_tokens_delete, refresh_token_lifetime


class Command(BaseCommand):
    help = (
        "Delete expired authorization codes, expired access tokens whose refresh token is revoked or "
        "gone, and refresh tokens revoked long ago or past their lifetime, in batches. Prints the "
        "counts as JSON. Never deletes what a live refresh token still needs."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--batch-size",
            type=int,
            default=DEFAULT_BATCH_SIZE,
            help=f"Rows per DELETE transaction (default {DEFAULT_BATCH_SIZE}).",
        )
        parser.add_argument(
            "--revoked-days",
            type=int,
            default=None,
            help=(
                "Keep revoked refresh tokens this many days, so that a replay still revokes its family "
                f"(default: the refresh token lifetime, {refresh_token_lifetime().days} days)."
            ),
        )

    def handle(self, *args, batch_size: int, revoked_days: int | None, **options):
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1.")
        if revoked_days is not None and revoked_days < 0:
            raise CommandError("--revoked-days cannot be negative.")
        deleted = expired_tokens_delete(
            revoked_retention=None if revoked_days is None else timedelta(days=revoked_days),
            batch_size=batch_size,
        )
        self.stdout.write(json.dumps(deleted.as_dict()))
