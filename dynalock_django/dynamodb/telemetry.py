"""OpenTelemetry metrics and spans, when ``opentelemetry-api`` is installed (``dynalock-django[otel]``); else nothing.

Without the API nothing here imports it, the decorators return what they decorate unchanged and the
others return at once: the acquire path costs what it did (``python -m tests.benchmarks.telemetry``).
With the API but no SDK (its own proxy or no-op providers set), the wrapped
methods run unwrapped: no span, attribute or metric is built for nobody to
record, until an SDK's provider is set. The meter
and tracer are named ``dynalock_django``; docs/operations.md lists the
instruments and what to alert on.

Attributes are low-cardinality on purpose: an outcome, a result, a cause,
and the lock's kind and model as its acquire's caller described it (a
:class:`Described`, kept on the lease; the Django layer passes one with each
acquire). A key appears on a span only when the description shows it (the
Django setting ``TRACE_KEYS``), and never on a metric.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, ParamSpec, TypeVar

from .exceptions import DynamoDBError, LockLost, LockNotAcquired, LockTimeout

try:
    from opentelemetry import metrics, trace
except ImportError:  # the extra is not installed: everything below is a no-op
    metrics = trace = None  # type: ignore[assignment]

ENABLED = trace is not None
NAME = "dynalock_django"

P = ParamSpec("P")
R = TypeVar("R")

Outcome = Literal["acquired", "timeout", "unavailable", "refused"]
LostCause = Literal["expired", "taken_over", "released_by_operator", "unavailable"]
RequestResult = Literal["ok", "condition_failed", "throttled", "error"]
# Seconds: how long an acquire waits (a refused try is a few milliseconds) and how long a lock is held.
ACQUIRE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
HOLD_BUCKETS = (0.01, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 14400.0)
# Set while a span of ours is current, so the botocore hook knows a refusal there was expected.
_in_operation: contextvars.ContextVar[bool] = contextvars.ContextVar("dynalock_in_operation", default=False)


@dataclass(frozen=True)
class Described:
    """How telemetry names a lock: its kind and a row's model label (few values each), and its key on spans only
    when ``key`` is given (the Django setting ``TRACE_KEYS``). Passed with an acquire; its lease keeps it."""

    kind: str
    model: str | None = None
    key: str | None = None

    def as_kind(self, kind: str) -> Described:
        """The same lock's items of another kind (a semaphore's permits, a row's readers)."""
        return Described(kind, self.model, self.key)

    def for_metrics(self) -> dict[str, str]:
        return {"dynalock.kind": self.kind} | ({"dynalock.model": self.model} if self.model is not None else {})

    def for_spans(self) -> dict[str, str]:
        return self.for_metrics() | ({"dynalock.key": self.key} if self.key is not None else {})


def _for_metrics(described: Described | None) -> dict[str, str]:
    return {} if described is None else described.for_metrics()


