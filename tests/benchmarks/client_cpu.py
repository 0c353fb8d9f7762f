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
- **python-dynamodb-lock** (when installed: ``pip install python-dynamodb-lock``): its
  ``acquire_lock`` and ``release_lock`` (a read and two writes).

Quote the ratios of one run: the machine's load moves the absolute figures.
"""

from __future__ import annotations

import argparse
import copy
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from dynalock_django.dynamodb import LockClient

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


def measure(endpoint_url: str, rounds: int, blocks: int) -> dict[str, tuple[float, float]]:
    """Microseconds of client CPU, and of the wall clock, per acquire + release, for each contender, on one store."""
    table_name = unique("cpu")
    client = LockClient(make_dynamodb(endpoint_url, **PATIENT), table_name)
    client.create_table()
    requests = capture(client)
    contenders: dict[str, Round] = {
        "ours": ours(client),
        "replay": replay(
            make_dynamodb(endpoint_url, **PATIENT), requests, (unique("cpu") for _ in range(rounds * (blocks + 1)))
        ),
        "raw": raw(make_dynamodb(endpoint_url, **PATIENT), table_name),
    }
    if pdl_installed():
        pdl_table = unique("pdl")
        LockClient(make_dynamodb(endpoint_url, **PATIENT), pdl_table, sort_key_name=PDL_TABLE_SORT_KEY).create_table()
        contenders["python-dynamodb-lock"] = python_dynamodb_lock(endpoint_url, pdl_table)
    for run in contenders.values():  # warm up: connections, boto3's models, the first-call paths
        per_round(run, max(1, rounds // 10))
    total = rounds * blocks
    spent = in_turns(contenders, total)
    client.close()
    return {name: (cpu / total * 1e6, wall / total * 1e6) for name, (cpu, wall) in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--stores", default=",".join(SERVERS))
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    rows = []
    for store in args.stores.split(","):
        with SERVERS[store]() as url:
            measured = measure(url, args.rounds, args.blocks)
        for clock, index in (("CPU", 0), ("wall", 1)):
            us = {name: values[index] for name, values in measured.items()}
            pdl = us.get("python-dynamodb-lock")
            figures = f"{us['ours']:.0f} / {us['replay']:.0f} / {us['raw']:.0f}" + (f" / {pdl:.0f}" if pdl else "")
            rows.append(
                (
                    f"{store}, {clock}",
                    figures,
                    f"{us['ours'] / us['replay']:.2f}",
                    f"{us['replay'] / us['raw']:.2f}",
                    f"{us['ours'] / us['raw']:.2f}",
                    f"{pdl / us['raw']:.2f}" if pdl else "-",
                )
            )
    print_table(
        (
            "store, clock",
            "µs per round: ours / replay / raw" + (" / pdl" if pdl_installed() else ""),
            "ours ÷ replay",
            "replay ÷ raw",
            "ours ÷ raw",
            "pdl ÷ raw",
        ),
        rows,
    )


if __name__ == "__main__":
    main()
