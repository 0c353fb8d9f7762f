"""``manage.py dynalock``: create, index and inspect the lock table, list, show and release locks, run one-host jobs.

Table data is printed terminal-safe (:func:`~dynalock_django.dynamodb.printable`):
an item cannot hide text or drive the terminal with escape sequences. ``--json`` prints it exactly, as JSON.
"""

from __future__ import annotations

import argparse
import getpass
import json
import math
import os
import shutil
import socket
import sys
from datetime import datetime
from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...client import get_client, wall_now
from ...conf import dynalock_settings
from ...dynamodb import (
    TTL_UNAVAILABLE,
    DynalockError,
    LockNotAcquired,
    PermitHolder,
    TableNotFound,
    TableNotReady,
    printable,
)
from ...key_scope import current_scope, in_current_scope, key_head, scope_path
from ...keys import described_as_read, key_for_model, model_label
from ...leader import EXIT_LEASE_LOST, run_while_leader
from ...live_lock_rows import LockRow, describe_rows, read_counted, read_page
from ...supervised import command_input
from ..command_line import DjangoOption, SubcommandParser, accept_django_options


class Command(BaseCommand):
    help = "Manage the DynamoDB lock table and its locks. `manage.py dynalock SUBCOMMAND --help` for each."

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        self.django_options: list[DjangoOption] = []  # what add_base_argument adds, for the sub-commands too
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_base_argument(self, parser: CommandParser, *args: Any, **kwargs: Any) -> None:
        super().add_base_argument(parser, *args, **kwargs)
        if kwargs.get("action") != "version":
            self.django_options.append((args, kwargs))

    def add_arguments(self, parser: CommandParser) -> None:
        if self.requires_system_checks:  # Django adds it with add_argument, not add_base_argument
            self.django_options.append((("--skip-checks",), {"action": "store_true"}))
        commands = parser.add_subparsers(
            title="sub-commands", dest="subcommand", required=True, parser_class=SubcommandParser
        )

        create = commands.add_parser(
            "createtable", help="Create the lock table (idempotent), wait until ACTIVE, enable TTL where available."
        )
        create.add_argument("--provisioned", nargs=2, type=int, metavar=("READ", "WRITE"), help="Capacity units.")
        create.add_argument("--dry-run", action="store_true", help="Print the CreateTable request; create nothing.")
        create.set_defaults(method=self.createtable)

        index = commands.add_parser(
            "createindex",
            help="Add the live-locks index to a table created without it (idempotent); wait until it is ACTIVE.",
        )
        index.set_defaults(method=self.createindex)
        for waits in (create, index):
            waits.add_argument(
                "--timeout",
                type=_seconds,
                metavar="SECONDS",
                help="Stop waiting after this long (DynamoDB goes on; run it again to wait more). Default: no limit.",
            )

        describe = commands.add_parser("describe", help="Table status, key schema, TTL, item count, settings.")
        describe.set_defaults(method=self.describe)

        listing = commands.add_parser(
            "list", help="Current locks, page by page, from the live-locks index (only held locks are read)."
        )
        listing.add_argument("--model", metavar="APP.MODEL", help="Only locks on rows of this model.")
        listing.add_argument("--all", action="store_true", dest="include_released", help="Released too (a scan).")
        other_clients = "Include locks of clients that keep no live mark, such as the AWS Java lock client (a scan)."
        listing.add_argument("--other-clients", action="store_true", help=other_clients)
        listing.add_argument("--json", action="store_true", dest="as_json", help="One JSON object per line.")
        listing.add_argument("--all-scopes", action="store_true", help=_ALL_SCOPES_HELP)
        listing.add_argument("--page-size", type=int, default=100, help="Items read per DynamoDB request.")
        listing.set_defaults(method=self.list_locks)

        show = commands.add_parser("show", help="One lock: `show KEY` or `show APP.MODEL PK`.")
        show.add_argument("--all-scopes", action="store_true", help=_ALL_SCOPES_HELP)
        show.set_defaults(method=self.show)

        release = commands.add_parser(
            "release", help="Force-release someone else's lock (recorded as yours): `release KEY` or `APP.MODEL PK`."
        )
        release.add_argument("--force", action="store_true", help="Required: you are taking someone's lock away.")
        release.add_argument("--yes", action="store_true", help="Do not ask for confirmation.")
        release.add_argument("--by", default=None, help="Who releases it (default: your login @ this host).")
        release.set_defaults(method=self.release)

        run = commands.add_parser(
            "run",
            help="Run a command only while holding the lease NAME: `dynalock run NAME -- command args`.",
            description=f"Exits with the command's exit code, or {EXIT_LEASE_LOST} if the lease was lost "
            "(the command is then stopped: SIGTERM, then SIGKILL).",
        )
        run.add_argument("name")
        run.add_argument(
            "--timeout", type=_seconds, default=None, help="Seconds to wait for the lease (default: forever)."
        )
        run.add_argument(
            "--grace-period", type=_seconds, default=10.0, help="Seconds between SIGTERM and SIGKILL (default 10)."
        )
        min_hold = "Keep the lease (no longer renewed) until SECONDS after it was granted, and exit then: hosts "
        run.add_argument(
            "--min-hold", type=_min_hold, metavar="SECONDS", help=min_hold + "starting a slot run it once."
        )
        run.add_argument("command", nargs="+", help="The command (after --).")
        run.set_defaults(method=self.run)
        for one_lock in (show, release):
            one_lock.add_argument("key", metavar="KEY | APP.MODEL", help="A lock's key, or a model's label.")
            one_lock.add_argument("pk", nargs="?", metavar="PK", help="After APP.MODEL: the row's primary key.")
        for subparser in commands.choices.values():
            accept_django_options(subparser, self.django_options)

    def handle(self, *args: Any, method: Any, **options: Any) -> None:
        try:
            method(**options)
        except TableNotFound as error:
            raise CommandError(f"{error} Run: python manage.py dynalock createtable") from error
        except TableNotReady as error:
            raise CommandError(
                f"{error} Run the command again to wait longer; python manage.py dynalock describe shows its status."
            ) from error
        except DynalockError as error:
            raise CommandError(str(error)) from error

    # ------------------------------------------------------------------ sub-commands

    def createtable(self, *, provisioned: list[int] | None, dry_run: bool, timeout: float | None, **_: Any) -> None:
        client = get_client()
        capacity = (provisioned[0], provisioned[1]) if provisioned else None
        if dry_run:
            self.stdout.write(json.dumps(client.create_table_request(provisioned=capacity), indent=2))
            return
        description = client.create_table(provisioned=capacity, on_progress=self.stdout.write, timeout=timeout)
        if description.ttl_status == TTL_UNAVAILABLE:
            self.stderr.write(
                self.style.WARNING(
                    "This endpoint has no TTL API: expired lock items will not be cleaned up there "
                    "(locks work all the same; on AWS, TTL is always available)."
                )
            )
        index = description.live_index_status or "none: this endpoint made the table without it"
        self.stdout.write(
            self.style.SUCCESS(
                f"Table {description.name!r} is ready (TTL {description.ttl_status}, live-locks index {index})."
            )
        )

    def describe(self, **_: Any) -> None:
        client = get_client()
        table = client.describe_table()
        rows = [
            ("table", table.name),
            ("status", table.status),
            ("partition key", _key(table.partition_key)),
            ("sort key", _key(table.sort_key)),
            ("billing", table.billing_mode),
            ("TTL", f"{table.ttl_status} on {table.ttl_attribute}" if table.ttl_attribute else table.ttl_status),
            ("live-locks index", table.live_index_status or "none (listings scan the table; run createindex)"),
            ("items (approximate)", str(table.item_count)),
            ("endpoint", dynalock_settings.ENDPOINT_URL or "AWS"),
            ("region", client.dynamodb.meta.region_name),
            ("lease / heartbeat", f"{client.lease_duration:g}s / {client.heartbeat_period:g}s"),
            ("owner name", client.owner_name),
        ]
        rows += [("problem", problem) for problem in table.problems]
        width = max(len(label) for label, _ in rows)
        for label, value in rows:
            self.stdout.write(f"{label.ljust(width)}  {printable(value)}")

    def createindex(self, *, timeout: float | None, **_: Any) -> None:
        description = get_client().create_index(on_progress=self.stdout.write, timeout=timeout)
        self.stdout.write(self.style.SUCCESS(f"Table {description.name!r}: the live-locks index is ready."))

    def list_locks(
        self,
        *,
        model: str | None,
        include_released: bool,
        other_clients: bool,
        as_json: bool,
        page_size: int,
        all_scopes: bool,
        **_: Any,
    ) -> None:
        scoped = scope_path() is not None and not all_scopes
        prefix = key_head() if scoped else None
        if model:
            prefix = f"{key_head() if scoped else dynalock_settings.KEY_PREFIX}{model_label(_model(model))}:"
        client = get_client()
        if not as_json:
            self.stdout.write("  ".join(("KEY", "OBJECT", "HOLDER", "AGE", "LEASE", "TOKEN", "STATE")))
        count, cursor = 0, None
        while True:  # printed page by page as DynamoDB returns them: never the whole table in memory
            page = read_page(
                client,
                cursor=cursor,
                page_size=page_size,
                key_prefix=prefix,
                include_released=include_released,
                other_clients=other_clients,
            )
            locks = [lock for lock in page.locks if not scoped or in_current_scope(lock.key)]
            for row in describe_rows(locks):  # one query per model on the page for the objects
                described = _as_dict(row)
                if as_json:
                    self.stdout.write(json.dumps(described))
                else:
                    cells = ("key", "object", "holder", "age", "lease", "token", "state")
                    self.stdout.write("  ".join(printable(described[cell] or "-") for cell in cells))
                count += 1
            cursor = page.cursor
            if cursor is None:
                break
        if not as_json:
            self.stdout.write(f"{count} lock(s)")

    def show(self, *, key: str, pk: str | None, all_scopes: bool, **_: Any) -> None:
        key = _lock_key(key, pk)
        if scope_path() is not None and not all_scopes and not in_current_scope(key):
            raise CommandError(
                f"Key {key!r} is not of the current KEY_SCOPE ({current_scope() or 'none'}): add --all-scopes to "
                "show it, or run the command in its tenant."
            )
        lock = get_client().get(key)
        counted = read_counted(get_client(), key)
        if lock is None and not counted.permits and not counted.readers:
            raise CommandError(f"No lock item for key {key!r}, and no permit or reader of it in use.")
        if lock is not None:
            for name, value in _as_dict(describe_rows([lock])[0]).items():
                self.stdout.write(f"{name:>10}  {_for_people(value)}")
        if counted.permits:
            self.stdout.write(f"{'semaphore':>10}  {printable(counted.occupancy())}")
            self._show_holders("permit", counted.permits)
        if counted.readers:
            self.stdout.write(f"{'readers':>10}  {len(counted.readers)}")
            self._show_holders("reader", counted.readers)

    def _show_holders(self, label: str, holders: list[PermitHolder]) -> None:
        """One line per permit in use: its index, holder, age, lease, token and state."""
        rows = describe_rows([holder.lock for holder in holders])
        for holder, row in zip(holders, rows, strict=True):
            described = _as_dict(row)
            cells = [described[name] for name in ("holder", "age", "lease", "token", "state")]
            self.stdout.write(f"{f'{label} {holder.permit}':>10}  {'  '.join(_for_people(cell) for cell in cells)}")

    def release(self, *, key: str, pk: str | None, force: bool, yes: bool, by: str | None, **_: Any) -> None:
        key = _lock_key(key, pk)
        if not force:
            raise CommandError("release takes a lock away from its holder: add --force if that is what you want.")
        client = get_client()
        lock = client.get(key)
        if lock is None or lock.is_released:
            raise CommandError(f"Lock {key!r} is not held; nothing to release.")
        described = _as_dict(describe_rows([lock])[0])
        if not yes:
            try:
                answer = input(
                    f"Release {key!r}, held by {printable(described['holder'])} for {described['age']}? [y/N] "
                )
            except EOFError as error:  # no terminal (cron, a pipe, </dev/null): nobody to ask
                raise CommandError(
                    "Nobody can answer the question here: add --yes to release without asking."
                ) from error
            if answer.strip().lower() not in {"y", "yes"}:
                raise CommandError("Not released.")
        released_by = by or f"{getpass.getuser()}@{socket.gethostname()} (manage.py dynalock)"
        try:
            client.force_release(lock, released_by=released_by, described=described_as_read(lock.key))
        except LockNotAcquired as error:
            raise CommandError(f"{error} Run the command again to release the new holding.") from error
        self.stdout.write(self.style.SUCCESS(f"Released {key!r} (was held by {printable(described['holder'])})."))

    def run(
        self,
        *,
        name: str,
        command: list[str],
        timeout: float | None,
        grace_period: float,
        min_hold: float | None,
        **_: Any,
    ) -> None:
        if shutil.which(command[0]) is None:  # before taking the lease, for nothing
            raise CommandError(f"Cannot run {printable(command[0])!r}: {_not_runnable(command[0])}.", returncode=2)
        if command_input() is not None:
            self.stderr.write(
                "dynalock run: the command's input is /dev/null, not this terminal: it runs in a process "
                "group of its own, which the terminal would stop if it read from it. Pipe its input in instead."
            )
        try:
            code = run_while_leader(name, command, timeout=timeout, grace_period=grace_period, min_hold=min_hold)
        except (FileNotFoundError, PermissionError) as error:  # gone between the check and the start
            raise CommandError(f"Cannot run {printable(command[0])!r}: {error.strerror}.", returncode=2) from error
        if code == EXIT_LEASE_LOST:
            self.stderr.write(f"Lease {name!r} was lost: the command was stopped.")
        sys.exit(code)


