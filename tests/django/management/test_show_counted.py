"""manage.py dynalock show: a semaphore's occupancy and its permits, a row's readers under the row."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from dynalock_django import lock_object, semaphore
from dynalock_django.keys import key_for_instance

from ...dynamodb_support import unique
from ..admin_support import put_item
from ..testapp.models import Account

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


def show(*target: str) -> list[str]:
    out = StringIO()
    call_command("dynalock", "show", *target, stdout=out)
    return out.getvalue().splitlines()


def test_show_tells_a_semaphores_occupancy_and_each_permit_in_use():
    name = unique("exports")
    first, second = semaphore(name, 5, purpose="export"), semaphore(name, 5)
    permits = sorted([first.acquire().permit, second.acquire().permit])
    try:
        lines = show(name)
    finally:
        first.release()
        second.release()
    assert lines[0] == " semaphore  2 of 5 in use"
    assert [line.split()[:2] for line in lines[1:]] == [["permit", str(permit)] for permit in permits]
    assert all(line.endswith("held") for line in lines[1:])
    with pytest.raises(CommandError, match="no permit or reader of it in use"):
        show(name)


def test_show_of_a_row_lists_its_readers_below_its_own_item():
    account = Account.objects.create(name="Acme")
    with lock_object(account):  # the row's own item, released after
        pass
    with lock_object(account, shared=True) as reader:
        lines = show("testapp.account", str(account.pk))
    assert lines[0] == f"       key  {key_for_instance(account)}"
    assert "     state  released" in lines
    assert "   readers  1" in lines
    assert lines[-1].split()[:2] == ["reader", str(reader.permit)]
    assert lines[-1].endswith("held")


def test_show_of_a_name_never_locked_is_still_an_error():
    with pytest.raises(CommandError, match="No lock item"):
        show(unique("never-locked"))


def test_show_escapes_what_the_permit_items_say_and_does_not_trust_their_count():
    name = unique("exports")
    for index, permits in ((0, "5"), (1, "6")):
        put_item(
            {
                "key": {"S": f"{name}#permit-{index}"},
                "ownerName": {"S": "evil\x1b[2J\n"},
                "leaseDuration": {"S": "3600000"},
                "recordVersionNumber": {"S": f"rvn-{index}"},
                "fencingToken": {"N": "7"},
                "permits": {"N": permits},
            }
        )
    lines = show(name)
    assert lines[0] == " semaphore  2 in use"
    assert all("\x1b" not in line for line in lines)
    assert len(lines) == 3  # the owner's newline did not add a line
