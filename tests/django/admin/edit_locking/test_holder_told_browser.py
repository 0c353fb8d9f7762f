# ruff: noqa: F811 (the fixtures imported from test_admin_browser)
"""The editing holder hears within seconds, in a real browser: of an ask, a take-over and a forced release.

The edit lease is the default 60 s here, so renewals come every 20 s: what
reaches the holder's page sooner came by its looks between renewals (one
read every ``edit_lock_check_seconds``, 4 s, while the page is visible).
The bounds are generous beside that (real time on a shared machine); the
measured times are printed.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from dynalock_django.client import get_client
from testproject.desk.admin import CustomerAdmin

from ...browser import PAGE_PATIENCE_MS
from ..test_admin_browser import (  # noqa: F401 (fixtures, and helpers)
    _database_before_live_server,
    banner,
    change_url,
    chromium,
    customer,
    edit_locks,
    lock_of,
    staff_page,
)
from .test_ask_to_edit_browser import bob_in_line_behind_alice, edit_lock_requests

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.uses_dynalock]

TOLD_WITHIN = 5.0  # the promise: a visible holder's page hears within this
BOUND = 9.0  # what a test on a busy machine asserts
DASH = "\u2013"  # between what the title tells and the page's own title


@pytest.fixture
def default_edit_lease(customer: Any) -> Iterator[None]:
    with override_settings(DYNALOCK={**settings.DYNALOCK, "EDIT_LEASE_DURATION": 60.0}):
        yield


def seconds_until(locator: Any, timeout: float = BOUND) -> float:
    started = time.monotonic()
    locator.wait_for(timeout=timeout * 1000)
    return time.monotonic() - started


def test_the_holder_hears_of_an_ask_within_seconds_on_a_line_of_its_own(
    staff_page, live_server, customer, default_edit_lease
):
    assert CustomerAdmin.edit_lock_check_seconds < TOLD_WITHIN
    alice, bob = staff_page("alice"), staff_page("bob")
    url = change_url(live_server, customer)
    alice.goto(url)
    alices_requests = edit_lock_requests(alice)
    bob.goto(url)
    bob.click("#dynalock-ask")
    told = seconds_until(alice.locator("#dynalock-waiting", has_text="bob is waiting to edit since"))
    print(f"ask -> holder told after {told:.1f} s")
    assert told < BOUND
    assert "renew" not in alices_requests  # it came by a look, not by a renewal (every 20 s)
    assert alices_requests.count("check") >= 1
    sentence, waiting = (
        alice.locator(selector).evaluate("el => el.getBoundingClientRect().toJSON()")
        for selector in ("#dynalock-message", "#dynalock-waiting")
    )
    assert waiting["top"] >= sentence["bottom"]  # its own line, under the banner's sentence
    assert "bob" not in alice.locator("#dynalock-message").inner_text()


def test_the_holder_hears_of_a_take_over_within_seconds_and_the_tab_title_says_so(
    staff_page, live_server, customer, default_edit_lease
):
    alice = staff_page("alice")
    url = change_url(live_server, customer)
    alice.goto(url)
    title = alice.title()
    carol = staff_page("carol", "force_release")
    carol.goto(url)
    carol.click("#dynalock-take-over")
    carol.click("input[type=submit]")
    carol.locator("input[name=_save]").wait_for(timeout=PAGE_PATIENCE_MS)
    told = seconds_until(banner(alice).get_by_text("carol took over editing"))
    print(f"take-over -> holder told after {told:.1f} s")
    assert told < BOUND
    assert alice.locator("input[name=_save]").is_disabled()
    assert alice.title() == f"Cannot save {DASH} {title}"


def test_the_holder_hears_of_a_forced_release_within_seconds(staff_page, live_server, customer, default_edit_lease):
    alice = staff_page("alice")
    alice.goto(change_url(live_server, customer))
    get_client().force_release(lock_of(customer), released_by="carol")
    told = seconds_until(banner(alice).get_by_text("carol released your edit lock"))
    print(f"forced release -> holder told after {told:.1f} s")
    assert told < BOUND
    assert alice.title().startswith(f"Cannot save {DASH} ")


def test_the_waiters_title_says_when_the_lock_is_handed_over(staff_page, live_server, customer, default_edit_lease):
    alice, bob = staff_page("alice"), staff_page("bob")
    url = change_url(live_server, customer)
    alice.goto(url)
    bob.goto(url)
    title = bob.title()
    bob.click("#dynalock-ask")
    banner(bob).get_by_text("You are next").wait_for(timeout=PAGE_PATIENCE_MS)
    alice.click("input[name=_save]")
    alice.wait_for_url("**/admin/desk/customer/")
    bob.locator("input[name=_save]").wait_for(timeout=BOUND * 1000)  # his page turned into the editing page
    told = bob.title()
    assert told.startswith(f"Your turn to edit {DASH} ")
    assert told != title
    bob.locator("input[name=name]").click()  # he is here: the title is the page's own again
    assert bob.title() == told.removeprefix(f"Your turn to edit {DASH} ")
    assert "Change customer" in bob.title()


def hold_status_polls(page: Any) -> None:
    """The page's looks at the lock's status, once out of line, get no answer: the banner keeps what the
    page said last (the next answer would show who edits, in a poll period: too soon for a loaded machine)."""
    page.route("**/edit-lock/status/*", lambda route: None)


def test_stop_waiting_leaves_the_line(staff_page, live_server, customer, default_edit_lease):
    _, bob = bob_in_line_behind_alice(staff_page, live_server, customer)
    hold_status_polls(bob)
    bob.click("#dynalock-stop-waiting")
    banner(bob).get_by_text("You are not waiting to edit this any more.").wait_for(timeout=PAGE_PATIENCE_MS)
    assert lock_of(customer).waiters == ()
    assert bob.locator("#dynalock-ask").is_visible()  # he may ask again


def test_a_wait_answered_before_stop_waiting_but_heard_after_it_changes_nothing(
    staff_page, live_server, customer, default_edit_lease
):
    """A poll in line under way as bob stops waiting: its answer ("waiting") must not put him back on the page."""
    _, bob = bob_in_line_behind_alice(staff_page, live_server, customer)
    paused: list[Any] = []  # bob's next poll in line, held in his browser
    bob.route("**/edit-lock/wait/", lambda route: paused.append(route))
    deadline = time.monotonic() + BOUND
    while not paused and time.monotonic() < deadline:
        bob.wait_for_timeout(50)
    assert paused, "bob's page sent no poll while in line"
    answered = paused[0].fetch()  # the server answers it now, while bob is in line
    assert answered.json()["state"] == "waiting"
    hold_status_polls(bob)
    bob.click("#dynalock-stop-waiting")
    stopped = banner(bob).get_by_text("You are not waiting to edit this any more.")
    stopped.wait_for(timeout=PAGE_PATIENCE_MS)
    with bob.expect_response("**/edit-lock/wait/"):
        paused[0].fulfill(response=answered)  # the page hears that answer only now
    bob.unroute("**/edit-lock/wait/")
    bob.wait_for_timeout(4 * 1000 * CustomerAdmin.edit_lock_poll_seconds)  # and a few polls after it
    assert lock_of(customer).waiters == ()
    assert stopped.is_visible()
    assert bob.locator("#dynalock-ask").is_visible()
    assert not bob.locator("#dynalock-stop-waiting").is_visible()


class FakeTime:
    """The page's clock (Playwright's: timers, Date, performance.now), paused and moved only by the
    test, with every edit-lock request the page sends stamped with the page's time. The server
    answers in real time; each step waits for those answers before the clock moves on."""

    STEP = 0.1

    def __init__(self, page: Any) -> None:
        self.page = page
        self.requests: list[tuple[float, str]] = []
        self.pending = 0
        page.on("request", self._sent)
        page.on("requestfinished", self._answered)
        page.on("requestfailed", self._answered)
        page.clock.install()
        self.now = 0.0

    def pause(self) -> None:
        """From now on the page's time stands still unless the test moves it."""
        wall = float(self.page.evaluate("Date.now()")) / 1000
        self.page.clock.pause_at(wall + 1)  # Unix seconds
        self.now = float(self.page.evaluate("performance.now()")) / 1000

    def _sent(self, request: Any) -> None:
        if "/edit-lock/" in request.url:
            self.pending += 1
            self.requests.append((self.now, request.url.rstrip("/").rsplit("/", 1)[-1]))

    def _answered(self, request: Any) -> None:
        if "/edit-lock/" in request.url:
            self.pending -= 1

    def run_for(self, seconds: float) -> None:
        for _ in range(round(seconds / self.STEP)):
            self.page.clock.run_for(round(self.STEP * 1000))
            self.now += self.STEP
            deadline = time.monotonic() + BOUND
            while self.pending and time.monotonic() < deadline:
                self.page.wait_for_timeout(10)  # real time: the answer and what the page does with it
            assert not self.pending, "the server did not answer the page's request"

    def looks(self, since: float) -> list[tuple[float, str]]:
        """Renewals and the looks between them (one request each) sent from ``since`` on (page seconds)."""
        return [(at, action) for at, action in self.requests if at >= since and action in ("renew", "check")]


