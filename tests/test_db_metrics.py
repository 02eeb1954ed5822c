"""The same numbers from the database: ``pmos metrics --db``, ``pmos queue --db`` and
the SQL views equal file mode on the same records.

Two kits are written through pmos's writers, their records interleaved in
time, and synced; file mode over a kit holding the union of their records is
what the database must give over both. The views only select what each
sync computed with file mode's code; a label that judged an earlier verdict
than its run's latest (where SQL pairing views once disagreed) has its own
test, and tests/test_db_property.py holds ``pmos metrics --db`` equal to
``pmos metrics`` over random kits.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from conftest import Cli
from dbkits import judge, label, new_kit, populate, register, union_kit
from pg_fixtures import fresh_database, migrated
from pmos.kit import Kit, open_kit
from pmos.timestamps import parse_instant

#: Keys of pmos metrics --json that the SQL views also give, view column -> report key.
VIEW_KEYS = {
    "pairs": "pairs",
    "observed_agreement": "observed_agreement",
    "kappa": "kappa",
    "tpr": "tpr",
    "tnr": "tnr",
    "pass_fraction": "pass_fraction",
    "goodhart_alarm": "goodhart_alarm",
    "skipped": "skipped",
    "unlabeled_verdicts": "unlabeled_verdicts",
}


def file_metrics(cli, kit, *args: str) -> dict:
    result = cli("--root", str(kit.root), "metrics", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def db_metrics(cli, dsn: str, *args: str) -> dict:
    result = cli("metrics", "--db", dsn, "--json", *args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    report.pop("kits")
    return report


def sync(cli, kit, dsn: str, kit_id: str) -> None:
    result = cli(
        "--root",
        str(kit.root),
        "sync",
        "--policy-from-working-tree",
        "--db",
        dsn,
        "--kit-id",
        kit_id,
    )
    assert result.exit_code == 0, result.output


def rows(dsn: str, query: str) -> list[dict]:
    with psycopg.connect(dsn) as conn:
        cursor = conn.execute(query)
        names = [c.name for c in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def same(value, expected) -> bool:
    if value is None or expected is None:
        return value is None and expected is None
    if isinstance(expected, bool):
        return value is expected
    return abs(float(value) - float(expected)) <= 1e-6


def assert_view_row_matches(row: dict, report: dict) -> None:
    for column, key in VIEW_KEYS.items():
        assert same(row[column], report[key]), (column, row[column], report[key])
    assert {k: row[k] for k in ("tp", "fn", "fp", "tn")} == report["confusion"]


def build_two_kits(folder: Path, dsn: str, cli: Cli) -> tuple[Kit, Kit, Kit]:
    """Kits a and b, written in alternating slices so their records interleave in
    time, both synced to ``dsn``; and the union of their records as a third kit."""
    a = new_kit(folder / "a")
    b = new_kit(folder / "b")
    # Kit a has settings of its own: they apply to it alone, never to all kits.
    config = a.root / "pmos.yaml"
    text = config.read_text()
    for old, new in (
        ("pass_fraction_window: 20", "pass_fraction_window: 7"),
        ("min_pairs: 20", "min_pairs: 5"),
    ):
        assert old in text
        text = text.replace(old, new)
    config.write_text(text)
    a = open_kit(a.root)
    for first in range(0, 40, 10):
        populate(a, "a", ["gpt-5", "claude-opus-4"], runs=10, seed=1, first=first)
        populate(b, "b", ["gemini-2.5-pro", "gpt-5", "llama-4"], runs=10, seed=2, first=first)
    sync(cli, a, dsn, "kit-a")
    sync(cli, b, dsn, "kit-b")
    return a, b, union_kit(folder / "union", a, b)


@pytest.fixture
def two_kits(tmp_path, db, cli):
    """The two synced kits and their union, for a test that adds records to them."""
    return build_two_kits(tmp_path, db, cli)


@pytest.fixture(scope="module")
def shared(pg_server, tmp_path_factory) -> Iterator[tuple[str, tuple[Kit, Kit, Kit]]]:
    """A database and the two kits synced to it, built once for the tests that only
    read them (building them is most of each such test's time); its DSN and the kits."""
    with fresh_database(pg_server) as dsn:
        yield dsn, build_two_kits(tmp_path_factory.mktemp("shared"), migrated(dsn), Cli())


def test_metrics_db_equals_file_mode_over_the_union_of_the_kits(cli, shared):
    db, two_kits = shared
    a, b, union = two_kits
    expected = file_metrics(cli, union)
    assert expected["pairs"] >= 30 and len(expected["by_model"]) == 4
    assert expected["skipped"] > 0 and expected["labels_without_verdict"] > 0
    assert db_metrics(cli, db) == expected
    # One kit asked for by id: that kit's own file-mode numbers, with its settings.
    assert file_metrics(cli, a)["pass_fraction_window"] == 7
    assert db_metrics(cli, db, "--kit", "kit-a") == file_metrics(cli, a)
    assert db_metrics(cli, db, "--kit", "kit-b") == file_metrics(cli, b)
    both = cli("metrics", "--db", db, "--json", "--kit", "kit-b", "--kit", "kit-a")
    assert json.loads(both.stdout)["kits"] == ["kit-b", "kit-a"]


@pytest.mark.parametrize(
    "args",
    [
        ("--model", "gpt-5"),
        ("--model", "llama-4"),
        ("--initiative", "init-1"),
        ("--window", "7"),
        ("--model", "claude-opus-4", "--initiative", "init-2", "--window", "3"),
    ],
)
def test_filtered_metrics_db_equal_file_mode(cli, shared, args):
    db, two_kits = shared
    _, _, union = two_kits
    assert db_metrics(cli, db, *args) == file_metrics(cli, union, *args)


def test_metrics_db_since_equals_file_mode(cli, db, two_kits, tmp_path):
    a, b, _ = two_kits
    since = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    for first in range(40, 50, 5):
        populate(a, "a", ["gpt-5"], runs=5, seed=3, first=first)
        populate(b, "b", ["llama-4"], runs=5, seed=4, first=first)
    sync(cli, a, db, "kit-a")
    sync(cli, b, db, "kit-b")
    union = union_kit(tmp_path / "union-later", a, b)
    expected = file_metrics(cli, union, "--since", since)
    assert expected["pairs"] > 0
    assert db_metrics(cli, db, "--since", since) == expected


def test_the_views_equal_pmos_metrics(cli, shared):
    """The views select what each kit's sync computed with file mode's code."""
    db, two_kits = shared
    a, b, _ = two_kits
    by_kit = {"kit-a": file_metrics(cli, a), "kit-b": file_metrics(cli, b)}
    calibration = rows(db, "SELECT * FROM v_calibration")
    assert sorted(r["kit_id"] for r in calibration) == ["kit-a", "kit-b"]
    for row in calibration:
        report = by_kit[row["kit_id"]]
        assert_view_row_matches(row, report)
        for key in ("labels_without_verdict", "pass_fraction_window", "labels_superseded"):
            assert row[key] == report[key]
        assert row["calibrated"] is report["calibrated"]
        assert same(row["kappa_threshold"], report["kappa_threshold"])
    assert {r["kit_id"]: r["pass_fraction_window"] for r in calibration} == {
        "kit-a": 7,
        "kit-b": 20,
    }
    by_model = rows(db, "SELECT * FROM v_calibration_by_model")
    for kit_id, report in by_kit.items():
        mine = {r["evaluator_model"]: r for r in by_model if r["kit_id"] == kit_id}
        assert set(mine) == set(report["by_model"])
        for model, row in mine.items():
            assert_view_row_matches(row, report["by_model"][model])
    # The pairs the reports count, and their confusion tables counted by SQL.
    counted = rows(
        db,
        "SELECT kit_id, sum(tp) AS tp, sum(fn) AS fn, sum(fp) AS fp, sum(tn) AS tn "
        "FROM v_pair_counts GROUP BY kit_id",
    )
    for row in counted:
        assert {k: int(row[k]) for k in ("tp", "fn", "fp", "tn")} == by_kit[row["kit_id"]][
            "confusion"
        ]
    pairs = rows(db, "SELECT kit_id, count(*) AS n FROM v_pairs GROUP BY kit_id")
    assert {r["kit_id"]: r["n"] for r in pairs} == {k: r["pairs"] for k, r in by_kit.items()}


def test_the_goodhart_alarm_sounds_in_the_views_and_metrics_alike(cli, db, tmp_path):
    kit = new_kit(tmp_path / "lenient")
    for i in range(25):
        judge(kit, f"r{i}", "PASS" if i != 3 else "FAIL", model="gpt-5", initiative="i")
    sync(cli, kit, db, "lenient")
    report = file_metrics(cli, kit)
    assert report["goodhart_alarm"] is True and report["pass_fraction"] == 1.0
    assert db_metrics(cli, db) == report
    (row,) = rows(db, "SELECT * FROM v_calibration")
    assert row["goodhart_alarm"] is True and same(row["pass_fraction"], 1.0)


def test_a_label_that_does_not_name_the_latest_verdict_counts_as_in_file_mode(cli, db, tmp_path):
    """The case where the SQL pairing views once disagreed with file mode: run x was
    labelled fail against its FAIL, then judged PASS. File mode pairs the label
    with the verdict it judged (a tn) and counts it superseded; y pairs (tp); z was
    never labelled. The views, metrics --db and file mode all say: pairs 2, tn 1,
    kappa 1.0, unlabelled 1."""
    kit = new_kit(tmp_path / "superseded")
    for run in ("x", "y", "z"):
        register(kit, run, "i")
    judge(kit, "x", "FAIL", model="gpt-5", initiative="i")
    label(kit, "x", "fail")
    judge(kit, "x", "PASS", model="gpt-5", initiative="i")
    judge(kit, "y", "PASS", model="gpt-5", initiative="i")
    label(kit, "y", "pass")
    judge(kit, "z", "FAIL", model="gpt-5", initiative="i")
    sync(cli, kit, db, "s")
    report = file_metrics(cli, kit)
    assert (report["pairs"], report["confusion"]["tn"], report["kappa"]) == (2, 1, 1.0)
    assert (report["unlabeled_verdicts"], report["labels_superseded"]) == (1, 1)
    assert db_metrics(cli, db) == report
    assert db_metrics(cli, db, "--kit", "s") == report
    (row,) = rows(db, "SELECT * FROM v_calibration WHERE kit_id = 's'")
    assert_view_row_matches(row, report)
    assert (row["labels_superseded"], row["unlabeled_verdicts"]) == (1, 1)
    pairs = {r["run_id"]: (r["gate_pass"], r["pm_pass"]) for r in rows(db, "SELECT * FROM v_pairs")}
    assert pairs == {"x": (False, False), "y": (True, True)}
    debt = {r["run_id"]: r for r in rows(db, "SELECT * FROM v_acceptance_queue")}
    assert set(debt) == {"x", "z"}
    assert debt["x"]["label_superseded"] is True and debt["x"]["verdict"] == "PASS"
    assert debt["z"]["label_superseded"] is False


def test_an_unregistered_skipped_run_is_verification_debt_in_the_views(cli, db, tmp_path):
    kit = new_kit(tmp_path / "unregistered")
    judge(kit, "ghost", "SKIPPED", model="gpt-5", initiative="i")
    label(kit, "labelled-only", "pass")
    sync(cli, kit, db, "u")
    debt = {r["run_id"]: r for r in rows(db, "SELECT * FROM v_verification_queue")}
    assert set(debt) == {"ghost", "labelled-only"}
    assert debt["ghost"]["status"] == "skipped" and debt["ghost"]["registered"] is False
    assert debt["ghost"]["skipped_reason"] == "evaluator unavailable"
    assert debt["labelled-only"]["status"] == "no-verdict"


def queue_items(items: list[dict], extra: tuple[str, ...]) -> list[tuple]:
    """Each entry's kit, run, initiative, registered, age_from (an instant) and ``extra``."""
    return [
        (
            item["kit_id"],
            item["run_id"],
            item["initiative_id"],
            item["registered"],
            parse_instant(item["age_from"]),
            *(item[k] for k in extra),
        )
        for item in items
    ]


def test_queue_db_and_the_queue_views_equal_each_kits_pmos_queue(cli, shared):
    db, two_kits = shared
    a, b, _ = two_kits
    expected = {"verification_debt": [], "acceptance_debt": []}
    for kit_id, kit in (("kit-a", a), ("kit-b", b)):
        result = cli("--root", str(kit.root), "queue", "--json")
        assert result.exit_code == 1  # both kits owe verdicts
        found = json.loads(result.stdout)
        for key in expected:
            expected[key] += [{"kit_id": kit_id, **item} for item in found[key]]
    for key in expected:
        expected[key].sort(key=lambda i: (parse_instant(i["age_from"]), i["kit_id"], i["run_id"]))
    assert expected["verification_debt"] and expected["acceptance_debt"]
    result = cli("queue", "--db", db, "--json")
    assert result.exit_code == 1
    found = json.loads(result.stdout)
    assert found["kits"] == ["kit-a", "kit-b"]
    verification_extra = ("status", "skipped_reason")
    assert queue_items(found["verification_debt"], verification_extra) == queue_items(
        expected["verification_debt"], verification_extra
    )
    assert queue_items(found["acceptance_debt"], ("verdict",)) == queue_items(
        expected["acceptance_debt"], ("verdict",)
    )
    view = rows(db, "SELECT * FROM v_verification_queue ORDER BY age_from, kit_id, run_id")
    assert queue_items(
        [{**r, "age_from": r["age_from"].isoformat()} for r in view], verification_extra
    ) == queue_items(expected["verification_debt"], verification_extra)
    view = rows(db, "SELECT * FROM v_acceptance_queue ORDER BY age_from, kit_id, run_id")
    assert queue_items(
        [{**r, "age_from": r["age_from"].isoformat()} for r in view], ("verdict",)
    ) == queue_items(expected["acceptance_debt"], ("verdict",))


def test_queue_db_of_one_kit_and_its_human_output(cli, shared):
    db, _ = shared
    result = cli("queue", "--db", db, "--kit", "kit-b")
    assert result.exit_code == 1
    assert "kits: 1" in result.stdout and "kit-b" in result.stdout and "kit-a" not in result.stdout


def test_metrics_db_human_output_names_the_kits(cli, shared):
    db, _ = shared
    result = cli("metrics", "--db", db)
    assert result.exit_code == 0
    assert result.stdout.startswith("kits (2): kit-a, kit-b")
    assert "kappa" in result.stdout and "evaluator model" in result.stdout


def test_an_empty_database_has_no_pairs_and_no_debt(cli, db):
    result = cli("metrics", "--db", db, "--json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report["kits"] == [] and report["pairs"] == 0 and report["kappa"] is None
    assert cli("queue", "--db", db).exit_code == 0
    assert rows(db, "SELECT * FROM v_calibration") == []


def test_an_unknown_kit_is_refused(cli, shared):
    db, _ = shared
    for command in ("metrics", "queue"):
        refused = cli(command, "--db", db, "--kit", "kit-c")
        assert refused.exit_code == 2
        assert "no kit 'kit-c' in the database (known: kit-a, kit-b)" in refused.stderr


def test_kit_without_db_is_refused(cli):
    for command in ("metrics", "queue"):
        refused = cli(command, "--kit", "kit-a")
        assert refused.exit_code == 2
        assert "--kit selects kits in a database: it needs --db DSN" in refused.stderr


def test_a_bad_window_is_refused_in_db_mode_too(cli, db):
    refused = cli("metrics", "--db", db, "--window", "0")
    assert refused.exit_code == 2
    assert "window: must be a whole number of verdicts" in refused.stderr


def test_blind_labels_and_plan_weights_count_in_metrics_db_as_in_file_mode(cli, db, tmp_path):
    """Blind labels ('pmos accept --blind') and plan labels ('pmos accept --plan') reach
    the database as typed columns: metrics --db reports blind_pairs, blind_kappa and the
    weighting block exactly as file mode, for one kit and over two (prefixed ids)."""
    from pmos.gate import plan as sampling
    from pmos.gate.writers import record_acceptance

    kits = []
    for name in ("p", "q"):
        kit = new_kit(tmp_path / name)
        config = kit.root / "pmos.yaml"
        config.write_text(config.read_text() + "\ncalibration:\n  plan_pass_side_rate: 0.5\n")
        kit = open_kit(kit.root)
        for i in range(16):
            verdict = judge(
                kit, f"r{i}", "PASS" if i % 3 else "FAIL", model="gpt-5", initiative="i"
            )
            gate_pass = verdict["verdict"] == "PASS"
            planned = sampling.in_sample(verdict["record_id"], gate_pass, 0.5)
            pm = "pass" if (gate_pass if i % 5 else not gate_pass) else "fail"
            record_acceptance(
                kit, run_id=f"r{i}", label=pm, by="pm", blind=i % 2 == 0, plan=planned
            )
        sync(cli, kit, db, name)
        kits.append(kit)
    report = file_metrics(cli, kits[0])
    assert report["blind_pairs"] == 8 and report["weighting"]["plan_pairs"] > 0
    assert report["weighting"]["weighted"] is True
    assert db_metrics(cli, db, "--kit", "p") == report
    both = db_metrics(cli, db)
    assert both["blind_pairs"] == 16
    # Over several kits the team's settings apply (no plan: rate 1), so a pass-side
    # label's weight of 2 is not the one derived, and counts as 1; the database hands
    # over what each label claims, and the reader decides, as in file mode.
    claimed = [
        (r["plan_weight"], r["gate_verdict"])
        for k in kits
        for r in json.loads(
            cli("--root", str(k.root), "ledger", "show", "acceptances", "--json").stdout
        )
        if "plan_weight" in r
    ]
    w = both["weighting"]
    assert w["weighted"] is False
    assert w["plan_weights_refused"] == sum(1 for weight, _ in claimed if weight == 2.0) > 0
    assert w["plan_pairs"] == sum(1 for weight, _ in claimed if weight == 1.0)