_ALL_SCOPES_HELP = "Every KEY_SCOPE's locks, not only the current scope's (with KEY_SCOPE: a tenant's)."


def _seconds(text: str) -> float:
    """A time option: a finite number of seconds, 0 or more.

    Refused at parsing, with the option's name: for ``--grace-period`` nan and -1 meant an immediate
    SIGKILL and inf never one; for a ``--timeout`` nan waited for ever.
    """
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a finite number of seconds, 0 or more")
    return seconds


def _min_hold(text: str) -> float:
    """``--min-hold``: a finite number of seconds, more than 0."""
    seconds = _seconds(text)
    if seconds == 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds more than 0")
    return seconds


def _not_runnable(program: str) -> str:
    if os.sep in program:
        return "no such file" if not os.path.exists(program) else "not an executable file"
    return "not found on PATH"


def _lock_key(key_or_model: str, pk: str | None) -> str:
    """The lock's key from ``KEY``, or from ``APP.MODEL PK`` as ``lock_object`` makes it."""
    return key_or_model if pk is None else key_for_model(_model(key_or_model), pk)


def _model(label: str) -> Any:
    try:
        return apps.get_model(label)
    except (LookupError, ValueError) as error:
        raise CommandError(f"Unknown model {label!r}: use app_label.ModelName, e.g. desk.customer.") from error


def _for_people(value: Any) -> str:
    """A value of ``show`` as a person reads it: "-" for none, a list joined, no Python reprs."""
    if value is None or value == "":
        return "-"
    if isinstance(value, list | tuple):
        return "; ".join(printable(str(item)) for item in value) or "none"
    return printable(str(value))


def _key(key: tuple[str, str] | None) -> str:
    return f"{key[0]} ({key[1]})" if key else "none"


def _as_dict(row: LockRow) -> dict[str, Any]:
    lock = row.lock
    return {
        "key": lock.key,
        "scope": row.parsed.scope,
        "object": row.object_label or row.parsed.label,
        "holder": row.holder,
        "owner": lock.owner_name,
        "purpose": row.data.purpose if row.data else "",
        "age": _age(lock.acquired_at),
        "lease": f"{lock.lease_duration:g}s",
        "token": lock.fencing_token,
        "state": row.state,
        "released_by": lock.released_by,
        "problems": list(lock.problems),
    }


def _age(since: datetime | None) -> str:
    if since is None:
        return "?"
    seconds = max(0, int((wall_now() - since).total_seconds()))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02}s"
