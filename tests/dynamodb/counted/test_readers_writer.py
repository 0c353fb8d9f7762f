"""Readers-writer locks: readers share, a writer excludes them, and a waiting writer keeps new readers out."""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import LockTimeout

from ...dynamodb_support import LEASE


def test_readers_share_and_a_writer_excludes_them(make_client, key, virtual_clock):
    a, b, w = (make_client(clock=virtual_clock) for _ in range(3))
    first = a.readers_writer(key).acquire_read(timeout=0)
    second = b.readers_writer(key).acquire_read(timeout=0)
    assert first.permit != second.permit
    with pytest.raises(LockTimeout, match="2 reader"):
        w.readers_writer(key).acquire_write(timeout=3 * LEASE)
    assert w.get(key).is_released  # the write item given back at the time-out
    first.release()
    second.release()
    writer = w.readers_writer(key).acquire_write(timeout=0)
    with pytest.raises(LockTimeout, match="a writer holds"):
        a.readers_writer(key).acquire_read(timeout=3 * LEASE)
    writer.release()
    assert a.readers_writer(key).acquire_read(timeout=0).permit is not None
