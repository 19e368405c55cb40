"""Fixtures of the report tests: headless Chromium, and small real runs on SQLite.

Chromium is Debian's ``chromium`` with ``chromium-driver``. Without it the fixture installs both
with apt-get when running as root; with CI=true a browser that still cannot start is a failure,
never a skip (as for the PostgreSQL fixture).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from wannabet.testing.ci import unavailable
from wannabet.testing.cli import wannabet, wannabet_ok
from wannabet.testing.packages import PackageUnavailable, apt_install

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


ok = wannabet_ok


def _install_chromium() -> str | None:
    if shutil.which("chromium") and shutil.which("chromedriver"):
        return None
    try:
        apt_install("chromium", "chromium-driver")
    except PackageUnavailable as exc:
        return f"chromium is not installed: {exc}"
    return None


@dataclass
class Page:
    """A report opened in headless Chromium."""

    title: str
    charts: list[dict[str, Any]]
    console: list[dict[str, Any]]
    text: str
    driver: Any

    def severe(self) -> list[dict[str, Any]]:
        """Console errors, and warnings of the page's own scripts (Vega warns there)."""
        return [
            e
            for e in self.console
            if e.get("level") == "SEVERE"
            or (e.get("level") == "WARNING" and e.get("source") == "console-api")
        ]


class Browser:
    def __init__(self, driver: Any) -> None:
        self.driver = driver

    def open(self, path: Path, screenshot: str | None = None, timeout: float = 60.0) -> Page:
        d = self.driver
        d.get_log("browser")  # drop what earlier pages logged
        d.get(path.resolve().as_uri())
        script = (
            "return Array.from(document.querySelectorAll('div.chart')).map(e => ({"
            "id: e.id, key: e.dataset.key, rendered: e.getAttribute('data-rendered'),"
            "svg: e.querySelectorAll('svg').length, canvas: e.querySelectorAll('canvas').length,"
            "marks: e.querySelectorAll('svg path, svg rect, svg line, svg text').length}))"
        )
        deadline = time.monotonic() + timeout
        charts = d.execute_script(script)
        while any(c["rendered"] is None for c in charts) and time.monotonic() < deadline:
            time.sleep(0.2)
            charts = d.execute_script(script)
        if screenshot is not None:
            ARTIFACTS.mkdir(exist_ok=True)
            height = d.execute_script("return document.documentElement.scrollHeight")
            d.set_window_size(1100, min(int(height) + 50, 16000))
            d.save_screenshot(str(ARTIFACTS / screenshot))
            d.set_window_size(1100, 1400)
        return Page(
            title=d.title,
            charts=charts,
            console=d.get_log("browser"),
            text=d.find_element("tag name", "body").text,
            driver=d,
        )


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    problem = _install_chromium()
    driver = None
    if problem is None:
        try:
            from selenium import webdriver
            from selenium.webdriver.chrome.options import Options
            from selenium.webdriver.chrome.service import Service

            options = Options()
            options.binary_location = shutil.which("chromium") or CHROMIUM
            for arg in (
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--window-size=1100,1400",
            ):
                options.add_argument(arg)
            options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
            service = Service(shutil.which("chromedriver") or CHROMEDRIVER)
            driver = webdriver.Chrome(service=service, options=options)
        except Exception as exc:  # selenium raises several unrelated types here
            problem = f"headless chromium did not start: {exc}"
    if driver is None:
        unavailable("headless chromium", problem)
    try:
        yield Browser(driver)
    finally:
        driver.quit()


PWNED = "</script><script>document.title='PWNED'</script>"

ONE_CONDITION = """
name = "one-condition"
description = "A single condition: nothing to compare"
[setup]
sql = '''
DROP TABLE IF EXISTS t;
CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER);
INSERT INTO t VALUES (1, 0);
'''
[workload]
sessions = 1
[[workload.transactions]]
name = "read"
script = "SELECT v FROM t WHERE id = 1;"
[sampling]
samples = 3
duration = "0.2s"
warmup = "0s"
"""

# The name is hostile on purpose: the report must show it as text and run none of it.
TWO_CONDITIONS = f'''
name = "{PWNED}"
description = "synchronous FULL against OFF; a label like [red]x and <b>bold</b> stay literal"
[setup]
sql = """
PRAGMA journal_mode = WAL;
DROP TABLE IF EXISTS t;
CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL);
INSERT INTO t VALUES (1, 0);
"""
[workload]
sessions = 2
[[workload.transactions]]
name = "update"
script = "UPDATE t SET v = v + 1 WHERE id = 1;"
[[factors]]
name = "synchronous"
levels = ["FULL", "OFF"]
session_sql = "PRAGMA synchronous = {{level}}"
[sampling]
samples = 4
duration = "0.3s"
warmup = "0.1s"
seed = 7
'''

SIX_CONDITIONS = """
name = "six-conditions"
description = "synchronous x cache size: six conditions"
[setup]
sql = '''
DROP TABLE IF EXISTS t;
CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL);
INSERT INTO t VALUES (1, 0);
'''
[workload]
sessions = 1
[[workload.transactions]]
name = "update"
script = "UPDATE t SET v = v + 1 WHERE id = 1;"
[[factors]]
name = "synchronous"
levels = ["FULL", "NORMAL", "OFF"]
session_sql = "PRAGMA synchronous = {level}"
[[factors]]
name = "cache"
levels = ["100", "2000"]
session_sql = "PRAGMA cache_size = {level}"
[sampling]
samples = 3
duration = "0.15s"
warmup = "0s"
seed = 3
"""

# query_only = ON makes every update fail: a condition without one successful transaction.
ZERO_SUCCESS = """
name = "zero-success"
description = "every update fails under query_only = ON"
[setup]
sql = '''
DROP TABLE IF EXISTS t;
CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL);
INSERT INTO t VALUES (1, 0);
'''
[workload]
sessions = 1
[[workload.transactions]]
name = "update"
script = "UPDATE t SET v = v + 1 WHERE id = 1;"
[[factors]]
name = "query_only"
levels = ["OFF", "ON"]
session_sql = "PRAGMA query_only = {level}"
[sampling]
samples = 3
duration = "0.15s"
warmup = "0s"
"""

EXPERIMENTS = {
    "one": ONE_CONDITION,
    "two": TWO_CONDITIONS,
    "six": SIX_CONDITIONS,
    "zero": ZERO_SUCCESS,
}


@dataclass(frozen=True)
class Runs:
    results: Path
    ids: dict[str, int]


@pytest.fixture(scope="session")
def sqlite_runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Real `wannabet run`s on SQLite, one per experiment above, in one results file."""
    from wannabet.store import Store

    work = tmp_path_factory.mktemp("report-runs")
    results = work / "results.duckdb"
    ids = {}
    for key, text in EXPERIMENTS.items():
        spec = work / f"{key}.toml"
        spec.write_text(text)
        proc = wannabet("run", str(spec), "--results", str(results), "--format", "json")
        assert proc.returncode == 0, proc.stderr
        if key == "zero":  # a condition that fails everything is a finding, with its error
            assert "warning: query_only=ON: no transaction succeeded" in proc.stderr, proc.stderr
            assert "readonly" in proc.stderr
        ids[key] = Store(results).run().run_id
    return Runs(results, ids)
