"""How the multi-process tests start their workers: forked from a server that already imported what they all import.

A spawned worker imports Django, boto3 and this package anew, a second or more of CPU each, and a
test starts dozens of them. The fork server imports those once; each worker is a fork of it, a
clean process (none of the test's threads, state or environment changes since the server started:
a worker is told what it needs in its arguments).
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.context import ForkServerContext

# What every worker imports; not Django's setup, which each worker does with its own settings. Last, what the
# setup imports that reads no setting, and botocore's service models (tests/forkserver_warmth.py).
PRELOAD = [
    "boto3",
    "botocore.session",
    "django",
    "django.db.models",
    "dynalock_django.dynamodb",
    "tests.forkserver_warmth",
]


def worker_context() -> ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context
