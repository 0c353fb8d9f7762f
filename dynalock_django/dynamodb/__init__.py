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
    botocore_request_hook,
    botocore_response_hook,
    describe_keys_with,
    idempotency_answered,
    span_event,
    task_skipped,
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
    "describe_keys_with",
    "idempotency_answered",
    "lambda_lease",
    "lambda_locked",
    "printable",
    "release_at_block_end",
    "retry_budget_seconds",
    "span_event",
    "split_permit_key",
    "task_skipped",
    "validate_table_name",
]
