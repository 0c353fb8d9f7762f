"""Client CPU (and wall time) of an uncontended acquire + release, against floors that do the same I/O with less code.

    python -m tests.benchmarks.client_cpu [--rounds 200] [--blocks 5] [--stores moto,dynalite,dynamodb_local]

On each store, a new key per round, four contenders take turns round by round (``--blocks`` times
``--rounds`` rounds, each round every contender once, in an order that rotates, so the machine's
noise falls on all of them alike even when it changes from one second to the next), each timed by
this process's CPU clock (``time.process_time``: the servers run in their own processes), and by
the wall clock (the server's work on the requests shows there):

- **ours**: ``client.acquire(key).release()``;
- **replay**: boto3 sending the very two requests ours sent (captured once, the key put in): what
  the client adds above boto3 is ours ÷ replay;
- **raw**: a ``PutItem`` and a ``DeleteItem`` of the key, the floor of any lock's two writes: what
  the requests weigh is replay ÷ raw;
- **bare**: the same two requests, their parameters built in the round and the first answer's fencing
  token read: the least any Python client sending them does, so bare ÷ replay is the floor of ours ÷ replay;
- **python-dynamodb-lock** (when installed: ``pip install python-dynamodb-lock``): its
  ``acquire_lock`` and ``release_lock`` (a read and two writes).

Quote the ratios of one run: the machine's load moves the absolute figures.

``--cold-functions N`` adds a contender, **replay+N**: the replay after a call through a chain of N
distinct trivial Python functions, and prints what the chain costs there against in a tight loop: what
code run once a round costs once boto3, the socket waits and the server have run in between.

``--segments`` adds a second table: where each round's CPU goes, ours against replay, split at
botocore's first and last event of each request (``provide-client-params``, ``after-call``) into
the client's own code (before the first request, between the two, after the second) and boto3's
work on each request (building, signing, sending, waiting, parsing). It tells the client's own cost
from the cost it adds to boto3's (colder caches, a server woken later).
"""

from __future__ import annotations

import argparse
import copy
import itertools
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from dynalock_django.dynamodb import LockClient
from dynalock_django.dynamodb.wire.item import FENCING_TOKEN

from ..dynamodb_support import make_dynamodb, unique
from .handoff import PATIENT, SERVERS, pdl_client, pdl_installed
from .protocol import print_table

PDL_TABLE_SORT_KEY = "sort_key"
Round = Callable[[str], None]


def capture(client: LockClient) -> list[tuple[str, dict[str, Any]]]:
    """The requests one ``acquire(key).release()`` of ``client`` sends, as (operation, parameters)."""
    sent: list[tuple[str, dict[str, Any]]] = []

    def keep(params: dict[str, Any], model: Any, **_: Any) -> None:
        sent.append((model.name, copy.deepcopy(params)))

    client.dynamodb.meta.events.register("provide-client-params.dynamodb", keep)
    try:
        client.acquire("captured-key").release()
    finally:
        client.dynamodb.meta.events.unregister("provide-client-params.dynamodb", keep)
    return sent


def with_key(value: Any, key: str) -> Any:
    """``value`` with the captured key replaced by ``key`` wherever it is (the item's key, the index's key)."""
    if isinstance(value, dict):
        return {name: with_key(item, key) for name, item in value.items()}
    if isinstance(value, list):
        return [with_key(item, key) for item in value]
    return key if value == "captured-key" else value


def ours(client: LockClient) -> Round:
    return lambda key: client.acquire(key).release()


def replay(dynamodb: Any, requests: list[tuple[str, dict[str, Any]]], keys: Iterator[str]) -> Round:
    """boto3 sending ``requests`` again, their parameters built before the clock runs."""
    methods = {"UpdateItem": dynamodb.update_item, "PutItem": dynamodb.put_item, "DeleteItem": dynamodb.delete_item}
    prepared = iter([[(methods[name], with_key(params, key)) for name, params in requests] for key in keys])

    def run(_: str) -> None:
        for method, params in next(prepared):
            method(**params)

    return run


def bare(dynamodb: Any, requests: list[tuple[str, dict[str, Any]]]) -> Round:
    """boto3 sending ``requests`` again, each built in the round (the key put in) and the grant's token read."""
    (acquire_name, acquire), (release_name, release) = requests
    methods = {"UpdateItem": dynamodb.update_item, "PutItem": dynamodb.put_item, "DeleteItem": dynamodb.delete_item}
    send_acquire, send_release = methods[acquire_name], methods[release_name]

    def run(key: str) -> None:
        granted = send_acquire(**with_key(acquire, key))
        int(granted["Attributes"][FENCING_TOKEN]["N"])
        send_release(**with_key(release, key))

    return run


