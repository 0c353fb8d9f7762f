"""A group of locks acquired together (``acquire_many``): its leases by key, released together."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from .block_end import ReleasedAtBlockEnd
from .lease import Lease

if TYPE_CHECKING:
    from ..aws.call_threads import CallThreads
    from .lease_writes import LeaseWriter

# How a caller names a lock: its key, or (key, sort_key) on a table with a sort key.
LockKey = str | tuple[str, str]


class GroupReleaser(Protocol):
    """What a group asks of the client that granted it (a LockClient)."""

    def release_all(self, leases: Sequence[Lease], *, best_effort: bool = False) -> bool: ...

    async def arelease_all(self, leases: Sequence[Lease], *, best_effort: bool = False) -> bool: ...


class LeaseGroup(ReleasedAtBlockEnd):
    """The leases of locks acquired together, all or none (``LockClient.acquire_many``).

    Iterating gives the leases in the order they were taken (sorted by key);
    ``group[key]`` (``group[key, sort_key]`` on a table with a sort key) one of
    them. Each member is an ordinary :class:`.Lease`, renewed by the client's
    heartbeat; ``on_lost`` runs for each member that is lost. Use it as a
    context manager to release them all at the end of a block.
    """

    def __init__(self, releaser: GroupReleaser, leases: Sequence[Lease]) -> None:
        self._releaser = releaser
        self._leases = {self._name(lease): lease for lease in leases}

    def __repr__(self) -> str:
        return f"<LeaseGroup of {len(self)} locks {'held' if self.is_held() else 'not all held'}>"

    def __iter__(self) -> Iterator[Lease]:
        return iter(self._leases.values())

    def __len__(self) -> int:
        return len(self._leases)

    def __contains__(self, key: object) -> bool:
        return key in self._leases

    def __getitem__(self, key: LockKey) -> Lease:
        try:
            return self._leases[key]
        except KeyError:
            raise KeyError(f"{key!r} is not one of this group's locks") from None

    @property
    def keys(self) -> list[LockKey]:
        return list(self._leases)

    @property
    def fencing_tokens(self) -> dict[LockKey, int]:
        """Each lock's fencing token, by key: pass each to the writes that lock protects."""
        return {key: lease.fencing_token for key, lease in self._leases.items()}

    def is_held(self) -> bool:
        """True while every member is safely held."""
        return all(lease.is_held() for lease in self._leases.values())

    def lost(self) -> list[Lease]:
        """The members no longer held (lost, or released on their own)."""
        return [lease for lease in self._leases.values() if not lease.is_held()]

    def release(self, *, best_effort: bool = False) -> bool:
        """Release every member: one transaction per 100 where the store has them; True if this call released all.

        A member that was lost raises LockLost (after the others are
        released), unless ``best_effort``: see :meth:`.LockClient.release`.
        """
        return self._releaser.release_all(list(self._leases.values()), best_effort=best_effort)

    async def arelease(self, *, best_effort: bool = False) -> bool:
        """:meth:`release` for coroutines."""
        return await self._releaser.arelease_all(list(self._leases.values()), best_effort=best_effort)

    def _held_in_block(self) -> list[Lease]:
        return list(self)

    def _name(self, lease: Lease) -> LockKey:
        # A lease has a sort key exactly when its table does.
        return lease.key if lease.sort_key is None else (lease.key, lease.sort_key)


class GroupRelease:
    """How a LeaseGroup releases its members, from a thread or from a coroutine."""

    def __init__(self, lease_writer: LeaseWriter, calls: CallThreads) -> None:
        self._lease_writer = lease_writer
        self._calls = calls

    def release_all(self, leases: Sequence[Lease], *, best_effort: bool = False) -> bool:
        return self._lease_writer.release_all(leases, best_effort=best_effort)

    async def arelease_all(self, leases: Sequence[Lease], *, best_effort: bool = False) -> bool:
        if all(lease.state == "released" for lease in leases):
            return False
        release = functools.partial(self.release_all, leases, best_effort=best_effort)
        return await self._calls.run(release, even_if_cancelled=True)
