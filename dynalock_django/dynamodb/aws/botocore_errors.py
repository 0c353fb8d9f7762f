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
    ConnectTimeoutError,
    EndpointConnectionError,
    HTTPClientError,
    NoCredentialsError,
    ReadTimeoutError,
)

from ..exceptions import DynamoDBError, DynamoDBUnavailable, TableNotFound, TableSchemaError

CONDITION_FAILED = "ConditionalCheckFailedException"
TRANSACTION_CANCELLED = "TransactionCanceledException"

THROTTLING_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "Throttling",
        "LimitExceededException",
        # A transaction with the same ClientRequestToken is still running: ours, resent.
        "TransactionInProgressException",
        # A global table with strong multi-region consistency (MRSC) refused the write because another
        # region was writing the same item at that moment: nothing was written, trying again may succeed.
        "ReplicatedWriteConflictException",
    }
)
# DynamoDB's words for a request whose key does not fit the table's key schema (DynamoDB Local says the second).
_KEY_SCHEMA_MESSAGES = ("key element does not match the schema", "One of the required keys was not given a value")
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
        return error_code(error) in THROTTLING_CODES or status >= 500
    return False


def timed_out(error: BaseException) -> bool:
    """The request waited its whole connect or read time-out: the endpoint is not answering."""
    return isinstance(error, ReadTimeoutError | ConnectTimeoutError)


def got_no_answer(error: BaseException) -> bool:
    """DynamoDB did not answer (a time-out, a lost connection) or failed inside (5xx): what opens the breaker.

    Throttling is an answer: DynamoDB is there, asking us to slow down.
    """
    if isinstance(error, _NETWORK_ERRORS):
        return True
    if isinstance(error, ClientError):
        return int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)) >= 500
    return False


def is_throttled(error: BaseException) -> bool:
    """DynamoDB refused the request for capacity (itself, or as a transaction's cancellation reason)."""
    code = error_code(error)
    if code == TRANSACTION_CANCELLED:
        assert isinstance(error, ClientError)
        reasons = {reason.get("Code") for reason in error.response.get("CancellationReasons", [])}
        return bool(reasons & THROTTLED_REASONS)
    return code in THROTTLING_CODES and code != "TransactionInProgressException"


def throttling_reason(error: BaseException) -> str:
    """Why DynamoDB throttled the request: the first of the answer's throttling reasons (such as
    ``TableWriteKeyRangeThroughputExceeded``: what, read or write, and which limit), where it carries
    them; else the error's code. Few values either way: fit for a metric's attribute."""
    if isinstance(error, ClientError):
        # ThrottlingException names the field in camel case, the older exceptions in Pascal case.
        for field in ("ThrottlingReasons", "throttlingReasons"):
            reasons = error.response.get(field)
            first = reasons[0] if isinstance(reasons, list) and reasons else None
            reason = first.get("reason") if isinstance(first, dict) else None
            if isinstance(reason, str) and reason.isalnum():
                return reason[:100]
    return error_code(error) or type(error).__name__


def refused_as_invalid(error: DynamoDBError) -> bool:
    """DynamoDB refused the request as invalid (ValidationException), as it refuses a write that would take
    the item past its 400 KB: nothing was written, and the same request would be refused again."""
    return error.original is not None and error_code(error.original) == "ValidationException"


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
    if code == "ValidationException" and any(message in str(error) for message in _KEY_SCHEMA_MESSAGES):
        return TableSchemaError(
            f"DynamoDB table {table_name!r} has a different key schema than this client expects "
            "(partition_key_name / sort_key_name). Point the client at a lock table, or "
            "create one with LockClient.create_table().",
            error,
        )
    if isinstance(error, NoCredentialsError):
        return DynamoDBError(
            "No AWS credentials were found. Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), "
            "or run on a host with an IAM role. A local endpoint accepts any values, such as local and local.",
            error,
        )
    if code in {"UnrecognizedClientException", "InvalidSignatureException"}:
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
