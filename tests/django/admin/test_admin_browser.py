"""The admin's edit locks in a real browser: Debian's chromium driven by Playwright, two staff users at once.

Screenshots go to ``var/screenshots/`` (docs/images/ holds the best of them).
Without chromium these tests are skipped, unless ``DYNALOCK_REQUIRE_BROWSER``
is set (CI sets it): then they fail.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.test import override_settings

from dynalock_django.client import get_client
from dynalock_django.conf import DEFAULTS
from dynalock_django.keys import key_for_instance
from testproject.desk.admin import CustomerAdmin
from testproject.desk.models import Customer

from ..admin_support import DESK_EDITOR, logged_in
from ..browser import CHROMIUM, PAGE_PATIENCE_MS, launch_chromium

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.uses_dynalock]

EDIT_LEASE = 3.0  # the page renews every second
SCREENSHOTS = Path(__file__).resolve().parents[3] / "var" / "screenshots"

if not Path(CHROMIUM).exists():
    if os.environ.get("DYNALOCK_REQUIRE_BROWSER"):
        raise RuntimeError(f"{CHROMIUM} is missing: apt-get install chromium chromium-driver")
    pytest.skip(f"no browser at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)


@pytest.fixture(scope="module", autouse=True)
def _database_before_live_server(django_db_setup: None) -> None:
    """The test database exists before the live server starts: its threads then open their own
    connections to it (a file, see tests/settings.py) rather than share the test's connection."""


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    # Playwright's sync API keeps an event loop in this thread while the browser is open; the ORM
    # calls of the tests (and of their database teardown) are plain synchronous code all the same.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with launch_chromium() as browser:
            yield browser


@pytest.fixture
def edit_locks(dynalock: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(CustomerAdmin, "edit_lock_poll_seconds", 0.5)
    # The page is served by threads beside the test's own work: the default time-outs, not the suite's
    # tight ones, so that a busy machine does not turn a slow answer into a read-only page.
    defaults = {name: DEFAULTS[name] for name in ("LEASE_DURATION", "HEARTBEAT_PERIOD", "BOTO_CONFIG")}
    with override_settings(DYNALOCK={**dynalock, **defaults, "EDIT_LEASE_DURATION": EDIT_LEASE}):
        yield


@pytest.fixture
def customer(edit_locks: None) -> Customer:
    customer = Customer.objects.create(name="Acme Corporation", email="ops@acme.example", plan="enterprise")
    customer.addresses.create(street="1 Road Runner Way", city="Phoenix")
    return customer


@pytest.fixture
def staff_page(chromium: Any, live_server: Any, make_staff: Callable[..., Any]) -> Iterator[Callable[..., Any]]:
    """A browser tab logged in as a new staff user who may edit customers (and ``extra`` permissions)."""
    contexts = []

    def open_as(username: str, *extra: str) -> Any:
        client = logged_in(make_staff(username, *DESK_EDITOR, *extra))
        context = chromium.new_context(viewport={"width": 1200, "height": 800})
        context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}])
        contexts.append(context)
        return context.new_page()

    yield open_as
    for context in contexts:
        context.close()


def change_url(live_server: Any, customer: Customer) -> str:
    return f"{live_server.url}/admin/desk/customer/{customer.pk}/change/"


def lock_of(customer: Customer) -> Any:
    return get_client().get(key_for_instance(customer))