def page_config(page: Any) -> dict[str, Any]:
    return page.evaluate("JSON.parse(document.getElementById('dynalock-edit-lock').textContent)")  # type: ignore[no-any-return]


def set_hidden(page: Any, hidden: bool) -> None:
    """As if the user switched to another tab (or back): what the page sees of it."""
    page.evaluate(
        "hidden => { Object.defineProperty(document, 'hidden', {value: hidden, configurable: true});"
        " document.dispatchEvent(new Event('visibilitychange')); }",
        hidden,
    )


def test_the_notice_schedule_on_a_fake_clock_a_look_every_few_seconds_while_visible_none_while_hidden(
    staff_page, live_server, customer, default_edit_lease
):
    alice = staff_page("alice")
    clock = FakeTime(alice)
    url = change_url(live_server, customer)
    alice.goto(url)
    clock.pause()
    config = page_config(alice)
    check, renew = config["checkSeconds"], config["renewSeconds"]
    assert (check, renew) == (CustomerAdmin.edit_lock_check_seconds, 20.0)
    opened = clock.now

    clock.run_for(2 * renew)
    visible = clock.looks(opened)
    times = [at for at, _ in visible]
    assert times[0] - opened <= check + FakeTime.STEP
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    # A look every checkSeconds, a renewal in place of a look every renewSeconds: never two close together.
    assert all(check - 2 * FakeTime.STEP <= gap <= check + 2 * FakeTime.STEP for gap in gaps), gaps
    assert [action for _, action in visible].count("renew") == 2
    per_hour = len(visible) * 3600 / (2 * renew)
    print(f"a visible editing tab: {per_hour:.0f} requests an hour ({3600 / renew:.0f} of them renewals)")

    # Bob asks (in real time, on his own page): alice's page hears at its next look, within checkSeconds.
    bob = staff_page("bob")
    bob.goto(url)
    bob.click("#dynalock-ask")
    banner(bob).get_by_text("You are next").wait_for(timeout=BOUND * 1000)
    asked = clock.now
    waiting = alice.locator("#dynalock-waiting", has_text="bob is waiting to edit since")
    while not waiting.is_visible():
        assert clock.now - asked <= check + FakeTime.STEP, "the holder was not told at its next look"
        clock.run_for(FakeTime.STEP)
    print(f"ask -> holder told after {clock.now - asked:.1f} s of the page's time (a look every {check:g} s)")

    # Hidden: renewals only (the lock is kept), no looks; shown again: it renews (and so looks) at once.
    set_hidden(alice, True)
    hidden = clock.now
    clock.run_for(2 * renew)
    assert [action for _, action in clock.looks(hidden)] == ["renew", "renew"]
    print(f"a hidden editing tab: {len(clock.looks(hidden)) * 3600 / (2 * renew):.0f} requests an hour")
    set_hidden(alice, False)
    shown = clock.now
    clock.run_for(FakeTime.STEP)
    assert [action for _, action in clock.looks(shown)] == ["renew"]
