"""The docs site as a reader meets it: `mkdocs build --strict` (as CI runs it), served on loopback, every
page opened in Debian's chromium (through /usr/bin/chromedriver; nothing downloaded), each page's title
and heading rendered, and every link between pages (and every anchor it names) found."""

from __future__ import annotations

import functools
import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")

pytestmark = [
    pytest.mark.skipif(
        not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
        reason="no browser: install Debian's chromium and chromium-driver (.ci/run does)",
    ),
]
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
pytest.importorskip("mkdocs", reason="mkdocs is not installed (the dev extra has it)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(out)},
    )
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def _pages(site: Path) -> list[str]:
    return sorted(
        str(p.relative_to(site))
        for p in site.rglob("*.html")
        if p.name != "404.html" and "assets" not in p.parts
    )


def test_every_page_renders_and_every_link_between_pages_lands(
    site: Path, served: str, browser: object
) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    pages = _pages(site)
    assert "index.html" in pages
    assert len(pages) >= 2
    broken: list[str] = []
    for page in pages:
        driver.get(urljoin(served, page))  # type: ignore[attr-defined]
        title = driver.title  # type: ignore[attr-defined]
        heading = driver.find_elements(By.CSS_SELECTOR, "article h1")  # type: ignore[attr-defined]
        assert "memd" in title, f"{page}: title {title!r}"
        assert heading, f"{page}: no heading"
        assert heading[0].text.strip(), f"{page}: an empty heading"
        for anchor in driver.find_elements(By.CSS_SELECTOR, "article a[href]"):  # type: ignore[attr-defined]
            href = anchor.get_attribute("href") or ""
            if not href.startswith(served):
                continue  # another site's page: not ours to check offline
            target, fragment = urldefrag(href)
            path = urlparse(target).path.lstrip("/") or "index.html"
            file = site / path
            if not file.is_file():
                broken.append(f"{page} -> {href}")
            elif fragment and f'id="{fragment}"' not in file.read_text(encoding="utf-8"):
                broken.append(f"{page} -> {href} (no such anchor)")
    assert not broken, "links that land nowhere:\n" + "\n".join(broken)