def wait_until(condition: Callable[[], bool], timeout: float) -> float:
    """Seconds until ``condition()`` held; fails after ``timeout``."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"still not true after {timeout}s")
        time.sleep(0.02)
    return time.monotonic() - started


def screenshot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def banner(page: Any) -> Any:
    return page.locator("#dynalock-banner")


def test_alice_edits_bob_waits_then_edits_when_she_saves(staff_page, live_server, customer):
    alice, bob = staff_page("alice"), staff_page("bob")
    url = change_url(live_server, customer)
    alice.goto(url)
    assert alice.locator("input[name=_save]").is_visible()
    bob.goto(url)
    bob_banner = banner(bob)
    assert "Being edited by alice since" in bob_banner.inner_text()
    assert bob.locator("input[name=_save]").count() == 0  # read-only: nothing to save with
    assert bob.locator("input[name=name]").count() == 0
    assert "1 Road Runner Way" in bob.content()  # the inline, read-only
    screenshot(bob, "banner-read-only")

    # Alice's page keeps the lock alive well past its lease.
    alice.wait_for_timeout(EDIT_LEASE * 1000 * 1.5)
    assert not lock_of(customer).is_released
    assert "Being edited by alice" in bob_banner.inner_text()

    alice.fill("input[name=name]", "Acme Corp.")
    alice.click("input[name=_save]")
    alice.wait_for_url("**/admin/desk/customer/")
    customer.refresh_from_db()
    assert customer.name == "Acme Corp."
    alices_token = customer.fencing_token

    bob_banner.get_by_text("alice finished editing.").wait_for(timeout=PAGE_PATIENCE_MS)
    screenshot(bob, "banner-free")
    bob.click("#dynalock-reload")
    bob.locator("input[name=_save]").wait_for(timeout=PAGE_PATIENCE_MS)
    bob.fill("input[name=name]", "Acme Corporation")
    bob.click("input[name=_save]")
    bob.wait_for_url("**/admin/desk/customer/")
    customer.refresh_from_db()
    assert customer.name == "Acme Corporation"
    assert customer.fencing_token > alices_token  # written under bob's lock, a newer one


def test_closing_the_tab_frees_the_lock_within_a_few_seconds(staff_page, live_server, customer):
    alice = staff_page("alice")
    alice.goto(change_url(live_server, customer))
    assert not lock_of(customer).is_released
    alice.close(run_before_unload=True)
    freed_after = wait_until(lambda: lock_of(customer).is_released, timeout=3.0)
    print(f"tab closed -> lock released after {freed_after * 1000:.0f} ms")


def test_a_reload_keeps_the_lock_in_the_same_tab(staff_page, live_server, customer):
    alice = staff_page("alice")
    alice.goto(change_url(live_server, customer))
    first = lock_of(customer)
    alice.reload()
    assert alice.locator("input[name=_save]").is_visible()
    assert "another tab" not in banner(alice).inner_text()
    alice.wait_for_timeout(500)  # the old page's release, if it comes after, must change nothing
    after = lock_of(customer)
    assert not after.is_released
    assert after.fencing_token > first.fencing_token  # handed to the new page under a new ticket
    alice.fill("input[name=name]", "Reloaded")
    alice.click("input[name=_continue]")
    alice.wait_for_load_state()
    assert alice.locator("input[name=_save]").is_visible()  # save and continue keeps editing
    assert not lock_of(customer).is_released
    customer.refresh_from_db()
    assert customer.name == "Reloaded"


def test_alice_deletes_from_her_page_while_bob_cannot(staff_page, live_server, customer):
    alice, bob = staff_page("alice"), staff_page("bob")
    url = change_url(live_server, customer)
    alice.goto(url)
    bob.goto(url)
    assert bob.locator("a.deletelink").count() == 0  # bob's read-only page offers no deletion
    bob.goto(url.replace("/change/", "/delete/"))
    assert "Nothing was deleted." in bob.locator(".messagelist").inner_text()
    alice.click("a.deletelink")  # her page's release races the delete page: her own lock does not stop her
    alice.click("input[type=submit]")
    alice.wait_for_url("**/admin/desk/customer/")
    assert not Customer.objects.filter(pk=customer.pk).exists()
    assert lock_of(customer).is_released


def test_a_second_tab_of_the_same_user_can_take_over(staff_page, live_server, customer):
    first = staff_page("alice")
    url = change_url(live_server, customer)
    first.goto(url)
    second = first.context.new_page()
    second.goto(url)
    assert "You are editing this in another tab" in banner(second).inner_text()
    second.click("#dynalock-take-over")
    second.locator("input[name=_save]").wait_for(timeout=PAGE_PATIENCE_MS)
    banner(first).get_by_text("You are editing this in another tab now").wait_for(timeout=PAGE_PATIENCE_MS)
    assert first.locator("input[name=_save]").is_disabled()


def test_force_release_from_the_live_locks_page_shows_on_alices_page_and_in_the_log(staff_page, live_server, customer):
    alice = staff_page("alice")
    alice.goto(change_url(live_server, customer))
    carol = staff_page("carol", "view_lock", "force_release")
    carol.goto(f"{live_server.url}/admin/dynalock_django/lock/")
    assert "Acme Corporation" in carol.locator("#result_list").inner_text()
    screenshot(carol, "live-locks")
    carol.click("text=Release…")
    carol.click("input[type=submit]")
    carol.wait_for_url("**/admin/dynalock_django/lock/")
    banner(alice).get_by_text("carol released your edit lock").wait_for(timeout=PAGE_PATIENCE_MS)
    assert alice.locator("input[name=_save]").is_disabled()
    screenshot(alice, "banner-lost")
    entry = LogEntry.objects.get()
    assert (entry.object_id, entry.user.username) == (str(customer.pk), "carol")


def test_take_over_by_someone_allowed_to_shows_on_alices_page(staff_page, live_server, customer):
    alice = staff_page("alice")
    url = change_url(live_server, customer)
    alice.goto(url)
    carol = staff_page("carol", "force_release")
    carol.goto(url)
    carol.click("#dynalock-take-over")
    assert "alice" in carol.locator("#content").inner_text()
    carol.click("input[type=submit]")
    carol.locator("input[name=_save]").wait_for(timeout=PAGE_PATIENCE_MS)
    banner(alice).get_by_text("carol took over editing").wait_for(timeout=PAGE_PATIENCE_MS)
    assert "Took over the edit lock held by alice" in LogEntry.objects.get().get_change_message()


def test_a_page_cut_off_warns_and_keeps_its_lock_when_it_comes_back_in_time(staff_page, live_server, customer):
    alice = staff_page("alice")
    alice.goto(change_url(live_server, customer))
    alice.context.set_offline(True)
    banner(alice).get_by_text("The server cannot be reached").wait_for(timeout=EDIT_LEASE * 1000)
    alice.context.set_offline(False)  # back before anyone took the lock: renewing again keeps it
    banner(alice).get_by_text("You are editing this.").wait_for(timeout=PAGE_PATIENCE_MS)
    alice.fill("input[name=name]", "Still mine")
    alice.click("input[name=_save]")
    alice.wait_for_url("**/admin/desk/customer/")
    customer.refresh_from_db()
    assert customer.name == "Still mine"


# ---------------------------------------------------------------- the support desk: list column, idle tabs

IDLE = 2.0


def test_the_changelist_says_who_edits_which_customer(staff_page, live_server, customer):
    Customer.objects.create(name="Globex", plan="pro")
    alice, bob = staff_page("alice"), staff_page("bob")
    alice.goto(change_url(live_server, customer))
    bob.goto(f"{live_server.url}/admin/desk/customer/")
    cells = bob.locator("td.field-edit_lock_status").all_inner_texts()
    names = bob.locator("th.field-name").all_inner_texts()
    assert dict(zip(names, cells, strict=True)) == {"Acme Corporation": "alice, 0 min", "Globex": ""}
    assert bob.locator("th.column-edit_lock_status").inner_text().strip() == "BEING EDITED"
    screenshot(bob, "changelist-being-edited")


@pytest.fixture
def short_idle(customer: Customer) -> Any:
    with override_settings(DYNALOCK={**settings.DYNALOCK, "EDIT_IDLE_TIMEOUT": IDLE}):
        yield


def test_an_idle_page_lets_go_keeps_the_input_and_continues(staff_page, live_server, customer, short_idle):
    alice = staff_page("alice")
    alice.goto(change_url(live_server, customer))
    alice.fill("input[name=name]", "Acme typed while away")
    idle_after = wait_until(lambda: lock_of(customer).is_released, timeout=IDLE + 3)
    assert idle_after >= IDLE - 0.5  # typing counted as input: not released before the time-out
    banner(alice).get_by_text("You were away").wait_for(timeout=PAGE_PATIENCE_MS)
    assert alice.input_value("input[name=name]") == "Acme typed while away"
    assert alice.locator("input[name=_save]").is_disabled()
    screenshot(alice, "idle-released")

    alice.click("#dynalock-continue")
    banner(alice).get_by_text("You are editing this.").wait_for(timeout=PAGE_PATIENCE_MS)
    assert not lock_of(customer).is_released
    alice.click("input[name=_save]")
    alice.wait_for_url("**/admin/desk/customer/")
    customer.refresh_from_db()
    assert customer.name == "Acme typed while away"


def test_an_idle_page_never_saves_over_what_someone_saved_meanwhile(staff_page, live_server, customer, short_idle):
    alice, bob = staff_page("alice"), staff_page("bob")
    url = change_url(live_server, customer)
    alice.goto(url)
    alice.fill("input[name=email]", "alice@acme.example")
    banner(alice).get_by_text("You were away").wait_for(timeout=(IDLE + 3) * 1000)
    bob.goto(url)
    bob.fill("input[name=name]", "Bob's Acme")
    bob.click("input[name=_save]")
    bob.wait_for_url("**/admin/desk/customer/")

    alice.click("#dynalock-continue")
    banner(alice).get_by_text("bob changed this at").wait_for(timeout=PAGE_PATIENCE_MS)
    assert alice.input_value("input[name=email]") == "alice@acme.example"  # kept until she chooses to reload
    assert alice.locator("input[name=_save]").is_disabled()
    assert alice.locator("#dynalock-reload").is_visible()
    screenshot(alice, "idle-changed")
    wait_until(lambda: lock_of(customer).is_released, timeout=3)
    customer.refresh_from_db()
    assert customer.name == "Bob's Acme"


def test_the_live_locks_page_fits_1280_pixels_with_times_on_one_line(staff_page, live_server, customer):
    alice = staff_page("alice")
    alice.goto(change_url(live_server, customer))
    long_keys = [f"nightly-billing-for-a-rather-long-account-name-{number:03d}-{'x' * 40}" for number in range(3)]
    for key in long_keys[:2]:
        get_client().acquire(key)
    get_client().acquire(long_keys[2]).release()
    carol = staff_page("carol", "view_lock", "force_release", "view_user")
    carol.set_viewport_size({"width": 1280, "height": 800})
    carol.goto(f"{live_server.url}/admin/dynalock_django/lock/")
    assert carol.evaluate("document.documentElement.scrollWidth") <= 1280  # no horizontal scrolling
    table_right, room_right = carol.evaluate(
        "[document.querySelector('#result_list').getBoundingClientRect().right,"
        " document.querySelector('.changelist-form-container').getBoundingClientRect().right]"
    )
    assert table_right <= room_right + 0.5  # nor a table running under the filter sidebar
    times = carol.locator("#result_list time")
    assert times.count() == 3  # held since, of three held locks
    for index in range(times.count()):
        lines, height = times.nth(index).evaluate(
            "el => [el.getClientRects().length, el.getBoundingClientRect().height]"
        )
        assert lines == 1
        assert height < 30  # one line each
    assert carol.locator("#changelist-filter").is_visible()
    assert carol.locator("#result_list a", has_text="alice").get_attribute("href").startswith("/admin/auth/user/")
    screenshot(carol, "live-locks-1280")


def test_a_merge_changes_nothing_while_bob_edits_one_then_merges_once_he_leaves(staff_page, live_server, customer):
    duplicate = Customer.objects.create(name="ACME Corp.", plan="enterprise")
    alice, bob = staff_page("alice"), staff_page("bob")
    bob.goto(change_url(live_server, duplicate))

    def merge_both() -> str:
        alice.goto(f"{live_server.url}/admin/desk/customer/")
        for obj in (customer, duplicate):
            alice.check(f"input[name=_selected_action][value='{obj.pk}']")
        alice.select_option("select[name=action]", "merge_customers")
        alice.click("button[name=index]")
        alice.wait_for_load_state()
        return alice.locator(".messagelist").inner_text()

    told = merge_both()
    assert "ACME Corp.: Being edited by bob since" in told
    assert "Nothing was changed." in told
    assert Customer.objects.count() == 2
    bob.close(run_before_unload=True)  # his page lets go of its lock
    wait_until(lambda: lock_of(duplicate).is_released, timeout=3.0)
    assert "Merged ACME Corp. into Acme Corporation: 0 address(es) and 0 note(s) moved." in merge_both()
    assert list(Customer.objects.values_list("name", flat=True)) == ["Acme Corporation"]
