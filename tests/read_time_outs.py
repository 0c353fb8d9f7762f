"""A failure that followed a logged read time-out of a local store is rerun like one that raised it.

pyproject's ``--only-rerun`` reruns a test whose exception says a local store did not answer within the
suite's 0.5 s read time-out: on a loaded machine a single-threaded store (moto) can be that slow. The
code under test often turns that time-out into something else — a 503 page, a read-only change page,
a log line — and the test then fails on an assertion that does not name it. While a test runs, this
plugin watches the log for the same patterns; if the test fails after one, the time-out is chained
behind its exception, where ``--only-rerun`` looks and where the report shows it.

The patterns leave out the answers a test loses on purpose (``FaultInjector.lose_response`` marks
them ``injected:``): a test about lost answers that fails is never rerun for one.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Generator, Iterator

import pytest


class StoreDidNotAnswerInTime(Exception):
    """Never raised: chained behind a test's failure, it names the read time-out logged while the test ran."""


class TimeOutRecords(logging.Handler):
    """Remembers the first log record (WARNING and above) whose text matches one of the patterns, and counts them."""

    def __init__(self, patterns: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.patterns = [re.compile(pattern) for pattern in patterns]
        self.first: str | None = None
        self.count = 0

    def matches(self, text: str) -> bool:
        return any(pattern.search(text) for pattern in self.patterns)

    def emit(self, record: logging.LogRecord) -> None:
        if self.matches(self.format(record)):  # the message and any traceback logged with it
            self.count += 1
            self.first = self.first or f"{record.name}: {record.getMessage()}"


def exception_chain(failure: BaseException) -> Iterator[BaseException]:
    """The failure and what it was raised from, followed as pytest-rerunfailures and tracebacks follow them."""
    seen: set[int] = set()
    exception: BaseException | None = failure
    while exception is not None and id(exception) not in seen:
        seen.add(id(exception))
        yield exception
        if exception.__cause__ is not None:
            exception = exception.__cause__
        elif not exception.__suppress_context__:
            exception = exception.__context__
        else:
            exception = None


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
    except (Exception, pytest.fail.Exception) as failure:  # pytest.fail and pytest.raises' "DID NOT RAISE" too
        chain = list(exception_chain(failure))
        named = any(records.matches(f"{type(link).__name__}: {link}") for link in chain)
        if records.first is not None and not named:
            also = f" (and {records.count - 1} more)" if records.count > 1 else ""
            chain[-1].__cause__ = StoreDidNotAnswerInTime(f"logged while the test ran: {records.first}{also}")
        raise
    finally:
        root.removeHandler(records)
