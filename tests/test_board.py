"""`pmos board` on kits written by the validated writers: what the page says, and what it refuses.

The page is parsed into a tree (tests/board_support.py) and read by element
and id, the way a browser builds it; tests/test_board_browser.py opens the
same pages in real Chromium.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

import ledgerfiles
from board_support import (
    HOSTILE_MODEL,
    HOSTILE_RUN,
    HOSTILE_TEXTS,
    KNOWN_CONFUSION,
    QUEUE_OWED,
    QUEUE_SKIPPED,
    QUEUE_WAITING,
    external_references,
    known,  # noqa: F401 (a fixture)
    known_template,  # noqa: F401 (a fixture)
    parse_page,
    seed_hostile,
    synthetic_periods,
    synthetic_scored_pairs,
    words,
)
from conftest import ledger_bytes
from pmos.board.collect import BoardOptions, collect, scored_pairs_available
from pmos.board.page import MARKER, render
from pmos.board.scores import score_bins
from pmos.board.visible import plain
from pmos.calibration.metrics import compute_metrics
from pmos.gate import writers
from pmos.store.read import newest_first


def board_page(kit_root: Path) -> tuple[Path, object]:
    path = kit_root / "state" / "board.html"
    return path, parse_page(path.read_text(encoding="utf-8"))


def stat(page, name: str) -> str:
    cells = [n for n in page.find_all("td") if n.attrs.get("data-stat") == name]
    assert len(cells) == 1, name
    return words(cells[0].text())


def table_rows(page, ident: str) -> list[list[str]]:
    table = page.by_id(ident)
    return [[words(td.text()) for td in tr.find_all("td")] for tr in table.find_all("tr")[1:]]


def marks(page, chart: str) -> int:
    figure = page.by_id(f"chart-{chart}")
    return sum("mark" in n.classes() for n in figure.iter())


# ---------------------------------------------------------------- what the page says


@pytest.mark.usefixtures("known")
def test_board_shows_the_known_kit(cli, kit, kit_root):
    result = cli("board")
    assert result.exit_code == 0, result.output
    assert "board written to" in result.stdout and "ADVISORY" in result.stdout
    path, page = board_page(kit_root)
    assert path.read_text(encoding="utf-8").startswith(MARKER)

    banner = words(page.by_id("banner").text())
    report = compute_metrics(kit)
    assert banner.startswith("ADVISORY")
    assert report["calibrated"] is False
    assert words(report["calibration_reason"]) in banner

    for cell, count in KNOWN_CONFUSION.items():
        assert page.by_id(f"cell-{cell}").find_all("span")[0].text() == str(count)
    assert stat(page, "Cohen's kappa") == "0.600"  # (0.8 - 0.5) / (1 - 0.5)
    assert stat(page, "TPR (PM-accepted runs the gate passed)") == "0.800"  # 4/5
    assert stat(page, "TNR (PM-rejected runs the gate failed)") == "0.800"  # 4/5
    assert stat(page, "pairs (runs with a verdict and a PM label)") == "10"

    verification = table_rows(page, "verification-queue")
    assert [row[0] for row in verification] == [QUEUE_WAITING, QUEUE_SKIPPED]  # oldest first
    assert verification[0][3] == "no-verdict"
    assert verification[1][3:] == ["skipped", "the branch was never pushed"]
    acceptance = table_rows(page, "acceptance-queue")
    assert [row[0] for row in acceptance] == [QUEUE_OWED]

    latest = table_rows(page, "latest-verdicts")
    assert latest[0][0] == QUEUE_OWED  # newest first
    assert len(latest) == 12  # ten pairs, one skip, one unlabelled verdict

    overrides = table_rows(page, "overrides-table")
    # known-fp-1 (PM rejected a PASS) and known-fn-1 (PM accepted a FAIL), newest first.
    assert [row[1] for row in overrides] == ["known-fp-1", "known-fn-1"]

    checkpoint = {row[0]: row for row in table_rows(page, "checkpoint")}
    newest = next(iter(newest_first(kit.store, "evals")))
    assert checkpoint["evals"][1] == newest["record_id"]


@pytest.mark.usefixtures("known")
def test_models_table_and_chart(cli, kit, kit_root):
    assert cli("board").exit_code == 0
    _, page = board_page(kit_root)
    rows = {row[0]: row for row in table_rows(page, "models-table")}
    assert set(rows) == {"gpt-5", "claude-opus-4"}
    # gpt-5: tp 2, fn 1, tn 2 -> po 0.8, pe 0.4*0.6 + 0.6*0.4 = 0.48, kappa 0.32/0.52
    assert rows["gpt-5"][1:3] == ["5", "0.615"]
    assert marks(page, "by-model") == 2
    thresholds = [n for n in page.by_id("chart-by-model").iter() if "threshold" in n.classes()]
    assert len(thresholds) == 1


@pytest.mark.usefixtures("known")
def test_charts_this_pmos_cannot_feed_say_so(cli, kit, kit_root):
    result = cli("board", "--json")
    summary = json.loads(result.stdout)
    _, page = board_page(kit_root)
    import inspect

    from pmos.calibration import metrics

    if "by" in inspect.signature(metrics.compute_metrics).parameters:
        assert summary["charts"]["over-time"] is not None
    else:
        assert summary["charts"]["over-time"] is None
        assert words(page.by_id("missing-over-time").text()).startswith("not available")
    if scored_pairs_available():
        assert summary["charts"]["scores"] is not None
    else:
        assert summary["charts"]["scores"] is None
        assert words(page.by_id("missing-scores").text()).startswith("not available")
        assert stat_row(page, "score-statistics", "ROC AUC") == "not available"


def stat_row(page, table: str, starts: str) -> str:
    for row in table_rows(page, table):
        if row[0].startswith(starts):
            return row[1]
    raise AssertionError(f"no row starting {starts!r} in {table}")


@pytest.mark.usefixtures("known")
def test_every_chart_from_documented_shapes(kit):
    """The over-time chart and the score histogram, fed the documented shapes of
    compute_metrics(by=...)["periods"] and scored_pairs(), with the PM-optimal threshold."""
    data = collect(kit, BoardOptions())
    data = dataclasses.replace(
        data,
        metrics={**data.metrics, "periods": synthetic_periods(), "youden_threshold": 0.78},
        periods_supported=True,
        scores=score_bins(synthetic_scored_pairs()),
    )
    page_data = render(data)
    assert page_data.charts == {"over-time": 8, "by-model": 2, "scores": 6}
    page = parse_page(page_data.html)
    assert marks(page, "over-time") == 8
    assert marks(page, "scores") == 6
    chart = page.by_id("chart-scores")
    ids = {n.attrs.get("id") for n in chart.iter() if "threshold" in n.classes()}
    assert ids == {"scores-threshold-rubric", "scores-threshold-optimal"}
    periods = table_rows(page, "periods-table")
    assert [row[0] for row in periods] == [f"2026-W{w}" for w in range(45, 50)]
    assert periods[2][4] == "undefined"  # the period whose kappa is null
    bins = table_rows(page, "score-bins")
    assert bins[14][2:] == ["2", "1"]  # 0.70-0.75: accepted 0.72, 0.74; rejected 0.73
    assert bins[19][2:] == ["2", "0"]  # 0.95 and 1.0
    assert stat_row(page, "score-statistics", "PM-optimal threshold") == "0.780"
    assert stat_row(page, "score-statistics", "rubric threshold") == "0.70"
    assert external_references(page_data.html) == []


@pytest.mark.usefixtures("known")
def test_out_dash_writes_the_page_to_stdout(cli, kit, kit_root):
    result = cli("board", "--out", "-")
    assert result.exit_code == 0
    assert result.stdout.startswith(MARKER)
    assert "known-fn-1" in result.stdout
    assert not (kit_root / "state" / "board.html").exists()


@pytest.mark.usefixtures("known")
def test_json_summary(cli, kit, kit_root, tmp_path):
    out = tmp_path / "site" / "board.html"
    out.parent.mkdir()
    result = cli("board", "--out", str(out), "--json")
    assert result.exit_code == 0
    summary = json.loads(result.stdout)
    assert set(summary) == {
        "path",
        "bytes",
        "generated_at",
        "kit_root",
        "calibrated",
        "charts",
        "unavailable",
        "checkpoint",
        "ledgers_moved",
    }
    assert summary["path"] == str(out)
    assert summary["bytes"] == out.stat().st_size
    assert summary["calibrated"] is False
    assert summary["charts"]["by-model"] == 2
    assert summary["ledgers_moved"] is False
    assert [c["kind"] for c in summary["checkpoint"]] == ["runs", "evals", "acceptances"]


@pytest.mark.usefixtures("known")
def test_scope_filters(cli, kit, kit_root):
    assert cli("board", "--model", "gpt-5").exit_code == 0
    _, page = board_page(kit_root)
    assert stat(page, "pairs (runs with a verdict and a PM label)") == "5"
    latest = table_rows(page, "latest-verdicts")
    assert all(row[5] == "gpt-5" for row in latest)

    assert cli("board", "--initiative", "init-b").exit_code == 0
    _, page = board_page(kit_root)
    assert stat(page, "pairs (runs with a verdict and a PM label)") == "0"
    assert [row[0] for row in table_rows(page, "acceptance-queue")] == [QUEUE_OWED]
    assert page.find_all(id="verification-queue") == []
    assert "Verification queue: 0 run(s)" in words(page.by_id("queues").text())

    assert cli("board", "--since", "2999-01-01").exit_code == 0
    _, page = board_page(kit_root)
    assert stat(page, "pairs (runs with a verdict and a PM label)") == "0"
    assert page.find_all(id="latest-verdicts") == []


@pytest.mark.usefixtures("known")
def test_limit_caps_every_list(cli, kit, kit_root):
    assert cli("board", "--limit", "1").exit_code == 0
    _, page = board_page(kit_root)
    assert len(table_rows(page, "latest-verdicts")) == 1
    assert len(table_rows(page, "verification-queue")) == 1
    assert len(table_rows(page, "overrides-table")) == 1
    assert "1 more not shown" in words(page.by_id("queues").text())


@pytest.mark.usefixtures("known")
def test_large_kits_read_in_child_processes_give_the_same_board(kit, monkeypatch):
    """The forked readers (used from PARALLEL_MIN_BYTES of eval ledger up) collect
    exactly what the in-process readers do."""
    from pmos.board import collect as collect_module

    options = BoardOptions(limit=3)
    now = datetime.now(UTC)  # one moment for both, so the queue ages agree
    inline = collect(kit, options, now=now)
    monkeypatch.setattr(collect_module, "PARALLEL_MIN_BYTES", 0)
    assert collect_module._large(kit)
    forked = collect(kit, options, now=now)
    for part in ("metrics", "verification", "acceptance", "latest", "overrides", "scores"):
        assert getattr(forked, part) == getattr(inline, part), part
    assert forked.verification.total == 2 and len(forked.verification.shown) == 2


@pytest.mark.usefixtures("known")
def test_an_existing_board_is_replaced(cli, kit, kit_root):
    assert cli("board").exit_code == 0
    first = (kit_root / "state" / "board.html").read_text(encoding="utf-8")
    assert cli("board", "--limit", "2").exit_code == 0
    second = (kit_root / "state" / "board.html").read_text(encoding="utf-8")
    assert second != first and second.startswith(MARKER)


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--limit", "0"], "limit: must be from 1"),
        (["--limit", "5001"], "limit: must be from 1"),
        (["--by", "fortnight"], "is not a period"),
        (["--by", "0"], "is not a period"),
        (["--since", "yesterday"], "is not a date"),
        (["--out", "state/evals.jsonl"], "evals ledger's place"),
        (["--out", "state/runs.jsonl"], "runs ledger's place"),
        (["--out", "no-such-folder/board.html"], "does not exist"),
        (["--out", "pmos.yaml"], "not a board written by 'pmos board'"),
        (["--out", "state"], "not a regular file"),
        (["--out", "-", "--json"], "use one of them"),
    ],
)
@pytest.mark.usefixtures("known")
def test_bad_input_exits_2_and_writes_nothing(cli, kit, kit_root, args, message):
    before = ledger_bytes(kit_root)
    config = (kit_root / "pmos.yaml").read_bytes()
    result = cli("board", *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert ledger_bytes(kit_root) == before
    assert (kit_root / "pmos.yaml").read_bytes() == config
    assert not (kit_root / "state" / "board.html").exists()


@pytest.mark.parametrize(
    "args",
    [["--limit", "1"], ["--limit", "5000"], ["--by", "month"], ["--by", "50"],
     ["--since", "2026-01-01"], ["--out", "fresh.html"]],
)  # fmt: skip
@pytest.mark.usefixtures("known")
def test_good_input_counterparts(cli, kit, kit_root, args):
    result = cli("board", *args)
    assert result.exit_code == 0, result.output


@pytest.mark.usefixtures("known")
def test_refuses_to_write_through_a_symlink(cli, kit, kit_root, tmp_path):
    victim = tmp_path / "victim.html"
    victim.write_text("precious", encoding="utf-8")
    (kit_root / "link.html").symlink_to(victim)
    result = cli("board", "--out", "link.html")
    assert result.exit_code == 2
    assert "symlink" in result.stderr
    assert victim.read_text(encoding="utf-8") == "precious"


@pytest.mark.slow
@pytest.mark.usefixtures("known")
def test_without_the_extra_it_says_how_to_install_it(pmos, kit, kit_root, tmp_path):
    """A real process in which matplotlib cannot be imported (a package that raises
    ImportError shadows it), as on an install without the 'board' extra."""
    shadow = tmp_path / "shadow" / "matplotlib"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('not installed')\n", encoding="utf-8")
    src = str(Path(__file__).resolve().parents[1] / "src")
    before = ledger_bytes(kit_root)
    result = pmos("board", env={"PYTHONPATH": os.pathsep.join([str(shadow.parent), src])})
    assert result.returncode == 2, result.stderr
    assert "pip install 'pmos[board]'" in result.stderr
    assert "matplotlib" in result.stderr
    assert ledger_bytes(kit_root) == before
    assert not (kit_root / "state" / "board.html").exists()
    # The same process without the shadow writes the board.
    ok = pmos("board", env={"PYTHONPATH": src})
    assert ok.returncode == 0, ok.stderr


# ---------------------------------------------- hostile text, no external reference


@pytest.mark.usefixtures("known")
def test_hostile_text_is_shown_as_text(cli, kit, kit_root):
    seed_hostile(kit)
    result = cli("board")
    assert result.exit_code == 0, result.output
    html = (kit_root / "state" / "board.html").read_text(encoding="utf-8")
    page = parse_page(html)
    assert page.find_all("script") == []
    assert page.find_all("img") == [] and page.find_all("iframe") == []
    # The page's own <style> and the charts' style sheets only.
    assert all(n.parent.tag in ("head", "defs") for n in page.find_all("style"))
    on_attributes = [(n.tag, a) for n in page.iter() for a in n.attrs if a.startswith("on")]
    assert on_attributes == []
    text = page.text()
    for hostile in HOSTILE_TEXTS:
        assert plain(hostile) in text, hostile
    # Hidden characters are spelled out, never left to act.
    assert "\u202e" not in html and "\u2066" not in html and "\u200b" not in html
    assert "⟨U+202E⟩" in text
    # The model name is also a tick label inside the per-model chart's SVG.
    chart_text = page.by_id("chart-by-model").text()
    assert f"{HOSTILE_MODEL} (1 pairs)" in chart_text
    queue = [row[0] for row in table_rows(page, "verification-queue")]
    assert plain(HOSTILE_RUN + "-skipped") in queue
    assert external_references(html) == []


@pytest.mark.usefixtures("known")
def test_the_board_references_nothing_outside_itself(cli, kit, kit_root):
    assert cli("board").exit_code == 0
    html = (kit_root / "state" / "board.html").read_text(encoding="utf-8")
    assert external_references(html) == []
    page = parse_page(html)
    svgs = page.find_all("svg")
    assert svgs, "the board has at least one chart"
    assert all("xmlns" not in svg.attrs for svg in svgs)
    csp = [
        n.attrs["content"]
        for n in page.find_all("meta")
        if n.attrs.get("http-equiv") == "Content-Security-Policy"
    ]
    assert csp and csp[0].startswith("default-src 'none'")


@pytest.mark.parametrize(
    "snippet",
    [
        '<link rel="stylesheet" href="https://cdn.example/x.css">',
        '<script src="app.js"></script>',
        '<img src="data:image/png;base64,AAAA">',
        '<svg><image href="//cdn.example/a.png"></image></svg>',
        '<svg xmlns="http://www.w3.org/2000/svg"><g></g></svg>',
        '<svg><use href="https://x.example/s.svg#a"></use></svg>',
        '<svg><g style="fill: url(https://x.example/p.svg#g)"></g></svg>',
        '<svg><g clip-path="url(other.svg#c)"></g></svg>',
        "<style>@import 'x.css';</style>",
        "<style>body { background: url(x.png) }</style>",
        '<a href="https://example.com/">x</a>',
        '<meta http-equiv="refresh" content="0; url=https://example.com/">',
        '<div data-x="javascript:alert(1)"></div>',
        '<form action="/post"></form>',
    ],
)
def test_the_reference_check_finds_every_kind_of_reference(snippet):
    html = f"<!DOCTYPE html><html><head></head><body>{snippet}</body></html>"
    assert external_references(html), snippet


def test_the_reference_check_accepts_references_inside_the_page():
    html = (
        "<!DOCTYPE html><html><head><style>p { color: red }</style></head><body>"
        '<a href="#top">top</a><svg><defs><path id="m1" d="M 0 0"></path></defs>'
        '<use href="#m1"></use><g clip-path="url(#c1)" style="fill: #fff"></g></svg>'
        "</body></html>"
    )
    assert external_references(html) == []


@pytest.mark.slow
@pytest.mark.usefixtures("known")
def test_no_pyplot_and_no_raster(kit, tmp_path):
    """The charts come from the SVG backend alone: pyplot (which picks an interactive
    or Agg backend) is never imported, and no chart holds a raster <image>."""
    code = (
        "import sys, dataclasses\n"
        "from pmos.kit import open_kit\n"
        "from pmos.board.collect import BoardOptions, collect\n"
        "from pmos.board.page import render\n"
        "page = render(collect(open_kit(sys.argv[1]), BoardOptions()))\n"
        "assert page.charts['by-model'] == 2, page.charts\n"
        "print('pyplot' if 'matplotlib.pyplot' in sys.modules else 'no-pyplot')\n"
        "print('image' if '<image' in page.html else 'no-image')\n"
    )
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", code, str(kit.root)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["no-pyplot", "no-image"]


# ---------------------------------------------------------------- the PM's order


@pytest.mark.usefixtures("known")
def test_what_waits_for_the_pm_takes_an_order_with_reasons(kit):
    """A labelling plan's suggestion replaces the acceptance queue's order; a run
    without a reason reads as the queue's own order."""
    plain_order = collect(kit, BoardOptions())
    assert [w.run_id for w in plain_order.waiting] == [QUEUE_OWED]
    page = parse_page(render(plain_order).html)
    [row] = table_rows(page, "acceptance-queue")
    assert row[0] == QUEUE_OWED and row[1] == "init-b" and "PASS" in row[3]
    assert row[4] == "oldest first (the acceptance queue)"

    suggested = collect(
        kit,
        BoardOptions(),
        order=[("known-fn-1", "the gate and the PM disagreed"), (QUEUE_OWED, None)],
    )
    page = parse_page(render(suggested).html)
    rows = table_rows(page, "acceptance-queue")
    assert [r[0] for r in rows] == ["known-fn-1", QUEUE_OWED]
    assert rows[0][4] == "the gate and the PM disagreed"
    assert rows[1][4] == "oldest first (the acceptance queue)"
    assert words(page.by_id("waiting").find_all("h2")[0].text()) == (
        "Waits for the PM: 2 run(s) to label"
    )