def _for_spans(described: Described | None, lock_count: int | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {} if described is None else described.for_spans()
    if lock_count is not None:
        attributes["dynalock.lock_count"] = lock_count
    return attributes


if ENABLED:
    _meter = metrics.get_meter(NAME)
    _tracer = trace.get_tracer(NAME)
    _acquire_duration = _meter.create_histogram(
        "dynalock.acquire.duration",
        unit="s",
        description="How long an acquire took, by outcome (acquired, timeout, unavailable, refused).",
        explicit_bucket_boundaries_advisory=list(ACQUIRE_BUCKETS),
    )
    _hold_duration = _meter.create_histogram(
        "dynalock.hold.duration",
        unit="s",
        description="How long a lock was held, from its grant to its release or loss.",
        explicit_bucket_boundaries_advisory=list(HOLD_BUCKETS),
    )
    _locks_held = _meter.create_up_down_counter(
        "dynalock.locks.held", unit="{lock}", description="Locks this process holds now."
    )
    _acquire_pending = _meter.create_up_down_counter(
        "dynalock.acquire.pending", unit="{call}", description="Acquires waiting now."
    )
    _lease_lost = _meter.create_counter(
        "dynalock.lease.lost", unit="{lease}", description="Leases lost before their release, by cause."
    )
    _release_failed = _meter.create_counter(
        "dynalock.lease.release_failed",
        unit="{lease}",
        description="Releases DynamoDB did not confirm: each lock frees itself within one lease.",
    )
    _takeovers = _meter.create_counter(
        "dynalock.takeovers", unit="{lock}", description="Locks this process took over from a holder that stopped."
    )
    _requests = _meter.create_counter(
        "dynalock.requests",
        unit="{request}",
        description="DynamoDB requests, by operation and result (throttled ones also by reason).",
    )


# Where the API's own providers live (the proxy set until an SDK is, and the no-op): none records.
_API_MODULES = ("opentelemetry.trace", "opentelemetry.metrics")
_sdk_set = False
_api_providers: tuple[object, object] | None = None  # the API's own providers, as the last look found them
# The API modules' globals its two setters write: both still None, the getters (which look up an environment
# variable each call: ten a lock) would answer their proxies again. A provider named in the environment is set
# already, loaded when this module asked for its tracer and meter above. False: an API keeping them elsewhere.
_TRACE_SET: dict[str, Any] = trace.get_tracer_provider.__globals__ if ENABLED else {}
_METER_SET: dict[str, Any] = metrics.get_meter_provider.__globals__ if ENABLED else {}
_SET = "_TRACER_PROVIDER" in _TRACE_SET and "_METER_PROVIDER" in _METER_SET


def _sdk_recording() -> bool:
    """Whether an SDK's tracer or meter provider is set: else the API's own answer everything with a no-op.

    Asked on every wrapped call until it is yes, then never again (a global provider is set once per
    process): a look at two globals, where a span through the API's proxies costs tens of microseconds.
    """
    global _sdk_set, _api_providers
    if _sdk_set:
        return True
    if _SET and _TRACE_SET["_TRACER_PROVIDER"] is None and _METER_SET["_METER_PROVIDER"] is None:
        return False  # no provider set at all
    providers = (trace.get_tracer_provider(), metrics.get_meter_provider())
    if providers != _api_providers:  # the same proxies as last time (compared by identity): still none
        _sdk_set = any(not type(provider).__module__.startswith(_API_MODULES) for provider in providers)
        _api_providers = None if _sdk_set else providers
    return _sdk_set


def _described_of(args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[Described | None, int | None]:
    """What a release or takeover ``(self, target, ...)`` is about: the description its call or lease carries, and
    how many locks a group's release counts (None: one). A group's leases share one description or none."""
    target = args[1]
    if isinstance(target, Sequence):
        found = {getattr(each, "described", None) for each in target}
        return (found.pop() if len(found) == 1 else None), len(target)
    given = kwargs.get("described")
    if given is None:
        given = next(
            (arg.described for arg in args[1:] if isinstance(getattr(arg, "described", None), Described)), None
        )
    return given, None


def _outcome(result: object, error: BaseException | None, timeout: object) -> Outcome | None:
    if error is None:
        return "refused" if result is None else "acquired"
    if isinstance(error, LockTimeout):
        return "refused" if timeout == 0 else "timeout"  # timeout=0 is a try (the admin's, a non-blocking lock)
    if isinstance(error, DynamoDBError):
        return "unavailable"
    return None  # a closed client, a bad argument: no outcome of DynamoDB's


@dataclass
class _Acquire:
    """One acquire being measured: its span, description and start."""

    span: Any
    metric_attributes: dict[str, str]
    started: float

    def end(self, result: object, error: BaseException | None, timeout: object) -> None:
        outcome = _outcome(result, error, timeout)
        metric_attributes = self.metric_attributes
        _acquire_pending.add(-1, metric_attributes)
        if outcome is not None:
            _acquire_duration.record(
                time.perf_counter() - self.started, {**metric_attributes, "dynalock.outcome": outcome}
            )
            self.span.set_attribute("dynalock.outcome", outcome)
        if outcome in (None, "unavailable") and error is not None:
            self.span.record_exception(error)
            self.span.set_status(trace.StatusCode.ERROR, f"{type(error).__name__}: {error}")


class _Measured:
    """``with``: one acquire ``(self, request)`` measured from its start (span, pending count) to its outcome.

    The wrapped call stores what it returned in :attr:`result`; whatever it raised reaches :meth:`__exit__`.
    """

    def __init__(self, name: str, request: Any) -> None:
        described = request.options.described
        attributes = _for_spans(described, len(request.lock_ids) if request.many else None)
        self._timeout = request.timeout
        self._scope = _tracer.start_as_current_span(
            name, attributes=attributes, record_exception=False, set_status_on_exception=False
        )
        span = self._scope.__enter__()
        _acquire_pending.add(1, _for_metrics(described))
        self._acquire = _Acquire(span, _for_metrics(described), time.perf_counter())
        self.result: object = None

    def __enter__(self) -> _Measured:
        self._token = _in_operation.set(True)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, error: BaseException | None, traceback: object) -> None:
        _in_operation.reset(self._token)
        self._acquire.end(self.result, error, self._timeout)
        self._scope.__exit__(None, None, None)


def traced_acquire(name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Measure an acquiring method ``(self, request)`` (an :class:`.AcquireRequest`), sync or async.

    Opens span ``name`` around it (the requests it sends nest below), counts
    it pending while it runs, and records its duration by outcome: a lease or
    leases (acquired), None (refused), LockTimeout (timeout; refused when the
    timeout was 0), DynamoDBError (unavailable, the span's status an error).
    """

    def decorate(method: Callable[P, R]) -> Callable[P, R]:
        if not ENABLED:
            return method
        if inspect.iscoroutinefunction(method):

            @functools.wraps(method)
            async def traced_coroutine(*args: P.args, **kwargs: P.kwargs) -> R:
                if not _sdk_recording():
                    return await method(*args, **kwargs)  # type: ignore[no-any-return]
                with _Measured(name, args[1]) as measured:
                    result = measured.result = await method(*args, **kwargs)
                    return result  # type: ignore[no-any-return]

            return traced_coroutine  # type: ignore[return-value]

        @functools.wraps(method)
        def traced(*args: P.args, **kwargs: P.kwargs) -> R:
            if not _sdk_recording():
                return method(*args, **kwargs)
            with _Measured(name, args[1]) as measured:
                result = measured.result = method(*args, **kwargs)
                return result

        return traced

    return decorate


def traced(name: str, **fixed: Any) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Open span ``name`` around a method ``(self, lease or lock or leases, ...)``: a release, a takeover.

    ``fixed`` attributes are added. A refusal (LockNotAcquired, LockLost) is an
    outcome, recorded as ``dynalock.outcome``; only a DynamoDB failure or a
    bug makes the span's status an error.
    """

    def decorate(method: Callable[P, R]) -> Callable[P, R]:
        if not ENABLED:
            return method

        @functools.wraps(method)
        def traced_method(*args: P.args, **kwargs: P.kwargs) -> R:
            if not _sdk_recording():
                return method(*args, **kwargs)
            attributes = {**_for_spans(*_described_of(args, kwargs)), **fixed}
            with _tracer.start_as_current_span(
                name, attributes=attributes, record_exception=False, set_status_on_exception=False
            ) as span:
                token = _in_operation.set(True)
                try:
                    return method(*args, **kwargs)
                except DynamoDBError as error:
                    span.record_exception(error)
                    span.set_status(trace.StatusCode.ERROR, f"{type(error).__name__}: {error}")
                    raise
                except Exception as error:
                    if isinstance(error, LockNotAcquired | LockLost):
                        span.set_attribute("dynalock.outcome", "refused")
                    else:
                        span.record_exception(error)
                        span.set_status(trace.StatusCode.ERROR, f"{type(error).__name__}: {error}")
                    raise
                finally:
                    _in_operation.reset(token)

        return traced_method

    return decorate


class Holding:
    """A granted lease as telemetry counts it: since when, and described how."""

    __slots__ = ("attributes", "granted")

    def __init__(self, attributes: dict[str, str]) -> None:
        self.attributes = attributes
        self.granted = time.perf_counter()


def lease_granted(described: Described | None, *, taken_over: bool) -> Holding | None:
    """A lease was granted (``taken_over``: from a holder that stopped renewing); keep what returns on its record."""
    if not ENABLED or not _sdk_recording():
        return None
    attributes = _for_metrics(described)
    _locks_held.add(1, attributes)
    if taken_over:
        _takeovers.add(1, attributes)
        span = trace.get_current_span()
        if span.is_recording():
            span.add_event("dynalock.takeover", {"dynalock.lock_count": 1})
    return Holding(attributes)


def lease_ended(holding: Holding | None, lost: LostCause | None = None, *, release_failed: bool = False) -> None:
    """The lease ``holding`` measures was released (``release_failed``: without DynamoDB's answer), or ``lost``."""
    if holding is None:
        return
    _locks_held.add(-1, holding.attributes)
    _hold_duration.record(time.perf_counter() - holding.granted, holding.attributes)
    if lost is not None:
        _lease_lost.add(1, {**holding.attributes, "dynalock.cause": lost})
    if release_failed:
        _release_failed.add(1, holding.attributes)


def request(operation: str, result: RequestResult, reason: str | None = None) -> None:
    """One DynamoDB request (``operation`` as DynamoDB names it) ended with ``result`` (throttled: for ``reason``)."""
    if ENABLED and _sdk_recording():
        attributes = {"dynalock.operation": operation, "dynalock.result": result}
        if reason is not None:
            attributes["dynalock.reason"] = reason
        _requests.add(1, attributes)


def span_event(name: str, attributes: Mapping[str, str | int | bool] | None = None) -> None:
    """Add event ``name`` to the current span, if one is recording (the admin's edit-lock events)."""
    if ENABLED and _sdk_recording():
        span = trace.get_current_span()
        if span.is_recording():
            span.add_event(name, dict(attributes or {}))


# What DynamoDB answers a refused condition with (the aws wing's botocore_errors names them too; this
# module sits below it and reads only the response's dict).
_CONDITION_FAILED = "ConditionalCheckFailedException"
_TRANSACTION_CANCELLED = "TransactionCanceledException"
_REFUSED_REASONS = frozenset({"None", "ConditionalCheckFailed"})


def botocore_request_hook(span: Any, service_name: str, operation_name: str, api_params: Mapping[str, Any]) -> None:
    """For ``BotocoreInstrumentor().instrument(request_hook=...)``: names the tables of a TransactWriteItems.

    The instrumentation records ``aws.dynamodb.table_names`` for single-item
    requests only; this adds it for transactions (``acquire_many``).
    """
    if service_name != "dynamodb" or operation_name != "TransactWriteItems" or not span.is_recording():
        return
    tables = {
        write.get("TableName")
        for item in api_params.get("TransactItems", [])
        for write in item.values()
        if isinstance(write, Mapping)
    }
    span.set_attribute("aws.dynamodb.table_names", sorted(table for table in tables if isinstance(table, str)))


def botocore_response_hook(span: Any, service_name: str, operation_name: str, result: Mapping[str, Any] | None) -> None:
    """For ``BotocoreInstrumentor().instrument(response_hook=...)``: a lock's expected refusal is not an error.

    The instrumentation marks every ``ConditionalCheckFailedException`` (a
    contended acquire, a release after a takeover) and every transaction
    cancelled by failed conditions as an ERROR span. Inside a dynalock span
    (an acquire, release or takeover) that refusal is the answer the
    protocol asked for: the span's status becomes OK and it gets
    ``dynalock.result = condition_failed``. Elsewhere (a heartbeat's renewal
    refused: a lost lease; other tables) the status stays as it was.
    """
    if service_name != "dynamodb" or not _in_operation.get() or result is None or not span.is_recording():
        return
    error = result.get("Error", {})
    code = error.get("Code")
    reasons = {str(reason.get("Code")) for reason in result.get("CancellationReasons", [])}
    if code == _CONDITION_FAILED or (code == _TRANSACTION_CANCELLED and reasons and reasons <= _REFUSED_REASONS):
        span.set_status(trace.StatusCode.OK)
        span.set_attribute("dynalock.result", "condition_failed")
