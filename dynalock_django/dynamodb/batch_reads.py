"""LockClient's read of many keys at once (a base class of LockClient)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .item import LockInfo
    from .options import CallChecks
    from .store import LockStore


class BatchReads:
    """Reads for display of many locks at once; the client provides its argument checks and its store."""

    _checks: CallChecks
    _store: LockStore

    def get_many(self, keys: Iterable[str], *, sort_key: str | None = None) -> dict[str, LockInfo]:
        """The lock items of ``keys`` as stored now (consistent reads), by key; keys without an item are absent.

        One BatchGetItem per 100 distinct keys (none for no keys); keys
        DynamoDB leaves unprocessed are asked for again. For display: unlike
        :meth:`get`, it remembers no versions for takeover.
        """
        lock_ids = [self._checks.lock_id(key, sort_key) for key in keys]
        return {info.key: info for info in self._store.read_many(lock_ids).values() if info is not None}