@pytest.mark.usefixtures("known")
def test_the_banner_says_one_thing_and_every_undefined_says_why(kit):
    page = parse_page(render(collect(kit, BoardOptions())).html)
    banner = words(page.by_id("banner").text())
    assert "point estimate" not in banner
    assert words(page.by_id("gate-sentence").text()).startswith("The gate is ADVISORY for")
    # Short-form verdicts carry no score: AUC is undefined, and says why beside it.
    rows = table_rows(page, "score-statistics")
    auc = next(r for r in rows if r[0].startswith("ROC AUC"))
    assert auc[1] == "undefined" and "full-form" in auc[3]
    for row in rows:
        assert row[1] != "undefined" or row[3], row


@pytest.mark.usefixtures("known")
def test_latest_verdicts_show_the_pm_label_and_excluded_records_their_rule(kit, kit_root):
    page = parse_page(render(collect(kit, BoardOptions())).html)
    latest = {row[0]: row for row in table_rows(page, "latest-verdicts")}
    # The SKIPPED verdict names no builder; the run record does.
    assert latest[QUEUE_SKIPPED][6] == "claude-sonnet-4"
    assert latest["known-fp-1"][7] == "fail (unsigned)"
    assert latest[QUEUE_OWED][7] == "none (no label yet)"
    assert page.find_all(id="excluded-records") == []
    assert "No record was left out." in words(page.by_id("excluded").text())

    # A verdict made by hand that contradicts the combine rule counts nowhere, and
    # the board lists it with its rule.
    [original] = [r for r in ledgerfiles.stored(kit_root, "evals") if r["run_id"] == QUEUE_OWED]
    forged = {**original, "record_id": "ev-forged-1", "verdict": "FAIL"}
    forged.pop("digest", None)
    ledgerfiles.forge(kit_root, "evals", forged)
    report = compute_metrics(kit)
    assert any(e["record_id"] == "ev-forged-1" for e in report["excluded_records"])
    page = parse_page(render(collect(kit, BoardOptions())).html)
    rows = table_rows(page, "excluded-records")
    [row] = [r for r in rows if r[1] == "ev-forged-1"]
    assert row[0] == "evals" and row[2] and row[3]

    # A label the PM gave without seeing the verdict says so.
    writers.record_acceptance(kit, run_id=QUEUE_OWED, label="pass", by="pm", blind=True)
    page = parse_page(render(collect(kit, BoardOptions())).html)
    latest = {row[0]: row for row in table_rows(page, "latest-verdicts")}
    assert latest[QUEUE_OWED][7] == "pass (unsigned, blind)"
