"""Kit root resolution, pmos.yaml validation and `pmos init`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ledgerfiles
from pmos.errors import ConfigError, KitRootNotFound
from pmos.kit import find_root, init_kit, open_kit
from pmos.store.layout import MARKER, marker_text


def test_explicit_root_wins_over_env(tmp_path, monkeypatch, kit_root):
    other = tmp_path / "other"
    init_kit(other)
    assert find_root(other) == other.resolve()
    monkeypatch.setenv("PMOS_ROOT", str(other))
    assert find_root() == other.resolve()


def test_walks_up_from_the_working_directory(tmp_path, monkeypatch, kit_root):
    monkeypatch.delenv("PMOS_ROOT")
    nested = kit_root / "a" / "b"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    assert find_root() == kit_root.resolve()


def test_finds_a_vendored_kit_from_the_product_root(tmp_path, monkeypatch):
    monkeypatch.delenv("PMOS_ROOT")
    product = tmp_path / "product"
    init_kit(product / "pmos")
    monkeypatch.chdir(product)
    assert find_root() == (product / "pmos").resolve()


def test_no_root_says_how_to_create_one(tmp_path, monkeypatch, pmos):
    monkeypatch.delenv("PMOS_ROOT")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    strays = [
        p for p in empty.parents if (p / "pmos.yaml").exists() or (p / "pmos/pmos.yaml").exists()
    ]
    assert not strays, f"a stray kit above the test folder makes this test meaningless: {strays}"
    with pytest.raises(KitRootNotFound, match="pmos init"):
        find_root(cwd=empty)
    result = pmos("ledger", "verify", cwd=empty, env={"PMOS_ROOT": ""})
    assert result.returncode == 2
    assert "pmos init" in result.stderr


def test_root_option_pointing_nowhere_is_bad_input(pmos, tmp_path):
    result = pmos("--root", str(tmp_path / "nope"), "root")
    assert result.returncode == 2
    assert "has no pmos.yaml" in result.stderr


def test_init_creates_a_ready_kit(tmp_path, cli):
    target = tmp_path / "product" / "pmos"
    result = cli("init", str(target), "--json")
    assert result.exit_code == 0
    created = json.loads(result.stdout)["created"]
    for rel in (
        "pmos.yaml",
        "schemas/verdict.schema.json",
        "planning/evals/agent-run-eval-rubric.md",
        "scripts/pmos-log.sh",
    ):
        assert rel in created
        assert (target / rel).is_file()
    for kind in ledgerfiles.KINDS:
        for name in (MARKER, ".gitignore"):
            assert f"state/{kind}/{name}" in created
        assert (target / "state" / kind / MARKER).read_bytes() == marker_text(kind)
        assert (target / "state" / kind / ".gitignore").read_text() == ".tmp-*\n"
        assert sorted(p.name for p in (target / "state" / kind).iterdir()) == [
            ".gitignore",
            MARKER,
        ]
    assert not list((target / "state").glob("*.jsonl"))  # no single-file ledger any more
    assert (target / "scripts/pmos-log.sh").stat().st_mode & 0o111
    assert open_kit(target).config.kappa_threshold == 0.60


def test_reinit_never_touches_existing_files(kit_root, cli):
    assert (
        cli(
            "run", "register", "--run-id", "r", "--initiative-id", "i", "--builder-model", "m"
        ).exit_code
        == 0
    )
    config = (kit_root / "pmos.yaml").read_text()
    assert "\nmin_pairs: 20\n" in config
    (kit_root / "pmos.yaml").write_text(config.replace("\nmin_pairs: 20\n", "\nmin_pairs: 5\n"))
    before = {p: p.read_bytes() for p in kit_root.rglob("*") if p.is_file()}
    result = cli("init", str(kit_root), "--json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report["created"] == []
    assert "state/runs/.pmos-ledger" in report["kept"]
    assert "state/runs/.gitignore" in report["kept"]
    assert len(ledgerfiles.record_files(kit_root, "runs")) == 1
    assert {p: p.read_bytes() for p in kit_root.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("inner", ["state/evals/inner", "planning", "product/pmos"])
def test_init_inside_an_existing_kit_is_refused_and_writes_nothing(kit_root, cli, inner):
    before = {p: p.read_bytes() for p in kit_root.rglob("*") if p.is_file()}
    result = cli("init", str(kit_root / inner))
    assert result.exit_code == 2
    assert f"inside the kit {kit_root.resolve()}" in result.stderr
    assert {p: p.read_bytes() for p in kit_root.rglob("*") if p.is_file()} == before
    assert not (kit_root / inner).exists() or inner == "planning"


def test_init_beside_a_kit_and_of_a_vendored_kit_is_allowed(tmp_path, cli):
    product = tmp_path / "product"
    assert cli("init", str(product / "pmos")).exit_code == 0
    # A product repository holds its kit in pmos/; another kit beside it is fine,
    # and re-running init on the kit itself completes it.
    assert cli("init", str(product / "tools" / "other")).exit_code == 0
    assert cli("init", str(product / "pmos")).exit_code == 0


def test_init_onto_a_file_is_refused(tmp_path, cli):
    target = tmp_path / "afile"
    target.write_text("x")
    result = cli("init", str(target))
    assert result.exit_code == 2
    assert "not a folder" in result.stderr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("schema_version: 1\nledgers: [\n", "not valid YAML"),
        ("- just\n- a list\n", "must be a YAML mapping"),
        ("schema_version: 1\nledgers: {}\nkappa_threshold: 1.5\n", "kappa_threshold"),
        ("schema_version: 1\nledgers: {}\nkapa_threshold: 0.6\n", "kapa_threshold"),
        ("ledgers: {}\n", "schema_version"),
    ],
)
def test_bad_config_is_reported_precisely(kit_root, cli, text, expected):
    (kit_root / "pmos.yaml").write_text(text)
    with pytest.raises(ConfigError, match=expected):
        open_kit(kit_root)
    result = cli("ledger", "verify")
    assert result.exit_code == 2
    assert expected in result.stderr


def test_root_and_ledger_path_commands(cli, kit_root):
    result = cli("root", "--json")
    data = json.loads(result.stdout)
    assert Path(data["root"]) == kit_root.resolve()
    assert data["ledgers"]["evals"] == str(kit_root.resolve() / "state/evals")
    assert cli("ledger", "path", "acceptances").stdout.strip() == str(
        kit_root.resolve() / "state/acceptances"
    )
    listed = json.loads(cli("ledger", "path", "--json").stdout)
    assert listed == {k: str(kit_root.resolve() / "state" / k) for k in ledgerfiles.KINDS}


def test_repository_is_itself_a_kit_root_with_empty_ledgers():
    repo = Path(__file__).resolve().parents[1]
    kit = open_kit(repo)
    for kind in kit.config.ledgers:
        folder = kit.store.folder(kind)
        assert (folder / MARKER).read_bytes() == marker_text(kind), f"{folder} is no ledger"
        assert sorted(p.name for p in folder.iterdir()) == [".gitignore", MARKER], (
            f"{folder} must hold no records in git"
        )


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize(
    "ledger_path",
    [
        "/tmp/pmos-outside/runs",
        "../outside/runs",
        "state/evals",
        "state/evals/runs",
        "state",
    ],
)
def test_init_refuses_ledgers_outside_or_shared_before_writing(tmp_path, cli, ledger_path):
    target = tmp_path / "product" / "pmos"
    target.mkdir(parents=True)
    (target / "pmos.yaml").write_text(f"schema_version: 1\nledgers:\n  runs: {ledger_path}\n")
    result = cli("init", str(target))
    assert result.exit_code == 2
    assert files_under(target) == ["pmos.yaml"]
    assert not Path("/tmp/pmos-outside").exists()
    assert not (tmp_path / "product" / "outside").exists()


def test_init_with_an_invalid_existing_config_writes_nothing(tmp_path, cli):
    target = tmp_path / "kit2"
    target.mkdir()
    (target / "pmos.yaml").write_text("schema_version: 1\nledgers: {}\nmin_pairs: -3\n")
    result = cli("init", str(target))
    assert result.exit_code == 2 and "min_pairs" in result.stderr
    assert files_under(target) == ["pmos.yaml"]


@pytest.mark.parametrize("where", ["", "   ", "/proc/no-such-kit"])
def test_init_into_an_impossible_place_is_bad_input(cli, where):
    result = cli("init", where)
    assert result.exit_code == 2
    assert result.stderr.startswith("pmos: error:")


def test_config_that_is_not_utf8_is_reported(kit_root, cli):
    (kit_root / "pmos.yaml").write_bytes(b"schema_version: 1\nledgers: {}\n# \xff\xfe\n")
    result = cli("root")
    assert result.exit_code == 2 and "not UTF-8" in result.stderr


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('ledgers: {runs: "state/\\u0000x"}', "ledgers/runs"),
        ("ledgers: {bogus: state/x.jsonl}", "unknown ledger kind"),
        ('default_rubric: ""', "default_rubric"),
    ],
)
def test_config_paths_are_checked(kit_root, cli, line, expected):
    (kit_root / "pmos.yaml").write_text(
        f"schema_version: 1\nledgers: {{}}\n{line}\n".replace("ledgers: {}\nledgers:", "ledgers:")
    )
    result = cli("root")
    assert result.exit_code == 2, result.stderr
    assert expected in result.stderr


def test_a_writer_says_which_kit_it_wrote_to_when_it_found_it_by_searching(
    kit_root, cli, monkeypatch
):
    """Run inside a clone of pmos, or below a folder that holds another kit, the kit
    found upward may not be the one meant: a command that writes says which it was."""
    monkeypatch.delenv("PMOS_ROOT")
    monkeypatch.chdir(kit_root / "planning")
    wrote = cli("run", "register", "--run-id", "r1", "--initiative-id", "i", "--builder-model", "m")
    assert wrote.exit_code == 0
    assert f"pmos: wrote to the kit at {kit_root.resolve()}" in wrote.stderr
    read = cli("ledger", "show", "runs")  # reading names nothing
    assert read.exit_code == 0 and "wrote to the kit" not in read.stderr
    monkeypatch.setenv("PMOS_ROOT", str(kit_root))  # named: nothing to say
    named = cli("run", "register", "--run-id", "r2", "--initiative-id", "i", "--builder-model", "m")
    assert named.exit_code == 0 and "wrote to the kit" not in named.stderr
    monkeypatch.delenv("PMOS_ROOT")
    monkeypatch.chdir(kit_root)  # in the kit root itself, the kit is plain to see
    here = cli("run", "register", "--run-id", "r3", "--initiative-id", "i", "--builder-model", "m")
    assert here.exit_code == 0 and "wrote to the kit" not in here.stderr
