"""Many leases held by one client behind a proxy adding 10 ms to every request, against a real store."""

from __future__ import annotations

import threading
import time

import pytest

from ...chaos.proxy import FaultProxy, FaultRates
from ...dynamodb_support import make_dynamodb, unique

LEASES = 100
# Long enough for a store serving one request at a time (moto) on a loaded machine: 40 renewals a second.
LEASE, HEARTBEAT = 10.0, 2.5


@pytest.mark.slow
@pytest.mark.stores
@pytest.mark.requires("http_endpoint")
def test_a_hundred_leases_behind_a_slow_link_are_all_still_held_after_three_periods(make_client, endpoint_url):
    with FaultProxy(endpoint_url, FaultRates(latency=1.0, latency_seconds=0.010), seed=1) as proxy:
        client = make_client(
            make_dynamodb(proxy.url, read_timeout=2, connect_timeout=1),
            lease_duration=LEASE,
            heartbeat_period=HEARTBEAT,
        )
        keys = [unique("many") for _ in range(LEASES)]
        leases = []

        def acquire(part: list[str]) -> None:
            leases.extend(client.acquire(key, timeout=30) for key in part)

        threads = [threading.Thread(target=acquire, args=(keys[i::8],)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(leases) == LEASES
        versions = {lease.key: lease.record_version_number for lease in leases}

        time.sleep(3 * HEARTBEAT)

        assert [lease.key for lease in leases if not lease.is_held()] == []
        # Each was renewed meanwhile (a new version), and the item still says it is ours.
        assert [lease.key for lease in leases if lease.record_version_number == versions[lease.key]] == []
        stored = client.get_many([lease.key for lease in leases])
        assert {key: info.owner_name for key, info in stored.items()} == dict.fromkeys(keys, client.owner_name)
        assert client.process_state.heartbeat.lag < HEARTBEAT
        client.close()
