"""Open a local HTML page in headless Debian Chromium through Playwright (no browser
download: the system binary), collecting console errors and every request made."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class Visit:
    page: object
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@contextmanager
def visit(path: Path) -> Iterator[Visit]:
    """The page loaded from `file://`; fails the test on a missing browser stack."""
    if CHROMIUM is None:
        pytest.skip("Debian chromium is not installed (scripts/setup.sh installs it as root)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        seen = Visit(page)
        page.on("console", lambda message: seen.errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: seen.errors.append(str(error)))
        page.on("request", lambda request: seen.requests.append(request.url))
        page.goto(path.resolve().as_uri())
        page.wait_for_load_state("load")
        try:
            yield seen
        finally:
            browser.close()
