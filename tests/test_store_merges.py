"""Compaction never makes a merge conflict, under git's defaults.

Real repositories, real git with its default settings (rename detection on,
the ``ort`` strategy, no attributes, no ``-c`` options): records are added on
branches to open and closed months while main compacts, the same compaction
runs on two branches, a late branch adds to a month compacted meanwhile, and
branches arrive by merge, squash and rebase. Every merge must succeed with no
conflict, and the merged kit must hold every record exactly once, as
``pmos ledger show KIND --jsonl`` lists them.

Records of past months are made by the store's own record-file function
(:func:`pmos.store.append.seal`, then :func:`pmos.store.append.write_sealed`):
the store's append takes its time from the machine's clock, with no way to
inject another, and these tests need records dated in closed months.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

import ledgerfiles
from conftest import Cli
from pmos.kit import init_kit
from pmos.store.append import seal, write_sealed
from pmos.store.digest import digest_bytes
from pmos.store.layout import PACK
from test_store_git import git


def month_back(months: int) -> str:
    """``YYYY-MM`` of the month ``months`` before the current one (closed for months >= 2)."""
    today = datetime.now(UTC).date()
    index = today.year * 12 + today.month - 1 - months
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


class Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.kit = path / "pmos"
        self.cli = Cli()
        self.made: set[str] = set()
        self.count = 0

    def pmos(self, *args: str, code: int = 0):
        result = self.cli("--root", str(self.kit), *args)
        assert result.exit_code == code, (args, result.stdout, result.stderr)
        return result

    def add(self, month: str | None, n: int = 2) -> None:
        """``n`` run records dated in ``month`` (None: now, the open month)."""
        folder = self.kit / "state" / "runs"
        sealed = []
        for _ in range(n):
            self.count += 1
            record = ledgerfiles.run_record(f"r{self.count}")
            if month is not None:
                record["recorded_at"] = f"{month}-15T10:00:00.{self.count:06d}Z"
            made = seal("runs", record)
            sealed.append(made)
            self.made.add(digest_bytes(made.line[: -len(',"digest":"') - 64 - 3] + b"}"))
        write_sealed(folder, sealed)

    def commit(self, message: str) -> None:
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "-m", message)

    def merge(self, *args: str) -> None:
        done = git(self.path, "merge", "--no-edit", *args, check=False)
        assert done.returncode == 0 and "CONFLICT" not in done.stdout, done.stdout + done.stderr

    def digests(self) -> list[str]:
        out = self.pmos("ledger", "show", "runs", "--jsonl").stdout.encode()
        return [digest_bytes(line) for line in out.splitlines()]

    def assert_holds(self, expected: set[str]) -> None:
        found = self.digests()
        assert len(found) == len(set(found)), "a record is listed twice"
        assert set(found) == expected
        self.pmos("ledger", "verify")

    def packs(self) -> list[str]:
        return sorted(
            p.name for p in (self.kit / "state" / "runs").glob("*/*") if PACK.match(p.name)
        )


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    path = tmp_path / "product"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    init_kit(path / "pmos")
    made = Repo(path)
    made.commit("base: vendor pmos")
    return made


CLOSED, OLDER = month_back(2), month_back(3)


def test_compaction_on_main_while_branches_add_to_open_and_closed_months(repo: Repo):
    repo.add(CLOSED, 3)
    repo.add(OLDER, 2)
    repo.add(None, 2)
    repo.commit("records")
    git(repo.path, "tag", "fork")
    for name, month in (("a", CLOSED), ("b", None), ("c", OLDER)):
        git(repo.path, "checkout", "-q", "-b", name, "fork")
        repo.add(month, 2)
        repo.add(None, 1)
        repo.commit(f"{name}: records")
    git(repo.path, "checkout", "-q", "main")
    repo.pmos("ledger", "pack")
    assert len(repo.packs()) == 2  # the two closed months; the open one stays loose
    repo.commit("main: pack")
    for name in ("a", "b", "c"):
        repo.merge(name)
    repo.assert_holds(repo.made)
    repo.pmos("ledger", "pack")  # folds what the branches added to closed months
    repo.commit("main: pack again")
    assert len(repo.packs()) == 2
    repo.assert_holds(repo.made)


def test_the_same_compaction_on_two_branches_makes_one_file(repo: Repo):
    repo.add(CLOSED, 4)
    repo.add(None, 1)
    repo.commit("records")
    git(repo.path, "checkout", "-q", "-b", "side")
    result = repo.pmos("ledger", "pack", code=2)  # refused off the default branch
    assert "default branch" in result.stderr and "rename" in result.stderr
    forced = repo.pmos("ledger", "pack", "--force")
    assert "--force" in forced.stderr
    side_packs = repo.packs()
    repo.add(None, 1)
    repo.commit("side: pack (forced) and a record")
    git(repo.path, "checkout", "-q", "main")
    repo.pmos("ledger", "pack")
    assert repo.packs() == side_packs  # byte-identical, so one name
    repo.add(None, 1)
    repo.commit("main: pack and a record")
    repo.merge("side")
    repo.assert_holds(repo.made)


def test_a_late_branch_adds_to_a_month_compacted_meanwhile(repo: Repo):
    repo.add(CLOSED, 2)
    repo.commit("records")
    git(repo.path, "checkout", "-q", "-b", "late")
    repo.add(CLOSED, 1)  # a record of last month's work, committed late
    repo.commit("late: a record of a closed month")
    git(repo.path, "checkout", "-q", "main")
    repo.pmos("ledger", "pack")
    repo.commit("main: pack")
    repo.merge("late")
    repo.assert_holds(repo.made)
    git(repo.path, "checkout", "-q", "-b", "later")
    repo.add(CLOSED, 1)
    repo.commit("later: another")
    git(repo.path, "checkout", "-q", "main")
    repo.pmos("ledger", "pack")
    repo.commit("main: pack again")
    repo.merge("later")
    repo.assert_holds(repo.made)


@pytest.mark.parametrize("how", ["squash", "rebase"])
def test_squash_and_rebase_merges_after_compaction(repo: Repo, how: str):
    repo.add(CLOSED, 3)
    repo.add(None, 1)
    repo.commit("records")
    git(repo.path, "checkout", "-q", "-b", "topic")
    for _ in range(2):
        repo.add(CLOSED, 1)
        repo.add(None, 1)
        repo.commit("topic: records")
    git(repo.path, "checkout", "-q", "main")
    repo.pmos("ledger", "pack")
    repo.add(None, 1)
    repo.commit("main: pack")
    if how == "squash":
        repo.merge("--squash", "topic")
        repo.commit("squash topic")
    else:
        git(repo.path, "checkout", "-q", "topic")
        done = git(repo.path, "rebase", "main", check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        git(repo.path, "checkout", "-q", "main")
        repo.merge("--ff-only", "topic")
    repo.assert_holds(repo.made)
    repo.pmos("ledger", "pack")
    repo.commit("main: pack after")
    repo.assert_holds(repo.made)


def test_a_pack_is_a_function_of_its_records(tmp_path: Path):
    """Two kits holding the same records of a closed month, written in another
    order, pack them into byte-identical files."""
    kits = []
    for order in (1, -1):
        root = tmp_path / f"k{order}"
        init_kit(root)
        records = [ledgerfiles.run_record(f"x{i}") for i in range(5)]
        for i, record in enumerate(records):
            record["recorded_at"] = f"{CLOSED}-0{i + 1}T00:00:00.000000Z"
            record["record_id"] = f"run-{i}"
        write_sealed(root / "state" / "runs", [seal("runs", r) for r in records[::order]])
        assert Cli()("--root", str(root), "ledger", "pack", "runs").exit_code == 0
        (pack,) = sorted((root / "state" / "runs" / CLOSED).glob("pack-*.jsonl"))
        kits.append(pack.read_bytes())
        header = orjson.loads(pack.read_bytes().split(b"\n", 1)[0])
        assert header == {"pmos_pack": 2, "kind": "runs", "bucket": CLOSED, "records": 5}
    assert kits[0] == kits[1]


def test_an_open_month_and_the_grace_period_are_not_compacted(repo: Repo):
    last = month_back(1)
    repo.add(last, 2)
    repo.add(None, 2)
    grace_over = datetime.now(UTC).day >= 1 + 7  # last month closed on the 1st, plus 7 days
    repo.pmos("ledger", "pack")
    loose_months = {p.parent.parent.name for p in ledgerfiles.record_files(repo.kit, "runs")}
    assert datetime.now(UTC).strftime("%Y-%m") in loose_months  # the open month: never
    assert (last in loose_months) != grace_over  # last month: only after the grace days
