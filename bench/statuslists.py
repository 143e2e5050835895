"""Token status lists at a million live JWTs: `python -m bench.statuslists --seed F --out G` (run by
bench/run.py with the project's environment, before scenario 7).

Makes the lists a million live JWT access tokens fill (OAUTH_STATUS_LIST_SIZE bits each, 1 % of
the bits set at random: revoked tokens), adds their numbers to the seed file for scenario 7's load,
and measures in this process what a revocation costs the authorization server: deleting a live JWT's
row, whose bit the database's trigger sets in the same statement (signing.statuslist), and
serving the list again (status_list_token: its revocations read, zlib and the signature), each on a
list of the configured size and on one list of a million bits. Writes {what: {p50_ms, max_ms, ...}}
to --out.
"""

import argparse
import json
import os
import random
import time

import django

LIVE_JWTS = 1_000_000
REVOKED_SHARE = 0.01
SAMPLES = 200
FIRST_LIST = 100_000  # far from the lists the bench's own tokens fill


def _percentiles(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {
        "p50_ms": ordered[len(ordered) // 2] * 1000,
        "max_ms": ordered[-1] * 1000,
        "samples": len(ordered),
    }


def _lists(first: int, count: int, size: int) -> list[int]:
    from signing.models import StatusList, StatusRevocation

    numbers = list(range(first, first + count))
    StatusList.objects.bulk_create([StatusList(number=number, size=size) for number in numbers])
    for number in numbers:
        StatusRevocation.objects.bulk_create(
            [
                StatusRevocation(status_list=number, index=index)
                for index in random.sample(range(size), int(size * REVOKED_SHARE))
            ],
            batch_size=5000,
        )
    return numbers


def _live_rows(numbers: list[int], size: int) -> list[tuple[int, int]]:
    """SAMPLES live JWTs' rows at random places of these lists (not revoked ones): the revocations."""
    import secrets
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from oauthclients.models import AccessToken, digest
    from oauthclients.services import resource_server_create
    from signing.models import StatusRevocation

    user = get_user_model().objects.create_user(f"status-bench-{secrets.token_hex(4)}")
    client = resource_server_create(owner=user, name=f"Status bench {user.username}", actor=user).client
    taken = set(StatusRevocation.objects.filter(status_list__in=numbers).values_list("status_list", "index"))
    places = set()
    while len(places) < SAMPLES:
        place = (random.choice(numbers), random.randrange(size))
        if place not in taken:
            places.add(place)
    expires = timezone.now() + timedelta(hours=1)
    rows = AccessToken.objects.bulk_create(
        [
            AccessToken(
                user=user,
                application=client,
                token_checksum=digest(secrets.token_urlsafe(32)),
                scope="PROFILE_READ",
                expires=expires,
                status_list=number,
                status_index=index,
            )
            for number, index in places
        ]
    )
    return [(row.pk, row.status_list) for row in rows]


def _regeneration(numbers: list[int], size: int) -> dict:
    """One revocation, then the next fetch of its list: the DELETE (and its trigger's INSERT), then
    the list signed again."""
    from oauthclients.models import AccessToken
    from signing.statuslist import status_list_token

    setting, signing, sizes = [], [], []
    for pk, number in _live_rows(numbers, size):
        started = time.perf_counter()
        AccessToken.objects.filter(pk=pk)._raw_delete(AccessToken.objects.db)
        set_at = time.perf_counter()
        token = status_list_token(number)
        done = time.perf_counter()
        setting.append(set_at - started)
        signing.append(done - set_at)
        sizes.append(len(token))
    return {
        "bit_set": _percentiles(setting),
        "signed_again": _percentiles(signing),
        "list_bits": size,
        "signed_bytes": max(sizes),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    django.setup()
    from signing.statuslist import list_size

    size = list_size()
    count = -(-LIVE_JWTS // size)
    numbers = _lists(FIRST_LIST, count, size)
    big = _lists(FIRST_LIST + count, 1, 1 << 20)
    results = {
        "live_jwts": LIVE_JWTS,
        "lists": count,
        "revoked_share": REVOKED_SHARE,
        "per_list": _regeneration(numbers, size),
        "one_list_of_a_million": _regeneration(big, 1 << 20),
    }
    with open(args.seed) as fh:
        seed = json.load(fh)
    seed["status_lists"] = numbers
    tmp = args.seed + ".tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as fh:
        json.dump(seed, fh)
    os.replace(tmp, args.seed)
    with open(args.out, "w") as fh:
        json.dump(results, fh)


if __name__ == "__main__":
    main()
