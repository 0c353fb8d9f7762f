"""The boto3 DynamoDB client of a lock client: built from options, made lazily, rebuilt after fork, closed.

Only this package imports boto3 and botocore; :func:`build_dynamodb_client`
is how anything else (the Django layer's settings) gets a client.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import boto3
import botocore.session
from botocore.exceptions import NoRegionError

from ..exceptions import ConfigurationError
from .botocore_config import config_from_options

if TYPE_CHECKING:
    from botocore.config import Config
    from mypy_boto3_dynamodb import DynamoDBClient

ClientFactory = Callable[[], "DynamoDBClient"]


# boto3 reads AWS_DEFAULT_REGION (AWS_REGION only inside AWS's own runtimes), then the profile's config file.
NO_REGION = (
    "No AWS region is set. Give one: REGION_NAME in the DYNALOCK setting (region_name= for a LockClient), "
    "or the AWS_DEFAULT_REGION environment variable, or region in ~/.aws/config."
)
LOCAL_REGION = " A local endpoint accepts any region, such as us-east-1."


def build_dynamodb_client(
    *, region_name: str | None = None, endpoint_url: str | None = None, config: Mapping[str, Any] | None = None
) -> DynamoDBClient:
    """A new boto3 DynamoDB client; credentials come from boto3's default chain.

    ``config`` holds botocore ``Config`` arguments, such as those of
    ``RECOMMENDED_CONFIG``; ConfigurationError names a wrong one.
    """
    return _new_client(region_name, endpoint_url, None if config is None else config_from_options(config))


@functools.cache
def shared_service_models() -> Any:
    """botocore's loader of service models, made by the process's first session and shared by the rest."""
    return botocore.session.get_session().get_component("data_loader")


def new_session() -> boto3.session.Session:
    """A new boto3 session that reuses the service models this process already loaded (``AWS_DATA_PATH`` is read once).

    A new session would read botocore's JSON models again (about 0.15 s of CPU); one that shares the
    loader makes its client in about 0.02 s. Each client still gets a session of its own, so
    credentials and region are resolved anew, from the environment as it is then.
    """
    core = botocore.session.get_session()
    loader = shared_service_models()
    core.register_component("data_loader", loader)
    session = boto3.session.Session(botocore_session=core)
    # Each boto3 session appends its data folder to the loader's search paths: the shared list would grow
    # by one a client for the life of the process.
    loader.search_paths[:] = dict.fromkeys(loader.search_paths)
    return session


def _new_client(region_name: str | None, endpoint_url: str | None, config: Config | None) -> DynamoDBClient:
    try:
        return new_session().client("dynamodb", region_name=region_name, endpoint_url=endpoint_url, config=config)
    except NoRegionError as error:
        raise ConfigurationError(NO_REGION + (LOCAL_REGION if endpoint_url else "")) from error


class Connection:
    """The boto3 client this process uses: given, or made on first use by a factory.

    ``on_new_client`` sees every client before first use (the retry-budget
    warning). After a fork, a given client is replaced by one with its region,
    endpoint and config, and credentials from boto3's default chain.
    """

    def __init__(
        self, dynamodb: DynamoDBClient | ClientFactory, *, on_new_client: Callable[[DynamoDBClient], None]
    ) -> None:
        self._on_new_client = on_new_client
        self._mutex = threading.Lock()
        self._factory: ClientFactory | None = dynamodb if callable(dynamodb) else None
        self._client: DynamoDBClient | None = None if callable(dynamodb) else dynamodb
        self._owns_client = self._factory is not None
        if self._client is not None:
            on_new_client(self._client)

    @property
    def client(self) -> DynamoDBClient:
        client = self._client
        if client is None:
            assert self._factory is not None
            with self._mutex:
                if self._client is None:
                    self._client = self._factory()
                    self._on_new_client(self._client)
                client = self._client
        return client

    def close(self) -> None:
        """Close the client's connections if this object made it (a given client is its owner's)."""
        if self._owns_client and self._client is not None:
            self._client.close()

    def after_fork_in_child(self) -> None:
        """The parent's connections stay the parent's: the child makes its own on first use."""
        self._mutex = threading.Lock()
        if self._client is not None and self._factory is None:
            self._factory = _rebuild_factory(self._client)
            self._owns_client = True
        if self._factory is not None:
            self._client = None


def _rebuild_factory(client: DynamoDBClient) -> ClientFactory:
    region, endpoint, config = client.meta.region_name, client.meta.endpoint_url, client.meta.config
    return lambda: _new_client(region, endpoint, config)
