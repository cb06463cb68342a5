"""End to end in a real headless browser: `memd ui` as a real process over a prepared installation,
Debian's chromium driven through /usr/bin/chromedriver (nothing downloaded). It clicks through every
page, accepts and rejects an inbox run, forgets a session, and saves a screenshot of each page under
``.screenshots/ui/`` (ignored by git)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.gitrepo.repository import MemoryRepo
from tests.daemon.cli.test_inbox import ENV
from tests.daemon.ui.support import Prepared

REPO = Path(__file__).parents[3]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SHOTS = Path(os.environ.get("MEMD_UI_SCREENSHOTS", REPO / ".screenshots" / "ui"))
START_TIMEOUT_S = 60

pytestmark = [
    pytest.mark.skipif(
        not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
        reason="no browser: install Debian's chromium and chromium-driver (.ci/run does)",
    ),
]
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")


class UiProcess:
    """`memd ui --port 0` in its own process; the address it prints, its output in a file."""

    def __init__(self, tmp_path: Path, config: Path | None, *args: str) -> None:
        self.out = tmp_path / "memd-ui.out"
        where = ["--config", str(config)] if config is not None else []
        with self.out.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "daemon", *where, "ui", "--port", "0", *args],
                cwd=REPO,
                env={"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), **ENV},
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.address = self._address()

    def _address(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            found = re.search(r"open (http://127\.0\.0\.1:\d+/\?token=\S+)", self.output())
            if found:
                return found.group(1)
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        pytest.fail(f"memd ui printed no address:\n{self.output()}")

    def output(self) -> str:
        return self.out.read_text(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=30)


@pytest.fixture
def browser() -> Iterator[object]:
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1100"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def shots() -> Path:
    shutil.rmtree(SHOTS, ignore_errors=True)
    SHOTS.mkdir(parents=True)
    return SHOTS


def test_click_through_every_page_accept_reject_and_forget(
    tmp_path: Path, prepared_here: Prepared, browser: object, shots: Path
) -> None:
    from selenium.common.exceptions import NoAlertPresentException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    driver = browser
    ui = UiProcess(tmp_path, prepared_here.config)
    try:

        def shot(name: str) -> None:
            """The whole page: the window is made as tall as the page first."""
            driver.set_window_size(1280, 600)  # type: ignore[attr-defined]
            height = driver.execute_script("return document.documentElement.scrollHeight")  # type: ignore[attr-defined]
            driver.set_window_size(1280, min(max(int(height) + 140, 600), 4000))  # type: ignore[attr-defined]
            driver.save_screenshot(str(shots / f"{name}.png"))  # type: ignore[attr-defined]

        def click(text: str) -> None:
            driver.find_element(By.LINK_TEXT, text).click()  # type: ignore[attr-defined]

        def submit(button: str) -> None:
            """Press a form's button and wait for the page that says what happened."""
            old = driver.find_element(By.TAG_NAME, "html")  # type: ignore[attr-defined]
            driver.find_element(By.ID, button).click()  # type: ignore[attr-defined]
            wait = WebDriverWait(driver, 60)  # type: ignore[arg-type]

            def replaced(_: object) -> bool:
                # The old page is gone once its node is: chromedriver says "stale element" or, when
                # the node went between two of its own calls, "does not belong to the document".
                try:
                    old.is_enabled()
                except WebDriverException:
                    return True
                return False

            wait.until(replaced)
            wait.until(expected_conditions.presence_of_element_located((By.ID, "result")))

        def body() -> str:
            return str(driver.find_element(By.TAG_NAME, "body").text)  # type: ignore[attr-defined]

        # Overview, reached by the printed address; the token leaves the address for a cookie.
        driver.get(ui.address)  # type: ignore[attr-defined]
        assert "token=" not in driver.current_url  # type: ignore[attr-defined]
        assert "RATE-LIMIT GATE" in body()  # the card titles are shown in capitals
        assert "too few user messages" in body()
        assert driver.find_elements(By.CSS_SELECTOR, "svg.chart rect.bar")  # type: ignore[attr-defined]
        shot("01-overview")

        # Memory: scopes, a scope, a topic, its history, a diff, a hostile file, a search.
        click("Memory")
        assert prepared_here.acme in body()
        shot("02-memory")
        click("acme")  # the scope's short name, its key and folder beside it
        assert "testing.md" in body()
        shot("03-scope")
        driver.find_element(By.CSS_SELECTOR, "#topics a[href*='testing.md']").click()  # type: ignore[attr-defined]
        assert "Run make test." in body()
        assert "sess-acme" in body()
        shot("04-topic")
        click("history")
        shot("05-history")
        click("diff")
        assert "+Run `make test`." in body()
        shot("06-diff")
        driver.back()  # type: ignore[attr-defined]
        driver.back()  # type: ignore[attr-defined]
        driver.back()  # type: ignore[attr-defined]
        driver.find_element(By.CSS_SELECTOR, "#topics a[href*='hostile.md']").click()  # type: ignore[attr-defined]
        assert '<script>alert("owned")</script>' in body()
        with pytest.raises(NoAlertPresentException):
            driver.switch_to.alert.text  # type: ignore[attr-defined]  # noqa: B018
        shot("07-hostile-topic")
        search = driver.find_element(By.CSS_SELECTOR, "header input[name=q]")  # type: ignore[attr-defined]
        search.send_keys("fly deploy\n")
        shot("08-search")

        # Inbox: accept one run, reject the other.
        click("Inbox")
        assert prepared_here.accept_run in body()
        assert prepared_here.reject_run in body()
        shot("09-inbox")
        click(prepared_here.accept_run)
        assert "+Deploy with `fly deploy`." in body()
        shot("10-inbox-run")
        submit("accept")
        assert "accepted: the memory repository is at" in body()
        shot("11-accepted")
        click("inbox")
        click(prepared_here.reject_run)
        submit("reject")
        assert f"rejected {prepared_here.reject_run}" in body()
        shot("12-rejected")
        click("inbox")
        assert "the inbox is empty" in body()

        # Sessions: the list, one session, forget it after the confirmation.
        click("Sessions")
        assert "sess-acme" in body()
        shot("13-sessions")
        click("sess-acme")
        shot("14-session")
        driver.find_element(By.ID, "forget-session").click()  # type: ignore[attr-defined]
        assert "memd forget --session sess-acme" in body()
        shot("15-confirm-forget")
        submit("confirm-forget")
        assert f"{prepared_here.acme}: cleared" in body()
        shot("16-forgotten")

        # No page broke its Content-Security-Policy (an inline style or script would show here).
        logs = driver.get_log("browser")  # type: ignore[attr-defined]
        assert not [entry for entry in logs if "Content Security Policy" in entry["message"]], logs
    finally:
        code = ui.stop()
    assert code == 0, ui.output()

    # What the clicks did, read from the repository itself.
    memory = prepared_here.settings.paths.memory_dir
    assert (memory.joinpath(*prepared_here.accept_scope.split("/")) / "deploy.md").is_file()
    assert not (memory.joinpath(*prepared_here.acme.split("/")) / "testing.md").exists()
    import asyncio

    assert asyncio.run(MemoryRepo(memory).inbox_branches()) == []
    assert len(list(shots.glob("*.png"))) == 16


