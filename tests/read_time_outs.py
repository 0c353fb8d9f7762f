"""A failure that followed a logged read time-out of a local store is rerun like one that raised it.

pyproject's ``--only-rerun`` reruns a test whose exception says a local store did not answer within the
suite's 0.5 s read time-out: on a loaded machine a single-threaded store (moto) can be that slow. The
code under test often turns that time-out into something else — a 503 page, a read-only change page,
a log line — and the test then fails on an assertion that does not name it. While a test runs, this
plugin watches the log for the same patterns; if the test fails after one, the time-out is chained
behind its exception, where ``--only-rerun`` looks and where the report shows it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Generator, Iterator

import pytest


class StoreDidNotAnswerInTime(Exception):
    """Never raised: chained behind a test's failure, it names the read time-out logged while the test ran."""


class TimeOutRecords(logging.Handler):
    """Keeps the log records (WARNING and above) whose message matches one of the patterns."""

    def __init__(self, patterns: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.patterns = [re.compile(pattern) for pattern in patterns]
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = self.format(record)
        if any(pattern.search(message) for pattern in self.patterns):
            self.seen.append(f"{record.name}: {message}")


def exception_chain(failure: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    exception: BaseException | None = failure
    while exception is not None and id(exception) not in seen:
        seen.add(id(exception))
        yield exception
        exception = exception.__cause__ or exception.__context__


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    patterns = item.config.getoption("only_rerun", None) or []
    if not patterns:
        return (yield)
    records = TimeOutRecords(patterns)
    root = logging.getLogger()
    root.addHandler(records)
    try:
        return (yield)
    except Exception as failure:
        chain = list(exception_chain(failure))
        named = any(pattern.search(f"{type(link).__name__}: {link}") for link in chain for pattern in records.patterns)
        if records.seen and not named:
            chain[-1].__cause__ = StoreDidNotAnswerInTime(f"logged while the test ran: {records.seen[0]}")
        raise
    finally:
        root.removeHandler(records)
