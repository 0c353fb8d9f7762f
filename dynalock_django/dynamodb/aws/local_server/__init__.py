"""A DynamoDB-compatible endpoint on 127.0.0.1 for tests and the demo (moto, one request at a time).

moto's own server is threaded, and then two conditional writes can both pass
their condition: served one request at a time, "check the condition, then
write" is atomic, as it is in DynamoDB. Needs ``moto[server]``.

    python -m dynalock_django.dynamodb.aws.local_server --port 8765

or, from Python, ``with LocalDynamoDB() as endpoint_url: ...``.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from types import TracebackType

STARTUP_TIMEOUT_SECONDS = 30.0


STALLED_CLIENT_SECONDS = 2.0


def serve(host: str, port: int) -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import WSGIRequestHandler, run_simple

    class OneRequestAtATime(WSGIRequestHandler):
        # Served one at a time, a client that connects and then stops (a paused process: SIGSTOP, Ctrl-Z)
        # would hold every other client up until it resumed; DynamoDB serves each on its own. Its
        # connection is dropped after this long without a byte, and the next one is served.
        timeout = STALLED_CLIENT_SECONDS

    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, app, threaded=False, request_handler=OneRequestAtATime)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalDynamoDB:
    """Starts the endpoint in a child process; ``endpoint_url`` is set while it runs."""

    # What to tell someone whose endpoint process exits at once.
    install_hint = 'is moto installed (pip install "moto[server]")?'

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.endpoint_url = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        """The server's command line, listening on 127.0.0.1:``port``."""
        return [sys.executable, "-m", __name__, "--port", str(self.port)]

    def start(self) -> str:
        self._process = subprocess.Popen(  # noqa: S603 (a fixed command line, not user input)
            self.command(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
        listening = False
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"The local DynamoDB endpoint exited with code {self._process.returncode}; {self.install_hint}"
                )
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
            except OSError:
                time.sleep(0.05)
                continue
            listening = True
            if self._answers(deadline):
                return self.endpoint_url
        self.stop()
        what = "listened but answered no DynamoDB request" if listening else "did not listen"
        raise RuntimeError(
            f"The local DynamoDB endpoint {what} on port {self.port} within {STARTUP_TIMEOUT_SECONDS:g}s."
        )

    def _answers(self, deadline: float) -> bool:
        """Whether the endpoint answers a DynamoDB request before ``deadline``.

        Listening is not ready: moto loads its DynamoDB backend at the first request (half a second
        idle, seconds on a loaded machine), and a caller's first request, with its own short read
        time-out, would pay it. The one patient request here does instead.
        """
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError

        from ..connection import new_session

        patience = max(0.5, deadline - time.monotonic())
        config = Config(connect_timeout=patience, read_timeout=patience, retries={"total_max_attempts": 1})
        dynamodb = new_session().client(
            "dynamodb",
            endpoint_url=self.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",  # noqa: S106 - moto accepts any
            config=config,
        )
        try:
            dynamodb.list_tables(Limit=1)
        except BotoCoreError:
            return False
        finally:
            dynamodb.close()
        return True

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m {__name__}", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    print(f"Local DynamoDB endpoint on http://{args.host}:{args.port} (one request at a time)", flush=True)
    serve(args.host, args.port)
