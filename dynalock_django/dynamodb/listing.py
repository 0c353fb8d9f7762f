"""LockClient's reads of many locks (a base class of LockClient): every item, the live ones, or many keys' items.

``live_page`` reads the live-locks index (:mod:`.live_index`), so its cost
follows the number of held locks; ``scan_page`` reads the whole table,
released items and other clients' locks included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .aws.store import LockStore, ScanPage
    from .options import CallChecks
    from .wire.item import LockInfo


class ListingMethods:
    """Listing locks page by page, or reading many keys' items; the client provides its argument checks and store."""

    call_checks: CallChecks
    store: LockStore

    def get_many(self, keys: Iterable[str], *, sort_key: str | None = None) -> dict[str, LockInfo]:
        """The lock items of ``keys`` as stored now (consistent reads), by key; keys without an item are absent.

        One BatchGetItem per 100 distinct keys (none for no keys); keys
        DynamoDB leaves unprocessed are asked for again. For display: unlike
        :meth:`get`, it remembers no versions for takeover.
        """
        lock_ids = [self.call_checks.lock_id(key, sort_key) for key in keys]
        return {info.key: info for info in self.store.read_many(lock_ids).values() if info is not None}

    def scan(
        self, *, include_released: bool = True, key_prefix: str | None = None, page_size: int | None = None
    ) -> Iterator[LockInfo]:
        """Every lock in the table, one DynamoDB page at a time (never all in memory)."""
        return _pages(
            lambda cursor: self.scan_page(
                limit=page_size, cursor=cursor, include_released=include_released, key_prefix=key_prefix
            )
        )

    def scan_page(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        include_released: bool = True,
        key_prefix: str | None = None,
    ) -> ScanPage:
        """One Scan request. ``limit`` caps items *read*, so a filtered page may hold fewer.

        ``key_prefix`` keeps the locks whose key starts with it (a filter: the
        items are still read, and paid for, page by page). Finds every item,
        the AWS Java client's locks too.
        """
        return self.store.scan_page(
            limit=limit, cursor=cursor, include_released=include_released, key_prefix=key_prefix
        )

    def live_locks(self, *, key_prefix: str | None = None, page_size: int | None = None) -> Iterator[LockInfo]:
        """The locks this package's clients hold, from the live-locks index, one page at a time."""
        return _pages(lambda cursor: self.live_page(limit=page_size, cursor=cursor, key_prefix=key_prefix))

    def live_page(
        self, *, limit: int | None = None, cursor: str | None = None, key_prefix: str | None = None
    ) -> ScanPage:
        """One Scan of the live-locks index: held locks only, at a cost that follows their number.

        Locks the AWS Java client holds are not in the index (``scan_page``
        finds them). Without the index the table is scanned instead (and the
        log says so once); ``ScanPage.from_index`` tells which it was.
        """
        return self.store.live_page(limit=limit, cursor=cursor, key_prefix=key_prefix)


def _pages(read: Callable[[str | None], ScanPage]) -> Iterator[LockInfo]:
    cursor: str | None = None
    while True:
        page = read(cursor)
        yield from page.locks
        if page.cursor is None:
            return
        cursor = page.cursor
