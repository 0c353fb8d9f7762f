"""Debian's chromium, driven by Playwright (whose own browser download does not work here)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CHROMIUM = os.environ.get("DYNALOCK_CHROMIUM", "/usr/bin/chromium")
# Without the background-networking flags chromium keeps trying to reach Google, which this network refuses.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
# How long a test waits for a page to show something (ms): patience for a loaded machine, not a bound on
# the page's speed; a page that never shows it fails the test after this.
PAGE_PATIENCE_MS = 15_000


@contextmanager
def launch_chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield browser
        finally:
            browser.close()