def function_chain(length: int) -> Callable[[], int]:
    """A call through ``length`` distinct functions, each adding one and building a small list, as code does."""
    source = (
        "".join(f"def f{index}(x):\n    y = [x, x + 1]\n    return f{index + 1}(y[1])\n" for index in range(length))
        + f"def f{length}(x):\n    return x\n"
    )
    namespace: dict[str, Any] = {}
    exec(compile(source, "<chain>", "exec"), namespace)  # the benchmark's own generated source
    first = namespace["f0"]
    return lambda: first(0)  # type: ignore[no-any-return]


def after_chain(chain: Callable[[], int], run: Round) -> Round:
    def chained(key: str) -> None:
        chain()
        run(key)

    return chained


def warm_cost(chain: Callable[[], int], calls: int = 10_000) -> float:
    """Microseconds of CPU one call through ``chain`` takes, called again and again."""
    started = time.process_time()
    for _ in range(calls):
        chain()
    return (time.process_time() - started) / calls * 1e6


def raw(dynamodb: Any, table_name: str) -> Round:
    def run(key: str) -> None:
        dynamodb.put_item(TableName=table_name, Item={"key": {"S": key}})
        dynamodb.delete_item(TableName=table_name, Key={"key": {"S": key}})

    return run


def python_dynamodb_lock(endpoint_url: str, table_name: str) -> Round:
    client = pdl_client(endpoint_url, table_name)

    def run(key: str) -> None:
        client.release_lock(client.acquire_lock(key))

    return run


def per_round(run: Round, rounds: int) -> tuple[float, float]:
    """Seconds of this process's CPU, and of the wall clock, per round."""
    keys = [unique("cpu") for _ in range(rounds)]
    started, wall = time.process_time(), time.perf_counter()
    for key in keys:
        run(key)
    return (time.process_time() - started) / rounds, (time.perf_counter() - wall) / rounds


def in_turns(contenders: dict[str, Round], rounds: int) -> dict[str, tuple[float, float]]:
    """Seconds of CPU and of the wall clock each contender spent in ``rounds`` rounds, taking turns round by round.

    Each round runs every contender once on a new key, the first of them moving on by one each
    round: a burst of load elsewhere on the machine lands on all of them, not on one block of one.
    """
    names = list(contenders)
    spent = {name: [0.0, 0.0] for name in names}
    for index in range(rounds):
        first = index % len(names)
        for name in names[first:] + names[:first]:
            key = unique("cpu")
            started, wall = time.process_time(), time.perf_counter()
            contenders[name](key)
            spent[name][0] += time.process_time() - started
            spent[name][1] += time.perf_counter() - wall
    return {name: (cpu, wall) for name, (cpu, wall) in spent.items()}


class Segments:
    """This thread's CPU in each part of a round, split at botocore's first and last event of each request."""

    NAMES = ("own: before 1st", "boto3: 1st request", "own: between", "boto3: 2nd request", "own: after")

    def __init__(self) -> None:
        self.marks: list[int] = []
        self.spent: dict[str, list[int]] = {}
        self.rounds: dict[str, int] = {}

    def watch(self, dynamodb: Any) -> None:
        for event in ("provide-client-params.dynamodb", "after-call.dynamodb"):
            dynamodb.meta.events.register(event, self.mark)

    def mark(self, **_: Any) -> None:
        self.marks.append(time.thread_time_ns())

    def timed(self, name: str, run: Round) -> Round:
        def timed_run(key: str) -> None:
            self.marks[:] = [time.thread_time_ns()]
            run(key)
            self.mark()
            if len(self.marks) == len(self.NAMES) + 1:  # one round of two requests, as captured
                spent = self.spent.setdefault(name, [0] * len(self.NAMES))
                for index, (start, end) in enumerate(itertools.pairwise(self.marks)):
                    spent[index] += end - start
                self.rounds[name] = self.rounds.get(name, 0) + 1

        return timed_run

    def per_round(self, name: str) -> list[float]:
        """Microseconds in each part, per round."""
        return [ns / self.rounds[name] / 1e3 for ns in self.spent[name]]


