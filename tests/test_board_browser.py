"""The board opened in real headless Chromium (Debian's package), with the network off.

Playwright's Python package drives the system browser (``executable_path``);
it never downloads one. The browser starts once per module, with the flags that
keep Chromium from calling home and every host name resolving to nothing; each
test opens its page in a fresh, offline browser context (its own cookies,
storage and cache, as a fresh profile would have); every request the page
makes is recorded, and so is every console message and page error.

These tests skip only when no Chromium is installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from board_support import (
    HOSTILE_TEXTS,
    KNOWN_CONFUSION,
    QUEUE_OWED,
    QUEUE_SKIPPED,
    QUEUE_WAITING,
    known,  # noqa: F401 (a fixture)
    known_template,  # noqa: F401 (a fixture)
    seed_hostile,
    seed_known,
    synthetic_periods,
    synthetic_scored_pairs,
)
from conftest import Cli
from pmos.board.collect import BoardOptions, collect
from pmos.board.page import render
from pmos.board.scores import score_bins
from pmos.board.visible import plain
from pmos.calibration.metrics import compute_metrics
from pmos.kit import Kit, init_kit, open_kit

CHROMIUM = os.environ.get("PMOS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(
    not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)),
    reason="Debian's chromium is not installed (apt-get install chromium; .ci/run installs it)",
)
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    # Every host name resolves to nothing: a request could not leave even if one were made.
    "--host-resolver-rules=MAP * ~NOTFOUND",
]


@dataclasses.dataclass
class Opened:
    page: Any
    url: str
    requests: list[str]
    console: list[tuple[str, str]]
    errors: list[str]

    def text(self, selector: str = "body") -> str:
        return " ".join(self.page.inner_text(selector).split())

    def count(self, selector: str) -> int:
        return self.page.locator(selector).count()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module: starting it is most of a test's time."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        started = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield started
        finally:
            started.close()


@contextmanager
def opened(path: Path, browser: Any, *, javascript: bool = True) -> Iterator[Opened]:
    context = browser.new_context(
        offline=True,
        java_script_enabled=javascript,
        viewport={"width": 1200, "height": 900},
    )
    try:
        page = context.new_page()
        url = path.resolve().as_uri()
        seen = Opened(page, url, [], [], [])
        context.on("request", lambda r: seen.requests.append(r.url))
        page.on("console", lambda m: seen.console.append((m.type, m.text)))
        page.on("pageerror", lambda e: seen.errors.append(str(e)))
        page.goto(url, wait_until="load")
        page.wait_for_load_state("networkidle")
        yield seen
    finally:
        context.close()


def assert_quiet(seen: Opened) -> None:
    """No console error or warning, no page error, no request but the page itself."""
    assert [m for m in seen.console if m[0] in ("error", "warning")] == []
    assert seen.errors == []
    assert [u for u in seen.requests if u != seen.url] == []


@pytest.fixture(scope="module")
def known_board(tmp_path_factory) -> tuple[Kit, Path]:
    """The known kit and the board ``pmos board`` writes of it, made once: the tests
    that take it only open the page."""
    root = tmp_path_factory.mktemp("known") / "kit"
    init_kit(root)
    kit = open_kit(root)
    seed_known(kit)
    out = root.parent / "board.html"
    done = Cli()("--root", str(root), "board", "--out", str(out))
    assert done.exit_code == 0, done.output
    return kit, out


def test_the_known_board_in_chromium(known_board, tmp_path, browser):
    kit, out = known_board
    with opened(out, browser) as seen:
        assert_quiet(seen)
        banner = seen.text("#banner")
        assert banner.startswith("ADVISORY")
        assert " ".join(compute_metrics(kit)["calibration_reason"].split()) in banner
        assert seen.page.is_visible("#banner")
        for cell, count in KNOWN_CONFUSION.items():
            assert seen.text(f"#cell-{cell} .count") == str(count)
            assert seen.page.is_visible(f"#cell-{cell}")
        kappa = seen.page.locator('td[data-stat="Cohen\'s kappa"]')
        assert kappa.inner_text() == "0.600" and kappa.is_visible()
        queues = seen.text("#queues")
        for run in (QUEUE_WAITING, QUEUE_SKIPPED):
            assert run in queues
            assert seen.page.locator("#queues td", has_text=run).first.is_visible()
        assert seen.page.locator("#waiting td", has_text=QUEUE_OWED).first.is_visible()
        # The per-model chart: one mark per model with a defined kappa, one threshold.
        assert seen.count("#chart-by-model svg") == 1
        assert seen.count("#chart-by-model svg .mark") == 2
        assert seen.count("#chart-by-model svg .threshold") == 1
        box = seen.page.locator("#chart-by-model svg").bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 100
        shot = tmp_path / "board.png"
        seen.page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


#: The board's sections, top to bottom: what the PM acts on first.
SECTION_ORDER = [
    "banner",  # the gate's state for the current evaluator model, with the reason
    "waiting",  # the runs waiting for the PM's label, in the order to take them
    "over-time",
    "by-model",
    "scores",
    "confusion",
    "queues",
    "latest",
    "excluded",
    "overrides",
    "provenance",
]


def test_the_pm_reads_the_gate_and_what_waits_first(known_board, browser):
    """Sections in the PM's order, as laid out on screen; the top sentence says what
    the gate does now, for which model, and what waits is in the first screenful."""
    kit, out = known_board
    report = compute_metrics(kit)
    with opened(out, browser) as seen:
        assert_quiet(seen)
        tops = []
        for ident in SECTION_ORDER:
            box = seen.page.locator(f"section#{ident}").bounding_box()
            assert box is not None and box["height"] > 0, ident
            tops.append(box["y"])
        assert tops == sorted(tops) and len(set(tops)) == len(tops), tops
        found = seen.page.evaluate(
            "Array.from(document.querySelectorAll('body > section')).map(s => s.id)"
        )
        assert found == SECTION_ORDER
        sentence = seen.text("#gate-sentence")
        assert sentence == (
            f"The gate is ADVISORY for evaluator model {report['model']}: a run merges only "
            "with the PM's pass label on its passing verdict."
        )
        # The first thing read is that sentence; no point estimate pulls the other way.
        assert seen.text("#banner").split(" ", 1)[1].startswith(sentence)
        assert "point estimate" not in seen.text("#banner")
        waiting = seen.page.locator("#waiting h2").bounding_box()
        assert waiting is not None and waiting["y"] < 900  # within the first screenful
        assert seen.text("#waiting h2") == "Waits for the PM: 1 run(s) to label"
        row = seen.text("#acceptance-queue tr:nth-child(2)")
        assert row.startswith(QUEUE_OWED) and "oldest first" in row


@pytest.mark.usefixtures("known")
def test_every_chart_draws_its_marks_in_chromium(kit, tmp_path, browser):
    """All three charts, the over-time and score ones fed the documented shapes."""
    data = collect(kit, BoardOptions())
    data = dataclasses.replace(
        data,
        metrics={**data.metrics, "periods": synthetic_periods(), "youden_threshold": 0.78},
        periods_supported=True,
        scores=score_bins(synthetic_scored_pairs()),
    )
    out = tmp_path / "all-charts.html"
    out.write_text(render(data).html, encoding="utf-8")
    with opened(out, browser) as seen:
        assert_quiet(seen)
        expected = {"over-time": 8, "by-model": 2, "scores": 6}
        for chart, marks in expected.items():
            assert seen.count(f"#chart-{chart} svg") == 1, chart
            assert seen.count(f"#chart-{chart} svg .mark") == marks, chart
            visible = seen.page.locator(f"#chart-{chart} svg .mark").evaluate_all(
                "els => els.filter(e => { const b = e.getBBox(); "
                "return b.width > 0 || b.height > 0; }).length"
            )
            assert visible == marks, chart
        assert seen.count("#chart-over-time svg .band") == 1
        assert seen.count("#chart-scores svg .threshold") == 2
        seen.page.screenshot(path=str(tmp_path / "all-charts.png"), full_page=True)


@pytest.mark.usefixtures("known")
def test_hostile_text_shows_as_text_and_nothing_runs(kit, tmp_path, browser):
    seed_hostile(kit)
    out = tmp_path / "hostile.html"
    out.write_text(render(collect(kit, BoardOptions())).html, encoding="utf-8")
    with opened(out, browser) as seen:
        assert_quiet(seen)
        assert seen.page.evaluate("typeof window.__pwned") == "undefined"
        assert seen.count("script") == 0
        assert seen.count("img, iframe, object, embed, image, foreignObject") == 0
        on_handlers = seen.page.evaluate(
            "Array.from(document.querySelectorAll('*')).flatMap(e => "
            "Array.from(e.attributes).filter(a => a.name.startsWith('on')).map(a => a.name))"
        )
        assert on_handlers == []
        summaries = seen.page.locator("details > summary")
        for i in range(summaries.count()):  # open every folded detail, as a reader would
            summaries.nth(i).click()
        body = seen.text()
        for hostile in HOSTILE_TEXTS:
            assert " ".join(plain(hostile).split()) in body, hostile
        assert "⟨U+202E⟩" in body
        # The injected <style> did not hide the page.
        assert seen.page.is_visible("#banner")
        seen.page.screenshot(path=str(tmp_path / "hostile.png"), full_page=True)


def test_readable_with_javascript_disabled(known_board, browser):
    _, out = known_board
    with opened(out, browser, javascript=False) as seen:
        assert seen.page.is_visible("#banner")
        assert seen.page.locator("#chart-by-model svg").is_visible()
        assert seen.page.locator('td[data-stat="Cohen\'s kappa"]').inner_text() == "0.600"
        assert [u for u in seen.requests if u != seen.url] == []


@pytest.mark.usefixtures("known")
def test_printable_with_folded_details_unfolded(kit, tmp_path, browser):
    """On paper the folded evidence is printed too, and the page prints to PDF."""
    seed_hostile(kit)
    out = tmp_path / "board.html"
    out.write_text(render(collect(kit, BoardOptions())).html, encoding="utf-8")
    with opened(out, browser) as seen:
        evidence = seen.page.locator("#latest-verdicts details li").first
        assert not evidence.is_visible()  # folded on screen
        seen.page.emulate_media(media="print")
        assert evidence.is_visible()
        assert "criterion c1" in seen.text("#latest-verdicts")
        pdf = seen.page.pdf()
        assert pdf[:5] == b"%PDF-" and len(pdf) > 10_000
        assert_quiet(seen)
