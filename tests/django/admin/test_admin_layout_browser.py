"""The package's admin pages laid out as Django's own, in chromium, on whichever Django runs the suite (5.2 and 6.x).

Layout, not content: the live-locks page's filter stands right of its table
at desktop width, breadcrumbs look as on Django's own changelist (light and
dark), no page is wider than the window (1280 px and a phone's 390 px), and
the two confirmations share the admin's delete-confirmation buttons.
Screenshots go to ``DYNALOCK_SCREENSHOTS`` (default ``var/screenshots/``),
named with Django's major version; ``make screenshots`` writes them into
docs/images for both versions.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import django
import pytest
from django.test import override_settings

from dynalock_django.client import get_client
from dynalock_django.conf import DEFAULTS
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData
from testproject.desk.models import Customer

from ..admin_support import DESK_EDITOR, LIVE_LOCKS, RELEASE, logged_in
from ..browser import CHROMIUM, launch_chromium

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.uses_dynalock]

ROOT = Path(__file__).resolve().parents[3]
SCREENSHOTS = Path(os.environ.get("DYNALOCK_SCREENSHOTS") or ROOT / "var" / "screenshots")
DESKTOP, PHONE = {"width": 1280, "height": 800}, {"width": 390, "height": 844}

if not Path(CHROMIUM).exists():
    if os.environ.get("DYNALOCK_REQUIRE_BROWSER"):
        raise RuntimeError(f"{CHROMIUM} is missing: apt-get install chromium chromium-driver")
    pytest.skip(f"no browser at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

# What the page's geometry and styles come to, read in the browser.
LAYOUT = """() => {
  const box = (selector) => {
    const el = document.querySelector(selector);
    return el && el.getBoundingClientRect().toJSON();
  };
  const crumbs = document.querySelector(".breadcrumbs");
  const style = crumbs && getComputedStyle(crumbs);
  const submit = document.querySelector("#content form input[type=submit]");
  return {
    pageWidth: document.documentElement.scrollWidth,
    windowWidth: window.innerWidth,
    table: box("#result_list"),
    filter: box("#changelist-filter"),
    crumbs: style && [style.backgroundColor, style.color, style.paddingTop, style.fontSize, crumbs.innerText.trim()],
    button: submit && [getComputedStyle(submit).backgroundColor, getComputedStyle(submit).color],
    bodyClass: document.body.className,
  };
}"""


# Whether an element's own text lies on one line.
ONE_LINE = """el => {
  const range = document.createRange();
  range.selectNodeContents(el.firstChild || el);
  return new Set(Array.from(range.getClientRects(), (rect) => Math.round(rect.top))).size <= 1;
}"""


@pytest.fixture(scope="module", autouse=True)
def _database_before_live_server(django_db_setup: None) -> None:
    """The test database exists before the live server starts (see test_admin_browser)."""


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with launch_chromium() as browser:
            yield browser


@pytest.fixture
def patient(dynalock: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The default time-outs: the pages are served by threads beside the test's own work."""
    defaults = {name: DEFAULTS[name] for name in ("LEASE_DURATION", "HEARTBEAT_PERIOD", "BOTO_CONFIG")}
    settings = {**dynalock, **defaults, "EDIT_LEASE_DURATION": 30.0}
    with override_settings(DYNALOCK=settings):
        yield settings


@pytest.fixture
def carol_sees(
    chromium: Any, live_server: Any, make_staff: Callable[..., Any], patient: dict[str, Any]
) -> Iterator[Callable[..., Any]]:
    """A tab of carol's (she may see and release locks, and take over edits) at a viewport and colour scheme."""
    carol = make_staff("carol", *DESK_EDITOR, "view_lock", "force_release", "view_user")
    cookie = logged_in(carol).cookies["sessionid"].value
    contexts = []

    def open_tab(viewport: dict[str, int], scheme: str = "light") -> Any:
        context = chromium.new_context(viewport=viewport, color_scheme=scheme)
        context.add_cookies([{"name": "sessionid", "value": cookie, "url": live_server.url}])
        contexts.append(context)
        return context.new_page()

    yield open_tab
    for context in contexts:
        context.close()


@pytest.fixture
def held_locks(patient: dict[str, Any]) -> Customer:
    """An edit lock of alice's on a customer, and a nightly job's lock with a long name."""
    customer = Customer.objects.create(name="ACME Corp.", plan="enterprise")
    get_client().acquire(
        key_for_instance(customer), data=LockData(purpose="edit", username="alice", user_id="1").to_bytes()
    )
    get_client().acquire(
        f"nightly-billing-for-a-rather-long-account-name-{'x' * 60}",
        data=LockData(purpose="nightly job").to_bytes(),
    )
    return customer


def layout_of(page: Any, url: str) -> dict[str, Any]:
    page.goto(url)
    layout: dict[str, Any] = page.evaluate(LAYOUT)
    return layout


