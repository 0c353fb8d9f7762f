"""Each picture of docs/images was taken from the sources that render its page as they are now.

A template, script or module of a pictured page that changed since its picture was taken fails here,
naming the pictures to take again (``make screenshots``, which records the new hashes:
tests/screenshot_sources.py).
"""

from __future__ import annotations

from .screenshot_sources import IMAGES, ROOT, manifest, stale


def test_every_picture_has_its_sources_recorded():
    entries = manifest()
    assert sorted(entries) == sorted(path.name for path in IMAGES.glob("*.png"))
    missing = [source for entry in entries.values() for source in entry["sources"] if not (ROOT / source).is_file()]
    assert missing == []


def test_no_pictured_page_changed_since_its_picture_was_taken():
    changed = stale(manifest())
    assert changed == {}, (
        f"These pictures show pages whose sources changed since: {sorted(changed)}. Take them again "
        "(make screenshots; or copy them from var/screenshots), then python -m tests.screenshot_sources update IMAGE..."
    )
