"""Running this project's manage.py as real processes against the test's lock table."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..dynamodb_support import wait_for

__all__ = ["wait_for"]  # here too: the process tests' helpers in one import

ROOT = Path(__file__).resolve().parents[2]


def manage_py_environment(dynalock: dict[str, Any], settings_module: str, **extra: str) -> dict[str, str]:
    """The environment of a ``manage.py`` process using the ``dynalock`` settings (table, endpoint, leases).

    The suite's settings (``tests.settings``) take them whole from ``DYNALOCK_TEST_SETTINGS``; the test
    project's, as a user's project would, from ``DYNALOCK_*`` variables (``extra`` adds more).
    """
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": settings_module,
        "DYNALOCK_TEST_SETTINGS": json.dumps(dynalock),
        "DYNALOCK_TABLE_NAME": dynalock["TABLE_NAME"],
        "DYNALOCK_ENDPOINT_URL": dynalock["ENDPOINT_URL"],
        "DYNALOCK_LEASE_DURATION": str(dynalock["LEASE_DURATION"]),
        "DYNALOCK_HEARTBEAT_PERIOD": str(dynalock["HEARTBEAT_PERIOD"]),
        **extra,
    }


def is_running(pid: int) -> bool:
    """Alive, and not a zombie: an orphan killed here waits for its new parent (perhaps no init) to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