def test_the_overview_fits_one_screen_at_5000_sessions_and_40_scopes(
    tmp_path: Path, browser: object, shots: Path
) -> None:
    import asyncio

    from selenium.webdriver.common.by import By

    from benchmarks.ui_bench import seed

    home = tmp_path / "home"
    home.mkdir()
    asyncio.run(seed({"HOME": str(home), "MEMD_REVIEW__MODE": "inbox"}, sessions=5000, scopes=40, topics=30))
    driver = browser
    ui = UiProcess(tmp_path, None)
    try:
        driver.set_window_size(1280, 900)  # type: ignore[attr-defined]
        driver.get(ui.address)  # type: ignore[attr-defined]
        body = driver.find_element(By.TAG_NAME, "body").text  # type: ignore[attr-defined]
        assert "40 scopes" in body  # the forgotten scope's withdrawn copies are not counted
        assert "codex" in body
        # One screen: the page's whole height within the viewport the 1280 x 900 window gives (headless
        # chromium's is 757 px tall), so that nothing scrolls.
        viewport = int(driver.execute_script("return document.documentElement.clientHeight"))  # type: ignore[attr-defined]
        height = int(driver.execute_script("return document.documentElement.scrollHeight"))  # type: ignore[attr-defined]
        driver.save_screenshot(str(shots / "overview-5000-sessions.png"))  # type: ignore[attr-defined]
        used = int(
            driver.execute_script(
                "return Math.ceil(document.querySelector('main').getBoundingClientRect().bottom)"
            )
        )  # type: ignore[attr-defined]
        print(f"the overview: {used} px of content, {height} px of page, in a viewport of {viewport} px")
        assert height <= viewport, f"the overview is {height} px tall, the viewport {viewport} px"
        # The details are a click away.
        driver.find_element(By.LINK_TEXT, "every target and scope").click()  # type: ignore[attr-defined]
        rows = driver.find_elements(By.CSS_SELECTOR, "#targets tr")  # type: ignore[attr-defined]
        assert len(rows) == 1 + 40 * 3
    finally:
        code = ui.stop()
    assert code == 0, ui.output()


