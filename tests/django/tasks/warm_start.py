"""The chaos run's worker starter: ``python -m tests.django.tasks.warm_start MODULE...`` (chaos_workers.Starter).

It sets Django up and imports the MODULEs once: what took each worker 1.5 s of CPU to start (4 s on the
shared 2-core machine) and, with a whole worker killed every few seconds, most of a chaos run's CPU. Then,
for each line on stdin (a JSON object: ``command``, python's arguments such as ``["-m", "dramatiq", ...]``
or ``["manage.py", "qcluster"]``, and ``log``, a file), it forks a child that starts a session of its own,
writes to the log, and runs the command as ``python COMMAND...`` would: the queue's own worker, its own
main, in a process of its own; and answers with the child's pid. So a killed worker's replacement takes
copies at once, as a deployed worker's supervisor restarts it, and the run's CPU goes to the chaos.

Nothing a worker opens (a broker connection, a lock client, a pool's processes, a thread) exists before
the fork: only imports. Its children are reaped here (the driver, not their parent, waits for them to
be gone). End of input: it exits, and the workers it started go on until killed.
"""

from __future__ import annotations

import importlib
import json
import os
import runpy
import signal
import sys
import traceback
from typing import Any

import django

from dynalock_django.dynamodb import build_dynamodb_client


def main(modules: list[str]) -> int:
    django.setup()
    for module in modules:
        importlib.import_module(module)
    # A client made and dropped: botocore's service models, loaded once a process (shared_service_models), are
    # then every forked worker's: its own first client (its lock's) costs it 0.02 s of CPU, not 0.2 s.
    build_dynamodb_client(region_name="us-east-1", endpoint_url="http://127.0.0.1:9").close()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # a dead child is reaped by the kernel: no zombie to wait for
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request["command"], request["log"])  # never returns
        print(pid, flush=True)
    return 0


def _child(command: list[str], log: str) -> None:
    code: Any = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the worker waits for its own children (a pool's)
        os.setsid()  # its own session: a SIGKILL of the session is the whole worker's
        output = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.close(output)
        nothing = os.open(os.devnull, os.O_RDONLY)
        os.dup2(nothing, 0)  # not the starter's pipe: it is the starter's, and the driver's
        os.close(nothing)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 (fd 0, not ours to close)
        if command[0] == "-m":
            sys.argv = command[1:]
            runpy.run_module(command[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = command
            runpy.run_path(command[0], run_name="__main__")
        code = 0
    except SystemExit as exit:
        code = exit.code
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code if isinstance(code, int) else 1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
