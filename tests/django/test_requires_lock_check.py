"""``@requires_lock(Model, check=...)``: the view's access check comes before the lock; the 423 names the holder
only to those who may see it, as the admin does.

Without the check first, a user the view refuses (403) takes the object's lock on each request: its
owner meets a 423 and the admin page goes read-only, naming the intruder.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.urls import path
from django.views import View

from dynalock_django import requires_lock
from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData

from .admin_support import logged_in
from .testapp.models import Account

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock, pytest.mark.urls(__name__)]


def owns(request, account):
    """The accounts app's rule: an account is its namesake user's."""
    return request.user.is_authenticated and account.name == request.user.get_username()


def refuses_others(request, account):
    if not owns(request, account):
        raise PermissionDenied
    return True


def deposit_body(request, pk):
    if not owns(request, Account.objects.get(pk=pk)):  # the view's own check, as views have today
        raise PermissionDenied
    return HttpResponse(f"deposited under token {request.lock_lease.fencing_token}")


deposit = requires_lock(Account, check=owns)(deposit_body)
deposit_raising = requires_lock(Account, check=refuses_others)(deposit_body)


@requires_lock(Account, check=owns)
async def deposit_async(request, pk):
    return HttpResponse("deposited")


@requires_lock(Account, check=owns)
class DepositView(View):
    def post(self, request, pk):
        return HttpResponse("deposited")


urlpatterns = [
    path("deposit/<int:pk>/", deposit),
    path("deposit-raising/<int:pk>/", deposit_raising),
    path("deposit-async/<int:pk>/", deposit_async),
    path("deposit-class/<int:pk>/", DepositView.as_view()),
]
URLS = ["deposit", "deposit-raising", "deposit-async", "deposit-class"]


@pytest.fixture
def account():
    return Account.objects.create(name="olga")


@pytest.fixture
def olga(django_user_model):
    return logged_in(django_user_model.objects.create_user("olga"))


@pytest.fixture
def ivan(django_user_model):
    """Signed in, but not the account's owner: every request of his is refused."""
    return logged_in(django_user_model.objects.create_user("ivan"))


@pytest.mark.django_db(transaction=True)  # the async view's check runs in another thread
@pytest.mark.parametrize("url", URLS)
def test_a_refused_user_gets_403_and_takes_no_lock(url, account, ivan, olga):
    for _ in range(3):
        assert ivan.post(f"/{url}/{account.pk}/").status_code == 403
    assert get_client().get(key_for_instance(account)) is None  # not a single lock item was written
    assert olga.post(f"/{url}/{account.pk}/").status_code == 200


def test_a_refused_user_gets_403_even_while_the_object_is_locked_and_is_not_told_by_whom(account, ivan, other_holder):
    held = other_holder.acquire(key_for_instance(account), data=LockData(purpose="edit", username="olga").to_bytes())
    refused = ivan.post(f"/deposit/{account.pk}/", headers={"accept": "application/json"})
    assert refused.status_code == 403
    assert b"olga" not in refused.content
    held.release()


def test_an_async_check_is_refused_when_decorating():
    async def check(request, obj):
        return True

    with pytest.raises(TypeError, match="check= must be a plain function"):
        requires_lock(Account, check=check)


def hold_as_code(client, account):
    """A job holds the account: its payload names the host and pid, no user."""
    data = LockData(purpose="nightly interest", host="db-worker-7", pid=4242).to_bytes()
    return client.acquire(key_for_instance(account), data=data)


@pytest.mark.django_db(transaction=True)  # the async view reads permissions in another thread
@pytest.mark.parametrize("url", ["deposit", "deposit-async"])
@pytest.mark.parametrize("accept", ["application/json", "text/html"])
def test_a_job_holding_the_lock_is_named_only_to_those_who_may_see_live_locks(
    url, accept, account, olga, other_holder, make_staff
):
    held = hold_as_code(other_holder, account)
    told_nothing = olga.post(f"/{url}/{account.pk}/", headers={"accept": accept})
    viewer = make_staff("victor", "view_lock")
    account.name = "victor"
    account.save()
    told = logged_in(viewer).post(f"/{url}/{account.pk}/", headers={"accept": accept})
    held.release()

    assert told_nothing.status_code == told.status_code == 423
    for secret in ("db-worker-7", "4242", "nightly interest", other_holder.owner_name):
        assert secret not in told_nothing.content.decode()
    assert "db-worker-7 (pid 4242)" in told.content.decode()
    assert "nightly interest" in told.content.decode()


def test_a_user_holding_the_lock_is_named_to_those_who_pass_the_check(account, olga, other_holder):
    held = other_holder.acquire(key_for_instance(account), data=LockData(purpose="edit", username="bob").to_bytes())
    answer = olga.post(f"/deposit/{account.pk}/", headers={"accept": "application/json"})
    held.release()
    assert answer.status_code == 423
    assert answer.json()["holder"] == "bob"
    assert answer.json()["purpose"] == "edit"
