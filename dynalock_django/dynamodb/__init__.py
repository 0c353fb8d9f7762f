"""The DynamoDB lock protocol, usable without Django.

    from dynalock_django.dynamodb import LockClient

    client = LockClient(boto3.client("dynamodb"), "locks")
    with client.lock("nightly-billing", timeout=10.0) as lease:
        ...

Nothing in this package imports Django.
"""

from .aws.botocore_config import RECOMMENDED_CONFIG, RetryBudgetWarning, retry_budget_seconds
from .aws.connection import build_dynamodb_client
from .aws.in_memory import InMemoryDynamoDB
from .aws.in_memory_faults import Faults
from .aws.local_server import LocalDynamoDB
from .aws.store import ScanPage
from .clock import Clock, SystemClock, ThreadsDidNotSettle, VirtualClock
from .counted.permit_set import PermitHolder
from .counted.readers_writer import DEFAULT_MAX_READERS, ReadersWriterLock
from .counted.semaphore import Semaphore
from .exceptions import (
    CircuitOpen,
    ClientClosed,
    ConfigurationError,
    CountInUse,
    DynalockError,
    DynamoDBError,
    DynamoDBUnavailable,
    InvalidLockRequest,
    LockLost,
    LockNotAcquired,
    LockTimeout,
    TableNotFound,
    TableNotReady,
    TableSchemaError,
    WouldDeadlock,
)
from .lambda_lease import lambda_lease, lambda_locked
from .leases.block_end import arelease_at_block_end, release_at_block_end
from .leases.lease import Lease
from .leases.lease_group import LeaseGroup
from .lock_client import LockClient
from .options import MAX_RENEWAL_WORKERS
from .records.record_item import CompletionRecord
from .telemetry import (
    Described,
    botocore_request_hook,
    botocore_response_hook,
    span_event,
)
from .wire.display import printable
from .wire.item import MALFORMED_ITEM_LEASE_SECONDS, MAX_PARTITION_KEY_BYTES, LockInfo
from .wire.permits import MAX_NAME_BYTES as MAX_COUNTED_NAME_BYTES
from .wire.permits import MAX_PERMITS, MAX_READERS, split_permit_key
from .wire.schema import TTL_UNAVAILABLE, TableDescription, validate_table_name
from .wire.waiters import Waiter

__all__ = [
    "DEFAULT_MAX_READERS",
    "MALFORMED_ITEM_LEASE_SECONDS",
    "MAX_COUNTED_NAME_BYTES",
    "MAX_PARTITION_KEY_BYTES",
    "MAX_PERMITS",
    "MAX_READERS",
    "MAX_RENEWAL_WORKERS",
    "RECOMMENDED_CONFIG",
    "TTL_UNAVAILABLE",
    "CircuitOpen",
    "ClientClosed",
    "Clock",
    "CompletionRecord",
    "ConfigurationError",
    "CountInUse",
    "Described",
    "DynalockError",
    "DynamoDBError",
    "DynamoDBUnavailable",
    "Faults",
    "InMemoryDynamoDB",
    "InvalidLockRequest",
    "Lease",
    "LeaseGroup",
    "LocalDynamoDB",
    "LockClient",
    "LockInfo",
    "LockLost",
    "LockNotAcquired",
    "LockTimeout",
    "PermitHolder",
    "ReadersWriterLock",
    "RetryBudgetWarning",
    "ScanPage",
    "Semaphore",
    "SystemClock",
    "TableDescription",
    "TableNotFound",
    "TableNotReady",
    "TableSchemaError",
    "ThreadsDidNotSettle",
    "VirtualClock",
    "Waiter",
    "WouldDeadlock",
    "arelease_at_block_end",
    "botocore_request_hook",
    "botocore_response_hook",
    "build_dynamodb_client",
    "lambda_lease",
    "lambda_locked",
    "printable",
    "release_at_block_end",
    "retry_budget_seconds",
    "span_event",
    "split_permit_key",
    "validate_table_name",
]

# Names once exported here, kept importable for a while: each warns and says what replaced it.
_DEPRECATED = {
    "task_skipped": (
        "dynalock_django.dynamodb.task_skipped is deprecated and counts nothing: run-once tasks are the Django "
        "layer's, which counts their skipped runs itself (dynalock_django.counters.task_skipped)."
    ),
    "idempotency_answered": (
        "dynalock_django.dynamodb.idempotency_answered is deprecated and counts nothing: idempotency keys are the "
        "Django layer's, which counts their answers itself (dynalock_django.counters.idempotency_answered)."
    ),
    "describe_keys_with": (
        "dynalock_django.dynamodb.describe_keys_with is deprecated and has no effect: telemetry names a lock as its "
        "acquire describes it. Pass described=Described(kind, model=...) to acquire (and the other acquiring calls)."
    ),
}


def __getattr__(name: str) -> object:
    if name in _DEPRECATED:
        import warnings

        warnings.warn(_DEPRECATED[name], DeprecationWarning, stacklevel=2)
        return _no_effect
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _no_effect(*args: object) -> None:
    """What a deprecated name gives: a call that does nothing (its warning said what replaced it)."""
    return None