def measure(
    endpoint_url: str, rounds: int, blocks: int, segments: Segments | None = None, cold_functions: int = 0
) -> dict[str, tuple[float, float]]:
    """Microseconds of client CPU, and of the wall clock, per acquire + release, for each contender, on one store.

    With ``segments``, a second run of ours and replay taking turns, with botocore's events timed, fills it.
    """
    table_name = unique("cpu")
    client = LockClient(make_dynamodb(endpoint_url, **PATIENT), table_name)
    client.create_table()
    requests = capture(client)
    replay_dynamodb = make_dynamodb(endpoint_url, **PATIENT)
    total = rounds * blocks
    runs = 1 + (segments is not None) + (cold_functions > 0)  # of the replay's requests: each needs its own keys
    replay_keys = (unique("cpu") for _ in range(rounds * (1 + runs) + total * runs))
    contenders: dict[str, Round] = {
        "ours": ours(client),
        "replay": replay(replay_dynamodb, requests, replay_keys),
        "bare": bare(make_dynamodb(endpoint_url, **PATIENT), requests),
        "raw": raw(make_dynamodb(endpoint_url, **PATIENT), table_name),
    }
    if pdl_installed():
        pdl_table = unique("pdl")
        LockClient(make_dynamodb(endpoint_url, **PATIENT), pdl_table, sort_key_name=PDL_TABLE_SORT_KEY).create_table()
        contenders["python-dynamodb-lock"] = python_dynamodb_lock(endpoint_url, pdl_table)
    if cold_functions:
        replay_run = contenders["replay"]
        contenders[f"replay+{cold_functions}"] = after_chain(function_chain(cold_functions), replay_run)
    for run in contenders.values():  # warm up: connections, boto3's models, the first-call paths
        per_round(run, max(1, rounds // 10))
    spent = in_turns(contenders, total)
    if segments is not None:  # after the main run: the events' timing costs both alike, but it costs
        segments.watch(client.dynamodb)
        segments.watch(replay_dynamodb)
        in_turns({name: segments.timed(name, contenders[name]) for name in ("ours", "replay")}, total)
    client.close()
    return {name: (cpu / total * 1e6, wall / total * 1e6) for name, (cpu, wall) in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--stores", default=",".join(SERVERS))
    parser.add_argument("--segments", action="store_true", help="also: where each round's CPU goes")
    parser.add_argument("--cold-functions", type=int, default=0, help="also: what N functions cost once a round")
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    rows, segment_rows, chain_rows = [], [], []
    for store in args.stores.split(","):
        segments = Segments() if args.segments else None
        with SERVERS[store]() as url:
            measured = measure(url, args.rounds, args.blocks, segments, args.cold_functions)
        if args.cold_functions:
            chained = measured[f"replay+{args.cold_functions}"][0] - measured["replay"][0]
            warm = warm_cost(function_chain(args.cold_functions))
            chain_rows.append((store, f"{warm:.0f}", f"{chained:.0f}", f"{chained / warm:.1f}"))
        for clock, index in (("CPU", 0), ("wall", 1)):
            us = {name: values[index] for name, values in measured.items()}
            pdl = us.get("python-dynamodb-lock")
            figures = f"{us['ours']:.0f} / {us['replay']:.0f} / {us['bare']:.0f} / {us['raw']:.0f}" + (
                f" / {pdl:.0f}" if pdl else ""
            )
            rows.append(
                (
                    f"{store}, {clock}",
                    figures,
                    f"{us['ours'] / us['replay']:.2f}",
                    f"{us['bare'] / us['replay']:.2f}",
                    f"{us['replay'] / us['raw']:.2f}",
                    f"{us['ours'] / us['raw']:.2f}",
                    f"{pdl / us['raw']:.2f}" if pdl else "-",
                )
            )
        if segments is not None:
            for name in ("ours", "replay"):
                parts = segments.per_round(name)
                segment_rows.append((f"{store}, {name}", *(f"{part:.0f}" for part in parts), f"{sum(parts):.0f}"))
    print_table(
        (
            "store, clock",
            "µs per round: ours / replay / bare / raw" + (" / pdl" if pdl_installed() else ""),
            "ours ÷ replay",
            "bare ÷ replay",
            "replay ÷ raw",
            "ours ÷ raw",
            "pdl ÷ raw",
        ),
        rows,
    )
    if segment_rows:
        print()
        print_table(("store, contender (CPU µs a round)", *Segments.NAMES, "total"), segment_rows)
    if chain_rows:
        print()
        chain = f"a chain of {args.cold_functions} functions"
        print_table(("store", f"{chain}, warm (µs)", "in the rounds (µs)", "in the rounds ÷ warm"), chain_rows)


if __name__ == "__main__":
    main()
