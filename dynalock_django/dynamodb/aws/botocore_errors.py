"""What a botocore failure means for the protocol.

Three kinds matter: a failed condition (somebody else's state, read it from
the error), a transient failure (throttling, 5xx, time-outs, lost
connections: a write may or may not have been applied), and everything else,
which surfaces to the caller wrapped in our own tree.
"""

from __future__ import annotations

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectionError,
    EndpointConnectionError,
    HTTPClientError,
    NoCredentialsError,
    ReadTimeoutError,
)

from ..exceptions import DynamoDBError, DynamoDBUnavailable, TableNotFound, TableSchemaError

CONDITION_FAILED = "ConditionalCheckFailedException"
TRANSACTION_CANCELLED = "TransactionCanceledException"

_THROTTLING_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "Throttling",
        "LimitExceededException",
        # A transaction with the same ClientRequestToken is still running: ours, resent.
        "TransactionInProgressException",
    }
)
# Cancellation reasons of a transaction that mean DynamoDB is overloaded.
THROTTLED_REASONS = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded"})
_NETWORK_ERRORS = (ConnectionError, HTTPClientError, ReadTimeoutError, ConnectionClosedError, EndpointConnectionError)


def error_code(error: BaseException) -> str | None:
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code", "")) or None
    return None


def is_condition_failed(error: BaseException) -> bool:
    return error_code(error) == CONDITION_FAILED


def is_transient(error: BaseException) -> bool:
    """True when retrying later may succeed (and a write may have been applied)."""
    if isinstance(error, _NETWORK_ERRORS):
        return True
    if isinstance(error, ClientError):
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return error_code(error) in _THROTTLING_CODES or status >= 500
    return False


def is_throttled(error: BaseException) -> bool:
    """DynamoDB refused the request for capacity (itself, or as a transaction's cancellation reason)."""
    code = error_code(error)
    if code == TRANSACTION_CANCELLED:
        assert isinstance(error, ClientError)
        reasons = {reason.get("Code") for reason in error.response.get("CancellationReasons", [])}
        return bool(reasons & THROTTLED_REASONS)
    return code in _THROTTLING_CODES and code != "TransactionInProgressException"


def may_have_landed(error: DynamoDBError) -> bool:
    """A write that failed with ``error`` may have been applied all the same (its answer was lost)."""
    return error.original is not None and is_transient(error.original)


def translate(error: BaseException, *, table_name: str) -> DynamoDBError:
    """Our exception for a botocore failure; raise it ``from error``."""
    code = error_code(error)
    if code == "ResourceNotFoundException":
        return TableNotFound(
            f"DynamoDB table {table_name!r} does not exist in this region and account. "
            "Create it with LockClient.create_table() or `manage.py dynalock createtable`.",
            error,
        )
    if code == "ValidationException" and "key element does not match the schema" in str(error):
        return TableSchemaError(
            f"DynamoDB table {table_name!r} has a different key schema than this client expects "
            "(partition_key_name / sort_key_name). Point the client at a lock table, or "
            "create one with LockClient.create_table().",
            error,
        )
    if isinstance(error, NoCredentialsError) or code in {"UnrecognizedClientException", "InvalidSignatureException"}:
        return DynamoDBError(
            "DynamoDB rejected the credentials. Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "(or AWS_PROFILE), or run on a host with an IAM role.",
            error,
        )
    if code == "AccessDeniedException":
        return DynamoDBError(
            f"Access to DynamoDB table {table_name!r} was denied: grant dynamodb:GetItem, UpdateItem, "
            "DeleteItem, BatchGetItem, Scan and DescribeTable on it to this role.",
            error,
        )
    if is_transient(error):
        return DynamoDBUnavailable(f"DynamoDB is unavailable: {error}", error)
    return DynamoDBError(f"DynamoDB request failed: {error}", error)
