"""The DynamoDB lock protocol, usable without Django.

    from dynalock_django.dynamodb import LockClient

    client = LockClient(boto3.client("dynamodb"), "locks")
    with client.lock("nightly-billing", timeout=10.0) as lease:
        ...

Nothing in this package imports Django.
"""

from .clock import Clock, SystemClock
from .exceptions import (
    ClientClosed,
    ConfigurationError,
    DynalockError,
    DynamoDBError,
    DynamoDBUnavailable,
    InvalidLockRequest,
    LockLost,
    LockNotAcquired,
    LockTimeout,
    TableNotFound,
    TableSchemaError,
)
from .item import LockInfo
from .lease import Lease
from .lock_client import LockClient, ScanPage
from .retries import RECOMMENDED_CONFIG, RetryBudgetWarning
from .schema import TableDescription, validate_table_name

__all__ = [
    "RECOMMENDED_CONFIG",
    "ClientClosed",
    "Clock",
    "ConfigurationError",
    "DynalockError",
    "DynamoDBError",
    "DynamoDBUnavailable",
    "InvalidLockRequest",
    "Lease",
    "LockClient",
    "LockInfo",
    "LockLost",
    "LockNotAcquired",
    "LockTimeout",
    "RetryBudgetWarning",
    "ScanPage",
    "SystemClock",
    "TableDescription",
    "TableNotFound",
    "TableSchemaError",
    "validate_table_name",
]
