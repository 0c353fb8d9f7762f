"""``manage.py hold_lock NAME``: a plain command that holds a lock until it is stopped.

The subject of the SIGTERM tests and of ``python -m tests.benchmarks.recovery``. With
``--release-on-sigterm`` it does what docs/django/leader.md tells commands to do.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from dynalock_django import Leadership, lock_key


class Command(BaseCommand):
    help = "Hold a lock (or, with --leader, a leadership) until stopped."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--leader", action="store_true", help="Hold it as a Leadership.")
        parser.add_argument("--release-on-sigterm", action="store_true", help="SIGTERM unwinds, releasing.")
        parser.add_argument("--ready-file", required=True, help="Gets this process's id once the lock is held.")

    def handle(self, *, name: str, leader: bool, release_on_sigterm: bool, ready_file: str, **_: Any) -> None:
        if release_on_sigterm:
            signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
        with Leadership(name) if leader else lock_key(name):
            Path(ready_file).write_text(str(os.getpid()))
            while True:
                time.sleep(0.05)
