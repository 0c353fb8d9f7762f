"""The boto3 client and its botocore Config, built by the protocol for anyone (the Django layer's settings)."""

from __future__ import annotations

import botocore.loaders
import pytest

from dynalock_django.dynamodb import ConfigurationError, LockClient, build_dynamodb_client, retry_budget_seconds
from dynalock_django.dynamodb.aws.connection import shared_service_models

from ...dynamodb_support import REGION

pytestmark = [pytest.mark.stores, pytest.mark.requires("http_endpoint")]

RECOMMENDED = {"connect_timeout": 1, "read_timeout": 2, "retries": {"mode": "standard", "total_max_attempts": 3}}


def test_build_dynamodb_client_uses_the_endpoint_region_and_config(endpoint_url, table_name, key):
    dynamodb = build_dynamodb_client(region_name=REGION, endpoint_url=endpoint_url, config=RECOMMENDED)

    assert (dynamodb.meta.region_name, dynamodb.meta.endpoint_url) == (REGION, endpoint_url)
    assert (dynamodb.meta.config.connect_timeout, dynamodb.meta.config.read_timeout) == (1, 2)
    with LockClient(dynamodb, table_name) as client, client.lock(key) as lease:
        assert client.get(key).fencing_token == lease.fencing_token


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"no_such_option": 1}, "no_such_option"),
        ({"retries": 3}, "no attribute 'items'"),
        ({"retries": {"mode": "bogus"}}, "must be one of"),
    ],
)
def test_a_bad_config_option_is_a_configuration_error_naming_it(options, message):
    with pytest.raises(ConfigurationError, match=message):
        build_dynamodb_client(region_name=REGION, config=options)
    with pytest.raises(ConfigurationError, match=message):
        retry_budget_seconds(options)


def test_retry_budget_is_every_attempt_timing_out_plus_the_longest_backoffs():
    # botocore's defaults: 4 attempts of 60 s connect + 60 s read, backoffs of 1, 2 and 4 s.
    assert retry_budget_seconds({}) == 4 * 120 + 1 + 2 + 4
    assert retry_budget_seconds(RECOMMENDED) == 3 * (1 + 2) + 1 + 2
    with pytest.raises(ConfigurationError, match="must be numbers"):
        retry_budget_seconds({"connect_timeout": "soon"})


class Signed(Exception):
    """Raised by a hook as a request is about to be sent: what it was signed with, and nothing sent."""


def signing_key(client) -> str:
    """The access key a client signs its requests with, read from the Authorization header it would send."""

    def stop(request, **kwargs):
        raise Signed(str(request.headers["Authorization"]))

    client.meta.events.register("before-send.dynamodb.ListTables", stop)
    with pytest.raises(Signed) as signed:
        client.list_tables()
    return str(signed.value).split("Credential=")[1].split("/")[0]


def test_each_client_reads_credentials_and_region_from_the_environment_as_it_is_then(monkeypatch):
    # Clients share the loaded service models, not a session: what boto3 resolves is resolved anew.
    build_dynamodb_client(region_name=REGION)  # the models are loaded by now
    files_read = []
    read = botocore.loaders.JSONFileLoader.load_file
    monkeypatch.setattr(
        botocore.loaders.JSONFileLoader, "load_file", lambda self, path: files_read.append(path) or read(self, path)
    )
    clients = []
    for access_key, region in (("AKIAFIRST", "eu-west-1"), ("AKIASECOND", "ap-south-1")):
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", access_key)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
        monkeypatch.setenv("AWS_DEFAULT_REGION", region)
        clients.append(build_dynamodb_client())
    first, second = clients
    assert files_read == []  # no service model read again
    assert (signing_key(first), signing_key(second)) == ("AKIAFIRST", "AKIASECOND")
    assert (first.meta.region_name, second.meta.region_name) == ("eu-west-1", "ap-south-1")


def test_the_shared_service_models_search_paths_do_not_grow_with_each_client():
    build_dynamodb_client(region_name=REGION)
    paths = list(shared_service_models().search_paths)
    for _ in range(5):
        build_dynamodb_client(region_name=REGION)
    assert shared_service_models().search_paths == paths
