"""Issue 25.4: verified means checkable. Evidence behind verified: true cites a
pointer pmos resolves (a file at the run's head, an assessment check of the run);
the short form without evidence is unverified; named exemplars must exist."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import RUBRIC, good_verdict, ledger_bytes, write_json
from pmos.gate.evidence_pointers import pointers


def test_pointer_forms():
    cited = pointers(
        "tests/test_api.py::test_404 passed; README.md:88 and (src/a.py:35-48), check:as-1#2."
    )
    assert [p.text for p in cited] == [
        "tests/test_api.py::test_404",
        "README.md:88",
        "src/a.py:35-48",
        "check:as-1#2",
    ]
    assert (cited[2].start, cited[2].end) == (35, 48)
    assert pointers("untested here; wasn't executed by me, assumed ok") == []
    assert pointers("tested, works") == []


def register(cli, run: str, *extra: str) -> None:
    result = cli(
        "run", "register", "--run-id", run, "--initiative-id", "init-1",
        "--builder-model", "claude-sonnet-4", *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.output


def test_the_short_form_without_evidence_is_unverified(cli, kit_root, tmp_path):
    """The reproduction: '--criterion c3=pass' with no evidence was stored verified."""
    contract = tmp_path / "contract.yaml"
    contract.write_text("done_criteria:\n  - {id: c3, text: a, test_method: b}\n")
    register(cli, "r1", "--contract", str(contract))
    before = ledger_bytes(kit_root)
    args = ("eval", "log", "r1", "init-1", "0.9", "PASS", RUBRIC, "gpt-5", "--standards", "pass")
    refused = cli(*args, "--criterion", "c3=pass")
    assert refused.exit_code == 2
    assert "[criterion-unverified]" in refused.stderr and "no evidence" in refused.stderr
    assert ledger_bytes(kit_root) == before
    words = cli(*args, "--criterion", "c3=pass:untested here; wasn't executed by me, assumed ok")
    assert words.exit_code == 2 and "[verified-evidence]" in words.stderr
    stored = cli(*args, "--criterion", "c3=pass:tests/test_x.py::test_c3", "--json")
    assert stored.exit_code == 0, stored.output
    [grade] = json.loads(stored.stdout)["criteria"]
    assert grade["verified"] is True


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", *args],
        check=True, capture_output=True,
    )  # fmt: skip


def test_path_pointers_resolve_at_the_runs_head(cli, kit_root, tmp_path):
    repo = tmp_path / "product"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    (repo / "tests").mkdir()
    (repo / "tests" / "test_api.py").write_text("def test_404():\n    pass\n")
    (repo / "README.md").write_text("# x\n" * 50)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "x")
    register(cli, "run-1", "--repo", str(repo), "--head", "HEAD")
    good = good_verdict(initiative_id="init-1", builder_model="claude-sonnet-4")
    good["criteria"][0]["evidence"] = "tests/test_api.py:1 passes"
    good["criteria"][1]["evidence"] = "README.md:40 documents the flag"
    for dimension in good["dimensions"].values():
        dimension["evidence"] = "src/app.py:10-12"
    path = write_json(tmp_path / "v.json", good)
    before = ledger_bytes(kit_root)
    bad = json.loads(json.dumps(good))
    bad["dimensions"]["verification"]["evidence"] = "src/app.py:19-25"
    bad["criteria"][0]["evidence"] = "tests/test_missing.py::test_404"
    bad["criteria"][1]["evidence"] = "checked it myself"
    result = cli("eval", "record", "--file", str(write_json(tmp_path / "bad.json", bad)))
    assert result.exit_code == 2
    assert "lines 19-25 are not in src/app.py (20 lines" in result.stderr
    assert "tests/test_missing.py is not a file at the run's head" in result.stderr
    assert "criteria/1/evidence: verified: true cites no evidence" in result.stderr
    assert ledger_bytes(kit_root) == before
    assert cli("eval", "record", "--file", str(path)).exit_code == 0


def test_check_pointers_name_an_assessment_of_the_run(cli, kit_root, tmp_path):
    register(cli, "run-1")
    spec = tmp_path / "spec.yaml"
    spec.write_text("id: T-1\nexpectations:\n  - {type: test, command: 'true'}\n")
    assessed = cli("assess", str(spec), "--cwd", str(tmp_path), "--run-id", "run-1", "--json")
    assert assessed.exit_code == 0, assessed.output
    record_id = json.loads(assessed.stdout)["record_id"]
    verdict = good_verdict(initiative_id="init-1", builder_model="claude-sonnet-4")
    verdict["criteria"][0]["evidence"] = f"check:{record_id}#7 passed"
    result = cli("eval", "record", "--file", str(write_json(tmp_path / "v.json", verdict)))
    assert result.exit_code == 2 and "has no check 7" in result.stderr
    verdict["criteria"][0]["evidence"] = f"check:{record_id}#0 passed"
    ok = cli("eval", "record", "--file", str(write_json(tmp_path / "v.json", verdict)))
    assert ok.exit_code == 0, ok.output


def test_exemplar_names_must_exist(cli, kit_root, tmp_path):
    register(cli, "run-1")
    verdict = good_verdict(
        initiative_id="init-1", builder_model="claude-sonnet-4", exemplars=["no-such-case"]
    )
    result = cli("eval", "record", "--file", str(write_json(tmp_path / "v.json", verdict)))
    assert result.exit_code == 2 and "[exemplar-unknown]" in result.stderr
    register(cli, "run-0")
    logged = cli(
        "eval", "log", "run-0", "init-1", "0.9", "PASS", RUBRIC, "gpt-5",
        "--spec", "pass", "--standards", "pass",
    )  # fmt: skip
    assert logged.exit_code == 0, logged.output
    assert cli("accept", "run-0", "--label", "fail", "--by", "ana", "--note", "x").exit_code == 0
    served = json.loads(cli("exemplars", "--json").stdout)["anchors"]
    assert served
    verdict["exemplars"] = [served[0]["case_id"]]
    ok = cli("eval", "record", "--file", str(write_json(tmp_path / "v.json", verdict)))
    assert ok.exit_code == 0, ok.output


def test_stored_verdicts_are_held_to_the_same_evidence_rule(cli, kit_root, tmp_path):
    """Issue 25.4 on stored records: a hand-written verdict file whose verified item
    cites no pointer, cites one that does not resolve, or names an exemplar that does
    not exist is reported by 'pmos ledger verify' with the writer's reason; the first
    (a check of form alone) is also left out by every reader."""
    from ledgerfiles import forge
    from pmos.timestamps import now_rfc3339

    repo = tmp_path / "product"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "x")
    register(cli, "run-1", "--repo", str(repo), "--head", "HEAD")
    good = good_verdict(initiative_id="init-1", builder_model="claude-sonnet-4")
    for item in [*good["criteria"], *good["dimensions"].values()]:
        item["evidence"] = "src/app.py:10-12 read"
    written = cli("eval", "record", "--file", str(write_json(tmp_path / "v.json", good)), "--json")
    assert written.exit_code == 0, written.output
    stored = {k: v for k, v in json.loads(written.stdout).items() if k != "digest"}
    assert cli("ledger", "verify").exit_code == 0  # the valid case

    def hand_made(n: int, change) -> dict:
        record = json.loads(json.dumps(stored))
        record.update(record_id=f"ev-handmade-{n:04d}", recorded_at=now_rfc3339())
        change(record)
        forge(kit_root, "evals", record)
        return record

    def problems(*flag: str) -> list[str]:
        result = cli("ledger", "verify", "--json", *flag)
        assert result.exit_code == 1, result.output
        return [p["problem"] for r in json.loads(result.stdout)["ledgers"] for p in r["problems"]]

    no_pointer = hand_made(1, lambda r: r["criteria"][1].update(evidence="checked it myself"))
    for flag in ((), ("--schema",)):
        [problem] = problems(*flag)
        assert "criteria/1/evidence: verified: true cites no evidence" in problem
    report = json.loads(cli("metrics", "--json").stdout)
    assert [e["record_id"] for e in report["excluded_records"]] == [no_pointer["record_id"]]
    for path in (kit_root / "state" / "evals").rglob("*.json"):
        if no_pointer["record_id"] in path.read_text():
            path.unlink()

    hand_made(2, lambda r: r["dimensions"]["verification"].update(evidence="src/app.py:19-25"))
    hand_made(3, lambda r: r.update(exemplars=["no-such-case"]))
    found = problems()
    assert len(found) == 2
    assert any(
        "[verified-evidence]" in p and "lines 19-25 are not in src/app.py (20 lines" in p
        for p in found
    ), found
    assert any("[exemplar-unknown]" in p and "'no-such-case'" in p for p in found), found

    # The same verdicts in a closed month's pack, with a short-form one that cites
    # nothing: reported at their pack lines, by the first reading (which checks each
    # line) and by the next (which takes the month whole from this machine's memo).
    import ledgerfiles

    for path in (kit_root / "state" / "evals").rglob("*.json"):
        if "ev-handmade-" in path.read_text():
            path.unlink()
    in_pack = []
    for n, change in (
        (4, lambda r: r["dimensions"]["verification"].update(evidence="src/app.py:19-25")),
        (5, lambda r: None),
        (6, lambda r: r.update(exemplars=["no-such-case"])),
    ):
        record = json.loads(json.dumps(stored))
        record.update(record_id=f"ev-handmade-{n:04d}", recorded_at=f"2025-01-0{n}T10:00:00Z")
        change(record)
        in_pack.append(record)
    short = {
        k: v
        for k, v in in_pack[1].items()
        if k not in ("criteria", "dimensions", "exemplars", "builder_model", "defects")
    }
    in_pack.insert(1, {**short, "record_id": "ev-handmade-0007", "form": "short"})
    in_pack[1]["recorded_at"] = "2025-01-04T11:00:00Z"
    pack = ledgerfiles.pack_of(kit_root, "evals", in_pack)

    def at_pack() -> list[tuple[int, str]]:
        result = cli("ledger", "verify", "--json")
        return sorted(
            (p["line"], p["problem"])
            for r in json.loads(result.stdout)["ledgers"]
            for p in r["problems"]
            if p["file"] == str(pack)
        )

    first, recalled = at_pack(), at_pack()
    assert first == recalled
    assert [line for line, _ in first] == [2, 5], first  # the short form cites nothing
    assert "lines 19-25 are not in src/app.py" in first[0][1]
    assert "'no-such-case'" in first[1][1]
