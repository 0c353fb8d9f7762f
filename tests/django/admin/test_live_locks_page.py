"""The live-locks page for support staff: relative times, holders linked to users, the filter sidebar, sorting."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from dynalock_django import lock_object
from dynalock_django.admin.live_locks_page import since

from ..admin_support import LIVE_LOCKS, held_by_user, logged_in, put_item

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


@pytest.fixture
def viewer(make_staff):
    return make_staff("vera", "view_lock")


def held_since(key, minutes_ago, *, username="dora", user_id="42"):
    held_by_user(key, username, minutes_ago, user_id=user_id)


def held_cells(html):
    return re.findall(r'<time class="dynalock-held-since" datetime="[^"]*" title="([^"]*)">([^<]*)</time>', html)


NOW = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("before", "expected"),
    [
        (timedelta(seconds=12), "just now"),
        (timedelta(seconds=59), "just now"),
        (-timedelta(minutes=5), "just now"),  # a holder's clock ahead of ours
        (timedelta(minutes=1), "since 09:59"),
        (timedelta(minutes=3, seconds=59), "since 09:56"),
        (timedelta(hours=2, minutes=5), "since 07:55"),
        (timedelta(days=1, hours=1), "since 1 Jan, 09:00"),
    ],
)
def test_times_older_than_a_minute_are_told_as_a_time_of_day(before, expected, settings):
    settings.TIME_ZONE = "UTC"
    assert since(NOW - before, NOW) == expected


def test_times_are_told_in_the_current_time_zone(settings):
    settings.TIME_ZONE = "Europe/Paris"  # UTC+1 in January
    assert since(NOW - timedelta(minutes=5), NOW) == "since 10:55"


def test_a_time_the_holder_did_not_give_says_so():
    assert since(None, NOW) == "since an unknown time"


def test_held_since_is_a_time_with_the_exact_moment_on_hover(viewer):
    held_since("job-a", 3)
    [(exact, told)] = held_cells(logged_in(viewer).get(LIVE_LOCKS).content.decode())
    # Held 3 minutes ago: a time of day, with the day too when that was yesterday (a run just after midnight).
    assert re.fullmatch(r"since (\d{1,2} \w+, )?\d\d:\d\d", told)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \w+", exact)


def test_locks_sort_by_how_long_they_have_been_held(viewer):
    for key, minutes in (("job-short", 1), ("job-long", 30), ("job-middle", 10)):
        held_since(key, minutes)
    client = logged_in(viewer)
    longest_first = client.get(LIVE_LOCKS, {"o": "held"})
    assert names_in_order(longest_first.content.decode()) == ["job-long", "job-middle", "job-short"]
    assert 'href="?o=-held"' in longest_first.content.decode()  # the header's link turns the order round
    shortest_first = client.get(LIVE_LOCKS, {"o": "-held"})
    assert names_in_order(shortest_first.content.decode()) == ["job-short", "job-middle", "job-long"]


def names_in_order(html):
    return [name.strip() for name in re.findall(r'<td class="dynalock-object">([^<]*)<details', html)]


def test_holders_link_to_their_users_for_viewers_who_may_see_users(viewer, make_staff, django_user_model):
    dora = django_user_model.objects.create_user("dora")
    held_since("job-a", 1, user_id=str(dora.pk))
    link = f'href="/admin/auth/user/{dora.pk}/change/"'
    assert link not in logged_in(viewer).get(LIVE_LOCKS).content.decode()
    support = make_staff("sam", "view_lock", "view_user")
    assert link in logged_in(support).get(LIVE_LOCKS).content.decode()


def test_a_user_id_from_the_table_is_quoted_into_the_link(make_staff):
    held_since("job-a", 1, user_id='"><script>x</script>')
    html = logged_in(make_staff("sam", "view_lock", "view_user")).get(LIVE_LOCKS).content.decode()
    assert "<script>x" not in html
    assert 'href="/admin/auth/user/_22_3E_3Cscript_3Ex_3C_2Fscript_3E/change/"' in html


def test_the_sidebar_filters_by_model_state_and_holder(make_staff, customer):
    viewer = make_staff("cora", "view_lock", "view_customer", "view_tag")  # no tag is locked: not offered
    held_since("job-a", 1, username="dora")
    with lock_object(customer, user=viewer):
        page = logged_in(viewer).get(LIVE_LOCKS)
        by_model, by_state, by_holder = page.context["filters"]
        assert [(c.display, c.query_string, c.selected) for c in by_model.options] == [
            ("All", "?", True),
            ("Customers (1)", "?model=desk.customer", False),
        ]
        assert [c.query_string for c in by_state.options] == ["?", "?status=all"]
        assert [c.display for c in by_holder.options] == ["All", "cora", "dora"]
        html = page.content.decode()
        assert 'id="changelist-filter"' in html  # Django's own sidebar, as each version writes it
        assert re.search(r'<li class="selected">\s*<a href="\?">All</a></li>', html)
        assert "Clear all filters" not in html

        only_dora = logged_in(viewer).get(LIVE_LOCKS, {"holder": "dora", "o": "held"})
        by_holder = only_dora.context["filters"][2]
        assert [(c.display, c.query_string, c.selected) for c in by_holder.options] == [
            ("All", "?o=held", False),
            ("dora", "?o=held&holder=dora", True),
        ]
        assert "job-a" in only_dora.content.decode()
        assert "Acme" not in only_dora.content.decode()
        assert '<a href="?o=held">&#10006; Clear all filters</a>' in only_dora.content.decode()  # keeps the order


def footer(html):
    return " ".join(re.sub(r"<[^>]+>", " ", html.split('<p class="paginator">', 1)[1].split("</p>", 1)[0]).split())


def test_the_footer_counts_the_rows_above_it(viewer):
    held_since("job-a", 1)
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    put_item(  # a holder gone two hours ago: not listed unless every state is asked for
        {
            "key": {"S": "job-gone"},
            "ownerName": {"S": "host:1"},
            "leaseDuration": {"S": "1000"},
            "recordVersionNumber": {"S": "rvn-gone"},
            "acquiredAt": {"N": str(now_ms - 7_300_000)},
            "renewedAt": {"N": str(now_ms - 7_200_000)},
        }
    )
    default = logged_in(viewer).get(LIVE_LOCKS).content.decode()
    assert "job-gone" not in default
    assert footer(default).startswith("1 held; 1 more not shown")
    everything = logged_in(viewer).get(LIVE_LOCKS, {"status": "all"}).content.decode()
    assert "job-gone" in everything
    assert footer(everything).startswith("1 held, 1 whose holder is gone")
    assert "not shown" not in footer(everything)
