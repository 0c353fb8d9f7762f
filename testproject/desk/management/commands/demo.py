"""``manage.py demo``: the support desk on an embedded local DynamoDB endpoint, no AWS account needed.

Starts the endpoint (one request at a time, so conditional writes are
atomic), migrates, creates the lock table, seeds customers and staff users,
and serves the site until Ctrl-C; then stops the endpoint.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import sys
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dynalock_django.client import close_client, get_client
from dynalock_django.dynamodb import LocalDynamoDB

from ...models import Address, Customer, Note

CUSTOMERS = [
    ("Acme Corporation", "ops@acme.example", "enterprise", "1 Road Runner Way", "Phoenix"),
    ("Globex", "it@globex.example", "pro", "42 Cypress Creek", "Springfield"),
    ("Initech", "help@initech.example", "pro", "4120 Freidrich Lane", "Austin"),
    ("Umbrella Ltd", "contact@umbrella.example", "free", "7 Raccoon Street", "Raccoon City"),
    # A duplicate of the first, entered later, for the admin's "Merge the two selected customers".
    ("ACME Corp.", "", "enterprise", "1 Road Runner Way, Suite 2", "Phoenix"),
]
# (username, password, may force-release other people's locks)
STAFF = [("alice", "alice-demo", False), ("bob", "bob-demo", False), ("carol", "carol-demo", True)]


class Command(BaseCommand):
    help = "Run the support-desk demo on an embedded local DynamoDB endpoint."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8000, help="Port of the web site (default 8000).")
        parser.add_argument("--dynamodb-port", type=int, default=None, help="Port of the local DynamoDB endpoint.")
        parser.add_argument("--no-serve", action="store_true", help="Set everything up, then stop (for scripts).")

    def handle(self, *args: Any, port: int, dynamodb_port: int | None, no_serve: bool, **options: Any) -> None:
        if not no_serve:
            # Before anything starts: runserver leaves with os._exit() when its port is taken, which would skip
            # stopping the endpoint, and say nothing about choosing another port.
            _check_port_free(port)
        # A plain `kill` must also stop the endpoint: turn SIGTERM into SystemExit so `with` cleans up.
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
        # moto accepts any credentials; boto3 only needs some to sign requests.
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "demo")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "demo")
        with LocalDynamoDB(dynamodb_port) as endpoint_url:
            self.stdout.write(f"Local DynamoDB endpoint: {endpoint_url}")
            settings.DYNALOCK = {**settings.DYNALOCK, "ENDPOINT_URL": endpoint_url}
            close_client()
            call_command("migrate", verbosity=0)
            get_client().create_table(on_progress=self.stdout.write)
            self.seed()
            self.stdout.write(self.style.SUCCESS("Staff users (username / password):"))
            for username, password, _ in STAFF:
                self.stdout.write(f"  {username} / {password}")
            if no_serve:
                return
            self.stdout.write(self.style.SUCCESS(f"Open http://127.0.0.1:{port}/ (Ctrl-C stops the demo)"))
            try:
                call_command("runserver", f"127.0.0.1:{port}", use_reloader=False)
            finally:
                close_client()

    def seed(self) -> None:
        desk_permissions = Permission.objects.filter(content_type__app_label__in=["desk", "dynalock_django"])
        staff = []
        for username, password, superuser in STAFF:
            user, _ = User.objects.get_or_create(username=username, defaults={"is_staff": True})
            user.is_staff = True
            user.is_superuser = superuser
            user.set_password(password)
            user.save()
            user.user_permissions.set(desk_permissions.exclude(codename="force_release"))
            staff.append(user)
        for index, (name, email, plan, street, city) in enumerate(CUSTOMERS):
            customer, created = Customer.objects.get_or_create(name=name, defaults={"email": email, "plan": plan})
            if created:
                Address.objects.create(customer=customer, street=street, city=city)
                # Written by a member of staff (in turn), as the desk's own notes are: the page names its author.
                author = staff[index % len(staff)]
                Note.objects.create(customer=customer, author=author, body=f"{name} signed up for the {plan} plan.")


def _check_port_free(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As runserver binds: SO_REUSEADDR, so a port left in TIME_WAIT by the last demo counts as free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            if error.errno != errno.EADDRINUSE:
                raise
            raise CommandError(
                f"Port {port} is taken by another program. Choose another one: make demo PORT={port + 1} "
                f"(or manage.py demo --port {port + 1})."
            ) from error