def screenshot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}-django{django.VERSION[0]}.png"), full_page=True)


def djangos_own_crumbs(page: Any, live_server: Any) -> list[str]:
    """The breadcrumbs' style on Django's own changelist (of customers), the text left out."""
    crumbs: list[str] = layout_of(page, f"{live_server.url}/admin/desk/customer/")["crumbs"][:4]
    return crumbs


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_live_locks_page_is_laid_out_as_djangos_changelist(carol_sees, live_server, held_locks, scheme):
    page = carol_sees(DESKTOP, scheme)
    reference = djangos_own_crumbs(page, live_server)
    layout = layout_of(page, f"{live_server.url}{LIVE_LOCKS}")
    assert "ACME Corp." in page.locator("#result_list").inner_text()
    assert layout["pageWidth"] <= layout["windowWidth"]  # nothing wider than the window
    table, sidebar = layout["table"], layout["filter"]
    assert sidebar["left"] >= table["right"] - 0.5  # the filter stands right of the table...
    assert sidebar["top"] < table["bottom"]  # ...beside it, not below
    assert table["width"] >= 0.6 * (sidebar["right"] - table["left"])  # the table has most of the room
    # Short values stay on one line (no "admi / n" of a squeezed column): kind, since, state.
    for cell in page.locator("#result_list td:nth-child(2), #result_list time, #result_list td.dynalock-state").all():
        assert cell.evaluate(ONE_LINE), cell.inner_text()
    assert layout["crumbs"][:4] == reference
    assert crumb_words(layout) == ["Home", "Locks", "Live", "locks"]
    headers = page.locator("#result_list thead th")
    for index in range(headers.count()):  # each header on one line: no "admi / n", no headers run together
        assert headers.nth(index).evaluate("el => el.getBoundingClientRect().height") < 40
    assert not page.locator("#result_list details").first.evaluate("el => el.open")  # operators' details folded
    if scheme == "light":
        screenshot(page, "live-locks")


def test_the_live_locks_page_fits_a_phone(carol_sees, live_server, held_locks):
    page = carol_sees(PHONE)
    reference = djangos_own_crumbs(page, live_server)
    layout = layout_of(page, f"{live_server.url}{LIVE_LOCKS}")
    assert layout["pageWidth"] <= layout["windowWidth"]
    assert layout["crumbs"][:4] == reference
    screenshot(page, "live-locks-phone")


def test_the_release_confirmation_looks_as_the_take_over_confirmation(carol_sees, live_server, held_locks):
    customer = held_locks
    page = carol_sees(DESKTOP)
    reference = djangos_own_crumbs(page, live_server)
    release = layout_of(page, f"{live_server.url}{RELEASE}?key={key_for_instance(customer)}")
    question = page.locator("#dynalock-release-question").inner_text()
    assert question.startswith("The lock on “ACME Corp.” is held by alice (editing), taken at ")
    assert ".”." not in question  # no doubled full stop after a name ending in one
    screenshot(page, "release-confirmation")
    take_over = layout_of(page, f"{live_server.url}/admin/desk/customer/{customer.pk}/edit-lock/take-over/")
    assert "alice" in page.locator("#content").inner_text()
    screenshot(page, "take-over-confirmation")
    for layout in (release, take_over):
        assert layout["pageWidth"] <= layout["windowWidth"]
        assert layout["crumbs"][:4] == reference
        assert "delete-confirmation" in layout["bodyClass"]
    assert release["button"] == take_over["button"]  # the same red "Yes" as Django's delete confirmation
    assert crumb_words(release) == ["Home", "Locks", "Live", "locks", "Release", "the", "lock", "on", "ACME", "Corp."]
    assert crumb_words(take_over) == [
        "Home",
        "Support",
        "desk",
        "Customers",
        "ACME",
        "Corp.",
        "Take",
        "over",
        "editing",
    ]


def test_the_unavailable_page_has_the_admins_breadcrumbs(carol_sees, live_server, held_locks, patient):
    customer = held_locks
    page = carol_sees(DESKTOP)
    reference = djangos_own_crumbs(page, live_server)
    with override_settings(DYNALOCK={**patient, "TABLE_NAME": "no-such-table"}):
        layout = layout_of(page, f"{live_server.url}/admin/desk/customer/{customer.pk}/edit-lock/take-over/")
    text = page.locator("#content").inner_text()
    assert "The lock table is missing or not set up for locks." in text
    assert "no-such-table" not in text
    assert layout["crumbs"][:4] == reference
    assert layout["pageWidth"] <= layout["windowWidth"]
    screenshot(page, "unavailable")


def crumb_words(layout: dict[str, Any]) -> list[str]:
    """The breadcrumbs' words; the separators are text on Django 5.2, drawn by CSS on 6.x."""
    return [word for word in layout["crumbs"][4].split() if word != "\u203a"]
