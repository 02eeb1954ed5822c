"""Every command documents itself, and unknown commands are usage errors."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from typing import Any

import pytest
import typer

from pmos.cli import COMMAND_MODULES, app


def walk(group: Any, ctx: Any, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        found.append(((*prefix, name), command))
        if hasattr(command, "list_commands"):
            found += walk(command, ctx, (*prefix, name))
    return found


def test_every_command_has_help():
    root = typer.main.get_command(app)
    ctx = root.make_context("pmos", ["--help"], resilient_parsing=True)
    commands = walk(root, ctx)
    assert {path[0] for path, _ in commands} == set(COMMAND_MODULES)
    for path, command in commands:
        assert command is not None, path
        assert (command.help or "").strip(), f"pmos {' '.join(path)} has no help text"


def test_help_runs_for_every_top_level_command(cli):
    for name in COMMAND_MODULES:
        result = cli(name, "--help")
        assert result.exit_code == 0, name
        assert "Usage:" in result.stdout


def test_unknown_command_is_a_usage_error(pmos):
    result = pmos("frobnicate")
    assert result.returncode == 2
    assert "No such command" in result.stderr


def test_a_bug_exits_70_not_1_or_2():
    import subprocess
    import sys

    code = (
        "import sys; import pmos.cli as c; c.COMMAND_MODULES['boom'] = 'no_such_module'; "
        "sys.argv = ['pmos', 'boom']; c.main()"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 70
    assert "Traceback" in result.stderr and "internal error" in result.stderr


def test_a_locked_ledger_is_a_temporary_failure(kit, monkeypatch):
    import fcntl

    import pytest

    from pmos.errors import LedgerBusy
    from pmos.gate import writers
    from pmos.store import files
    from pmos.store.layout import MARKER

    monkeypatch.setattr(files, "LOCK_TIMEOUT_S", 0.2)
    folder = kit.store.folder("acceptances")
    before = sorted(p.name for p in folder.iterdir())
    with open(folder / MARKER, "rb") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        with pytest.raises(LedgerBusy) as info:
            writers.record_acceptance(kit, run_id="r", label="pass", by="pm")
    assert info.value.exit_code == 75
    assert sorted(p.name for p in folder.iterdir()) == before


def test_a_path_the_system_refuses_is_a_clean_error(pmos):
    long_name = "x" * 5000
    for args in (
        ("rubric", "show", long_name),
        ("--root", long_name, "root"),
        ("init", long_name),
        ("ledger", "show", "evals", "--last", "9" * 25),
    ):
        result = pmos(*args)
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr and result.stderr.startswith("pmos: error:")


# ---------------------------------------------------------------- conventions


def leaf_commands() -> list[tuple[tuple[str, ...], Any]]:
    root = typer.main.get_command(app)
    ctx = root.make_context("pmos", ["--help"], resilient_parsing=True)
    return [(path, cmd) for path, cmd in walk(root, ctx) if not hasattr(cmd, "list_commands")]


def test_version_is_the_package_version(pmos):
    import pmos as package

    result = pmos("--version")
    assert result.returncode == 0
    assert result.stdout == f"pmos {package.__version__}\n"


def test_version_comes_from_one_place():
    import tomllib
    from pathlib import Path

    import pmos as package

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["hatch"]["version"]["path"] == "src/pmos/__init__.py"
    assert package.__version__.count(".") == 2


def test_shell_completion_is_offered(pmos):
    """Typed in bash, as a user types it: Typer finds the shell among pmos's parent
    processes (a shell name after the option is not read). Started straight from the
    test, pmos had a shell among its ancestors only when pytest did, so the test
    failed when the suite ran under a process whose shell had gone."""
    result = subprocess.run(
        ["bash", "-c", '"$0" -m pmos --show-completion; exit $?', sys.executable],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "complete" in result.stdout and "_PMOS_COMPLETE" in result.stdout
    assert "--install-completion" in pmos("--help").stdout


def test_completion_lists_commands_and_choices(pmos):
    env = {"_PMOS_COMPLETE": "complete_bash", "COMP_WORDS": "pmos acc", "COMP_CWORD": "1"}
    assert pmos(env=env).stdout.split() == ["accept"]
    env.update(COMP_WORDS="pmos accept r --label ", COMP_CWORD="4")
    assert pmos(env=env).stdout.split() == ["pass", "fail"]


def test_every_parameter_is_declared_with_annotated():
    import inspect
    import typing

    from typer.models import ParameterInfo

    for path, command in leaf_commands():
        callback = command.callback
        hints = typing.get_type_hints(callback, include_extras=True)
        for name, param in inspect.signature(callback).parameters.items():
            where = f"pmos {' '.join(path)}: {name}"
            assert typing.get_origin(hints[name]) is typing.Annotated, where
            assert not isinstance(param.default, ParameterInfo), where


def test_every_command_says_what_it_does_and_shows_a_working_example():
    for path, command in leaf_commands():
        where = f"pmos {' '.join(path)}"
        assert (command.help or "").strip().splitlines()[0].endswith("."), where
        epilog = command.epilog or ""
        assert "Example" in epilog, f"{where} has no example"
        lines = [line.strip() for line in epilog.splitlines() if line.strip().startswith("pmos ")]
        assert lines, where
        # A hidden default command (pmos assess's) is typed without its name.
        shown = path[:-1] if command.hidden else path
        for line in lines:
            words = shlex.split(line)
            if words[1 + len(shown) : 2 + len(shown)] == ["history"]:
                continue  # pmos assess's epilog also shows its subcommand
            assert words[: 1 + len(shown)] == ["pmos", *shown], line
            # The example parses: every option exists and every choice is valid.
            command.make_context(path[-1], words[1 + len(shown) :])


def test_required_options_say_so_in_help(cli):
    for path, command in leaf_commands():
        required = [p for p in command.params if p.required and p.param_type_name == "option"]
        if not required:
            continue
        text = cli(*path, "--help").stdout
        for param in required:
            assert param.opts[0] in text
        assert "[required]" in text, path


@pytest.mark.parametrize(
    ("args", "valid"),
    [
        (("accept", "r", "--label", "pas", "--by", "pm"), "'pass', 'fail'"),
        (("eval", "log", "r", "i", "0.9", "PASS", "x.md", "m", "--spec", "ok"), "'pass', 'fail'"),
        (("assess", "spec.yaml", "--trigger", "fixed"), "'initial', 'reassess', 'fix'"),
        (("followups", "suggest", "--run-id", "r", "--policy", "al"), "'off', 'suggest', 'create'"),
        (("ledger", "show", "eval"), "'runs', 'evals'"),
        (("schema", "show", "verdicts"), "'run', 'verdict'"),
    ],
)
def test_a_typo_in_a_choice_is_refused_by_the_parser_with_the_valid_values(
    cli, kit_root, args, valid
):
    from conftest import ledger_bytes

    before = ledger_bytes(kit_root)
    result = cli(*args)
    assert result.exit_code == 2
    assert "Invalid value" in result.stderr and valid in result.stderr
    assert ledger_bytes(kit_root) == before


def test_choices_are_the_values_the_schemas_and_library_accept():
    import json
    from pathlib import Path

    from pmos.assess.assessment import TRIGGERS
    from pmos.cli.assesscmds import Trigger
    from pmos.cli.followupcmds import Policy
    from pmos.cli.writercmds import AxisVerdict, Label
    from pmos.tasks.followups import POLICY_MODES, POLICY_SETTINGS

    schemas = Path(__file__).parents[1] / "schemas"
    acceptance = json.loads((schemas / "acceptance.schema.json").read_text())
    verdict = json.loads((schemas / "verdict.schema.json").read_text())
    assert [v.value for v in Label] == acceptance["properties"]["label"]["enum"]
    assert [v.value for v in AxisVerdict] == verdict["$defs"]["axis"]["properties"]["verdict"][
        "enum"
    ]
    assert tuple(v.value for v in Trigger) == TRIGGERS
    assert [v.value for v in Policy] == [*POLICY_SETTINGS, *POLICY_MODES]


def test_assess_help_lists_every_option_of_the_default_command(cli):
    text = cli("assess", "--help").stdout
    for option in ("--cwd", "--task-id", "--run-id", "--trigger", "--lenient", "--json"):
        assert option in text
    assert "SPEC" in text and "history" in text
    assert "initial|reassess|fix|retry|auto-correct|judge" in text


def test_root_prints_what_its_help_says(cli, kit_root):
    help_text = " ".join(cli("root", "--help").stdout.split())
    assert "Print the kit root in use (--json adds where each ledger is)." in help_text
    assert cli("root").stdout == f"{kit_root.resolve()}\n"
    data = json.loads(cli("root", "--json").stdout)
    assert data["root"] == str(kit_root.resolve()) and "evals" in data["ledgers"]


def test_a_usage_error_in_assess_names_the_command_as_typed(pmos):
    result = pmos("assess", "spec.yaml", "--trigger", "fixed")
    assert result.returncode == 2
    assert "Try 'pmos assess --help' for help." in result.stderr
    assert "assess run" not in result.stderr


def test_every_group_shows_an_example(cli):
    root = typer.main.get_command(app)
    ctx = root.make_context("pmos", ["--help"], resilient_parsing=True)
    groups = [path for path, cmd in walk(root, ctx) if hasattr(cmd, "list_commands")]
    assert len(groups) >= 10
    for path in [(), *groups]:
        text = cli(*path, "--help").stdout
        assert "Example" in text and f"pmos {' '.join(path)}".strip() + " " in text, path
