#!/usr/bin/env python3
"""The report's screenshots in docs/img, taken in headless Chromium.

``postgres`` (default): starts a throwaway PostgreSQL server (wannabet.testing.postgres: initdb
in a temporary directory, a free port on 127.0.0.1), runs examples/postgres-commit.toml against
it (about two minutes), writes ``wannabet report --bayes``, opens it at 1280 px wide, checks that
nothing scrolls sideways and saves the window with the verdict at its top:
docs/img/report-postgres-verdicts-1280.png.

``sqlite``: runs examples/sqlite-synchronous.toml as shipped (about 90 seconds) and saves, at
1100 px wide, the top of the page down to the verdict table's notes (report-sqlite.png), the
response-time plots (report-sqlite-plots.png) and the unit-of-work section
(report-sqlite-unit-of-work.png). Run it on an idle machine: a loaded one makes samples overrun
their deadline, and the page then warns about degraded samples.

Both run the example from a fresh directory with relative paths, so the page names the files as
the experiment file does. Chromium is Debian's chromium with chromium-driver, driven by selenium.

    python tools/report_screenshot.py                      # postgres
    python tools/report_screenshot.py sqlite
    python tools/report_screenshot.py --results r.duckdb   # an existing run of the example
    python tools/report_screenshot.py --work DIR           # keep the run and the page in DIR
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"


def wannabet(*args: str, cwd: Path) -> None:
    subprocess.run([sys.executable, "-m", "wannabet", *args], cwd=cwd, check=True)


def run_example(name: str, work: Path, *target: str) -> Path:
    shutil.copy(ROOT / "examples" / name, work / name)
    wannabet("run", name, *target, cwd=work)
    return work / "wannabet.duckdb"


def browser(width: int) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", f"--window-size={width},1000"):
        options.add_argument(arg)
    service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(service=service, options=options)


def open_page(driver: Any, page: Path) -> None:
    """Open the page and wait until every chart is drawn; refuse a page that scrolls sideways."""
    driver.get(page.resolve().as_uri())
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and driver.execute_script(
        "return Array.from(document.querySelectorAll('div.chart'))"
        ".some(e => !e.getAttribute('data-rendered'))"
    ):
        time.sleep(0.2)
    view, scroll = driver.execute_script(
        "return [document.documentElement.clientWidth, document.documentElement.scrollWidth]"
    )
    print(f"viewport {view} px, page {scroll} px wide")
    if scroll > view:
        raise SystemExit("the page scrolls sideways")


def postgres(work: Path, results: Path | None) -> None:
    if results is None:
        from wannabet.testing.postgres import ThrowawayPostgres

        server = ThrowawayPostgres().start()
        try:
            results = run_example("postgres-commit.toml", work, "--target", server.url)
        finally:
            server.stop()
    wannabet("report", "--results", str(results), "--bayes", "-o", "report.html", cwd=work)
    driver = browser(1280)
    try:
        open_page(driver, work / "report.html")
        driver.execute_script("document.getElementById('verdict').scrollIntoView()")
        driver.save_screenshot(str(IMG / "report-postgres-verdicts-1280.png"))
    finally:
        driver.quit()


def sqlite(work: Path, results: Path | None) -> None:
    if results is None:
        results = run_example("sqlite-synchronous.toml", work)
    wannabet("report", "--results", str(results), "-o", "report.html", cwd=work)
    driver = browser(1100)
    try:
        open_page(driver, work / "report.html")
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1100, min(int(height) + 50, 16000))
        # Down to the verdict's notes: the tables under them have their own documentation.
        bottom = driver.execute_script(
            "return document.querySelector('#verdict-table ~ ul').getBoundingClientRect().bottom"
        )
        driver.set_window_size(1100, int(bottom) + 20)
        driver.save_screenshot(str(IMG / "report-sqlite.png"))
        driver.set_window_size(1100, min(int(height) + 50, 16000))
        for section, name in (
            ("distributions", "report-sqlite-plots.png"),
            ("unit-of-work", "report-sqlite-unit-of-work.png"),
        ):
            driver.find_element("id", section).screenshot(str(IMG / name))
    finally:
        driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("example", nargs="?", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--results", type=Path, help="an existing results file of the example")
    parser.add_argument("--work", type=Path, help="a directory to keep the run and page in")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work.resolve() if args.work else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        results = args.results.resolve() if args.results else None
        (postgres if args.example == "postgres" else sqlite)(work, results)
    print(f"wrote the screenshots in {IMG}")


if __name__ == "__main__":
    main()
