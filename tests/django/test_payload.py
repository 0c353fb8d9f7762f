"""LockData: what a Django lock says about its holder, read back from bytes anyone may have written."""

from __future__ import annotations

import json
import os
import socket

import pytest

from dynalock_django.payload import MAX_NESTING, LockData


def marked(**fields):
    return json.dumps({"dynalock": 1, **fields}).encode()


def test_what_is_written_is_read_back():
    data = LockData(purpose="edit", user_id="7", username="alice", tab="t1", extra={"job": 1})
    assert LockData.from_bytes(data.to_bytes()) == data
    assert (data.host, data.pid) == (socket.gethostname(), os.getpid())


@pytest.mark.parametrize(
    "raw",
    [
        None,
        b"",
        b"\xff\xfe not utf-8",
        b"not json",
        b"[1, 2]",
        b'{"purpose": "edit"}',  # no marker: written by someone else
        marked()[:-1] + b', "dynalock": 2}',  # a version this code does not know
        marked(pid="not a number"),
        marked(extra=["not", "a", "dict"]),
    ],
)
def test_bytes_it_does_not_recognise_read_as_nothing(raw):
    assert LockData.from_bytes(raw) is None


def test_missing_and_odd_fields_read_as_their_defaults_or_as_text():
    data = LockData.from_bytes(marked(user_id=7, username=None, purpose=None, pid=None, host=None, tab=3))
    assert data == LockData(purpose="", user_id="7", username=None, host="", pid=0, tab="3", extra={})


def test_the_holder_is_the_user_or_else_the_host_and_process():
    assert LockData(username="alice", host="web-1", pid=42).holder == "alice"
    assert LockData(host="web-1", pid=42).holder == "web-1 (pid 42)"


def test_lone_surrogates_are_made_the_replacement_character_when_read_and_when_written():
    read = LockData.from_bytes(marked(username="a\ud800", purpose="\udfff", extra={"k\ud800": ["\udc00"]}))
    assert read == LockData(purpose="\ufffd", username="a\ufffd", host="", pid=0, extra={"k\ufffd": ["\ufffd"]})
    written = LockData(purpose="from a JSON body \ud800").to_bytes()
    assert b"\\ud800" not in written
    assert LockData.from_bytes(written).purpose == "from a JSON body \ufffd"


def test_invalid_utf8_reads_as_the_replacement_character():
    assert LockData.from_bytes(b'{"dynalock":1,"username":"bob\xed\xa0\x80"}').username == "bob\ufffd\ufffd\ufffd"


def test_extra_nested_too_deep_is_refused_when_made_and_read_as_nothing():
    deep: list[object] = []
    for _ in range(MAX_NESTING + 1):
        deep = [deep]
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_NESTING} levels: keep `extra` flat"):
        LockData(extra={"a": deep})
    raw = json.dumps({"dynalock": 1, "username": "bob", "extra": {"a": deep}}).encode()
    assert LockData.from_bytes(raw) is None
    assert LockData.from_bytes(b'{"dynalock":1,"extra":' + b"[" * 100_000 + b"]" * 100_000 + b"}") is None
    shallow = LockData(extra={"a": [[1, 2], {"b": "c"}]})  # what a holder needs reads back
    assert LockData.from_bytes(shallow.to_bytes()) == shallow
