"""The command line of ``manage.py dynalock``: sub-commands that take Django's options and say their own usage.

argparse gives a sub-command's arguments to the sub-command's parser alone:
Django's options (``--settings``, ``--traceback``, ``-v``, ...) after the
sub-command were refused as "unrecognized arguments", and an argument the
sub-command did not know was refused with the parent's usage. Each sub-command
accepts Django's options too (their values reach the command as if given
before it), and its errors show its own usage.
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import CommandParser

DjangoOption = tuple[tuple[str, ...], dict[str, Any]]

DJANGO_OPTIONS_NOTE = "Django's options (--settings, --pythonpath, --traceback, -v, ...) work here too."


class SubcommandParser(CommandParser):
    """A sub-command's parser: what it does not know is refused with its usage, not the parent command's."""

    def parse_known_args(  # type: ignore[override]
        self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, unknown = super().parse_known_args(args, namespace)
        if unknown:
            self.error(f"unrecognized arguments: {' '.join(unknown)}")
        return parsed, unknown


def accept_django_options(parser: argparse.ArgumentParser, options: list[DjangoOption]) -> None:
    """Let ``parser`` (a sub-command's) take Django's ``options`` as its parent does.

    Their defaults stay the parent's (``SUPPRESS``: an option not given here sets nothing), and
    they are left out of the sub-command's help, which says they work.
    """
    for flags, settings in options:
        parser.add_argument(*flags, **{**settings, "default": argparse.SUPPRESS, "help": argparse.SUPPRESS})
    parser.epilog = DJANGO_OPTIONS_NOTE