def _press(driver: object, button: str) -> None:
    """Press a form's button and wait for the page that says what happened."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    old = driver.find_element(By.TAG_NAME, "html")  # type: ignore[attr-defined]
    driver.find_element(By.ID, button).click()  # type: ignore[attr-defined]
    wait = WebDriverWait(driver, 60)  # type: ignore[arg-type]

    def replaced(_: object) -> bool:
        try:
            old.is_enabled()
        except WebDriverException:
            return True
        return False

    wait.until(replaced)
    wait.until(expected_conditions.presence_of_element_located((By.ID, "result")))


def test_click_pin_edit_and_forget_on_a_topic(
    tmp_path: Path, prepared_here: Prepared, browser: object, shots: Path
) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    topic = prepared_here.settings.paths.memory_dir.joinpath(*prepared_here.acme.split("/"), "testing.md")
    ui = UiProcess(tmp_path, prepared_here.config)

    def body() -> str:
        return str(driver.find_element(By.TAG_NAME, "body").text)  # type: ignore[attr-defined]

    def go(by: str, value: str) -> None:
        driver.find_element(by, value).click()  # type: ignore[attr-defined]

    try:
        driver.get(ui.address)  # type: ignore[attr-defined]
        go(By.LINK_TEXT, "Memory")
        go(By.LINK_TEXT, "acme")
        go(By.CSS_SELECTOR, "#topics a[href*='testing.md']")
        assert f"{prepared_here.acme}/testing.md" in body()

        _press(driver, "pin")
        assert "pinned" in body()
        assert "pinned: true" in topic.read_text()
        go(By.ID, "back")
        assert driver.find_element(By.ID, "pin").text == "Unpin"  # type: ignore[attr-defined]
        assert "phase 2 never deletes it" in body()
        shot_path = shots / "topic-pinned.png"
        driver.save_screenshot(str(shot_path))  # type: ignore[attr-defined]

        go(By.ID, "edit")
        area = driver.find_element(By.ID, "body")  # type: ignore[attr-defined]
        assert "Run `make test`." in area.get_attribute("value")
        area.clear()
        area.send_keys("Run `make check` before every push.")
        driver.save_screenshot(str(shots / "topic-edit.png"))  # type: ignore[attr-defined]
        _press(driver, "save")
        assert "edited" in body()
        assert "Run `make check` before every push." in topic.read_text()
        go(By.ID, "back")
        assert "Run make check before every push." in body()
        assert "make test" not in driver.find_element(By.ID, "topic-body").text  # type: ignore[attr-defined]

        go(By.ID, "forget-memory")
        assert f"memd memories forget {prepared_here.acme}/testing.md" in body()
        driver.save_screenshot(str(shots / "topic-forget-confirm.png"))  # type: ignore[attr-defined]
        _press(driver, "confirm-forget-memory")
        assert f"{prepared_here.acme}/testing.md: forgotten" in body()
        assert not topic.exists()
        go(By.ID, "back")
        assert "testing.md" not in driver.find_element(By.ID, "topics").text  # type: ignore[attr-defined]
    finally:
        code = ui.stop()
    assert code == 0, ui.output()
