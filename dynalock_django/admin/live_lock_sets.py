"""The live-locks page's counted locks: a semaphore's permits under one heading ("3 of 5 in use"), a row's
readers (and its writer) under the row.

Grouped among the rows of the page, which is one DynamoDB page: a set whose
items span two pages is counted on each by what that page read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .live_locks_page import LiveLocksPageRow


@dataclass(frozen=True)
class SetHeading:
    """The heading of a counted lock's rows on the page."""

    kind: Literal["semaphore", "read"]
    display_name: str  # the semaphore's name, or the row's object
    object_url: str | None
    in_use: int  # permits (or readers) held among the rows read
    permits: int | None  # a semaphore's count as its items store it; None when they do not agree, or for readers
    writer: LiveLocksPageRow | None  # a row's writer, holding or waiting, when on this page
    is_heading: bool = True


@dataclass(frozen=True)
class SetMember:
    """A row listed under its set's heading."""

    shown: LiveLocksPageRow
    is_heading: bool = False
    in_set: bool = True


@dataclass(frozen=True)
class LoneRow:
    """A row of a plain lock (no set)."""

    shown: LiveLocksPageRow
    is_heading: bool = False
    in_set: bool = False


PageEntry = SetHeading | SetMember | LoneRow


def grouped(rows: list[LiveLocksPageRow]) -> list[PageEntry]:
    """``rows`` in their order, each set's items moved under one heading where its first item was.

    A row's plain lock is its readers' writer: it joins their heading when
    readers of that row are on the page, and stays a plain row otherwise.
    """
    members: dict[str, list[LiveLocksPageRow]] = {}
    for shown in rows:
        set_key = shown.row.parsed.set_key
        if set_key is not None:
            members.setdefault(set_key, []).append(shown)
    writers = {
        shown.row.lock.key: shown
        for shown in rows
        if shown.row.parsed.set_key is None and _has_readers(members.get(shown.row.lock.key, []))
    }
    entries: list[PageEntry] = []
    headed: set[str] = set()
    for shown in rows:
        set_key = shown.row.parsed.set_key or (shown.row.lock.key if shown.row.lock.key in writers else None)
        if set_key is None:
            entries.append(LoneRow(shown))
            continue
        if set_key in headed:
            continue
        headed.add(set_key)
        entries.append(_heading(members[set_key], writers.get(set_key)))
        if set_key in writers:
            entries.append(SetMember(writers[set_key]))
        entries.extend(SetMember(member) for member in members[set_key])
    return entries


def _has_readers(rows: list[LiveLocksPageRow]) -> bool:
    return any(shown.row.parsed.counted == "read" for shown in rows)


def _heading(rows: list[LiveLocksPageRow], writer: LiveLocksPageRow | None) -> SetHeading:
    first = rows[0].row
    in_use = sum(1 for shown in rows if shown.row.state == "held")
    if first.parsed.counted == "read":
        return SetHeading("read", first.display_name, first.object_url, in_use, None, writer)
    counts = {shown.row.lock.permits for shown in rows}
    permits = next(iter(counts)) if len(counts) == 1 else None
    name = first.parsed.name if first.parsed.name is not None else first.display_name
    return SetHeading("semaphore", name, first.object_url, in_use, permits if isinstance(permits, int) else None, None)
