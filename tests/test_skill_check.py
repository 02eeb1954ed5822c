"""`pmos skill check` on the shipped documents, on broken copies, and its parsing rules."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer

from pmos.assets import kit_source
from pmos.cli import app
from pmos.kit import init_kit
from pmos.kit.skills import CommandTree, _invocations, script_path

REPO = kit_source()
EVALUATOR = "skills/evaluator/SKILL.md"


def check(cli, *args: str) -> tuple[int, dict]:
    result = cli("skill", "check", "--json", *args)
    return result.exit_code, json.loads(result.stdout)


def problems(data: dict) -> set[tuple[str, str, str]]:
    # The "(known: ...)" list of commands is context, not the problem itself.
    return {
        (p["path"], p["rule"], re.sub(r" \(known: [^)]*\)$", "", p["message"]))
        for p in data["problems"]
    }


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A vendored copy of the kit's documents to break."""
    root = tmp_path / "copy"
    init_kit(root)
    return root


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def introduced(cli, root: Path, change) -> tuple[int, set]:
    """Exit code and the problems a change adds to the copy (the copy before is the baseline)."""
    _, before = check(cli, str(root))
    change()
    code, after = check(cli, str(root))
    return code, problems(after) - problems(before)


# ---------------------------------------------------------------- the shipped files


def test_the_repository_documents_pass(cli):
    result = cli("--root", str(REPO), "skill", "check")
    assert result.exit_code == 0, result.stdout
    result = cli("--root", str(REPO), "skill", "check", "--json")
    data = json.loads(result.stdout)
    assert data["ok"] is True
    assert set(data["skills"]) == {"skills/acceptance/SKILL.md", "skills/evaluator/SKILL.md"}
    for name in (
        "AGENTS.md",
        "kit/AGENTS.md",
        "README.md",
        "DECISIONS.md",
        "skills/SKILL-FORMAT.md",
    ):
        assert name in data["files"]
    assert any(f.startswith("planning/research/") for f in data["files"])
    assert data["commands_checked"] > 50
    assert data["links_checked"] > 30
    assert data["tools_checked"] >= 9  # the evaluator skill cites every MCP tool


def test_a_vendored_kit_passes_too(cli, kit_root):
    # The autouse fixture's kit root was made by `pmos init`: the vendored document set.
    result = cli("skill", "check")
    assert result.exit_code == 0, result.stdout


# ---------------------------------------------------------------- broken copies


def test_a_renamed_command_fails_naming_it(cli, copy):
    skill = copy / EVALUATOR
    code, new = introduced(
        cli, copy, lambda: edit(skill, "`pmos rubric show --json`", "`pmos rubric display --json`")
    )
    assert code == 1
    [(path, rule, message)] = new
    assert path.endswith(EVALUATOR) and rule == "command"
    assert "`pmos rubric display` is not a command" in message
    human = cli("skill", "check", str(copy))
    assert human.exit_code == 1
    assert re.search(
        r"SKILL\.md:\d+: \[command\] `pmos rubric display` is not a command", human.stdout
    )


def test_a_command_renamed_in_the_cli_fails_the_documents_that_name_it(cli, copy, monkeypatch):
    """The check reads the live command tree: rename the command, and the docs fail."""
    import pmos.cli

    _, before = check(cli, str(copy))
    modules = dict(pmos.cli.COMMAND_MODULES)
    modules["anchors"] = modules.pop("exemplars")
    monkeypatch.setattr(pmos.cli, "COMMAND_MODULES", modules)
    code, after = check(cli, str(copy))
    assert code == 1
    new = problems(after) - problems(before)
    assert new, "renaming a command must break the documents that use it"
    assert all("`pmos exemplars` is not a command" in message for _, _, message in new)
    assert any(path.endswith(EVALUATOR) for path, _, _ in new)


def test_an_mcp_tool_the_server_does_not_have_fails_naming_it(cli, copy):
    skill = copy / EVALUATOR
    code, new = introduced(
        cli, copy, lambda: edit(skill, "`mcp: pmos_queue`", "`mcp: pmos_record_label`")
    )
    assert code == 1
    [(path, rule, message)] = new
    assert path.endswith(EVALUATOR) and rule == "mcp-tool"
    assert message.startswith("`pmos_record_label` is not a tool of `pmos mcp`")


def test_a_tool_dropped_from_the_server_fails_the_documents_that_cite_it(cli, copy, monkeypatch):
    """The names come from the server's own registry, read without starting it."""
    import pmos.mcp.tools

    _, before = check(cli, str(copy))
    names = tuple(n for n in pmos.mcp.tools.TOOL_NAMES if n != "pmos_queue")
    monkeypatch.setattr(pmos.mcp.tools, "TOOL_NAMES", names)
    code, after = check(cli, str(copy))
    assert code == 1
    new = problems(after) - problems(before)
    assert new and all(m.startswith("`pmos_queue` is not a tool") for _, _, m in new)


def test_a_renamed_option_fails_naming_it(cli, copy):
    skill = copy / EVALUATOR
    code, new = introduced(
        cli, copy, lambda: edit(skill, "--exclude-run RUN_ID --json", "--exclude RUN_ID --json")
    )
    assert code == 1
    assert {m for _, _, m in new} == {"`pmos exemplars` has no option --exclude"}


def test_a_wrong_kit_script_subcommand_fails(cli, copy):
    agents = copy / "AGENTS.md"
    code, new = introduced(
        cli,
        copy,
        lambda: edit(
            agents, "`pmos/scripts/pmos-log.sh eval R", "`pmos/scripts/pmos-log.sh verdict R"
        ),
    )
    assert code == 1
    [(_, _, message)] = new
    assert "`scripts/pmos-log.sh verdict` is not a subcommand of the kit script" in message


def test_a_broken_link_fails_naming_it(cli, copy):
    skill = copy / EVALUATOR
    code, new = introduced(
        cli,
        copy,
        lambda: edit(skill, "[skill format](../SKILL-FORMAT.md)", "[skill format](../FORMAT.md)"),
    )
    assert code == 1
    [(path, rule, message)] = new
    assert path.endswith(EVALUATOR) and rule == "link"
    assert "../FORMAT.md does not resolve" in message


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("../" + "x" * 300 + ".md", "File name too long"),
        ("../a%00b.md", "embedded null byte"),
        ("../not-utf8.md#top", "can't decode"),
    ],
    ids=["too-long", "nul-byte", "anchor-into-a-non-utf8-file"],
)
def test_a_link_that_cannot_be_checked_is_a_problem_not_an_error(cli, copy, target, reason):
    (copy / "skills/not-utf8.md").write_bytes(b"# top\n\xff\xfe\n")
    skill = copy / EVALUATOR
    code, new = introduced(
        cli,
        copy,
        lambda: edit(skill, "[skill format](../SKILL-FORMAT.md)", f"[skill format]({target})"),
    )
    assert code == 1
    [(path, rule, message)] = new
    assert path.endswith(EVALUATOR) and rule == "link"
    assert "cannot be checked" in message and reason in message
    assert len(message) < 300


def test_a_broken_anchor_and_a_root_absolute_link_fail(cli, copy):
    acceptance = copy / "skills/acceptance/SKILL.md"

    def change() -> None:
        edit(acceptance, "#cross-family-spot-check", "#nope")
        edit(acceptance, "(../evaluator/SKILL.md)", "(/skills/evaluator/SKILL.md)")

    code, new = introduced(cli, copy, change)
    assert code == 1
    messages = " | ".join(m for _, _, m in new)
    assert len(new) == 2
    assert "/skills/evaluator/SKILL.md is root-absolute" in messages
    assert "no heading with the anchor #nope in calibration-method.md" in messages


@pytest.mark.parametrize("field", ["name", "description"])
def test_a_missing_frontmatter_field_fails_naming_it(cli, copy, field):
    skill = copy / EVALUATOR
    text = skill.read_text(encoding="utf-8")
    head, body = text.split("\n---\n", 1)
    kept = re.sub(rf"^{field}:.*(\n  .*)*\n?", "", head + "\n", flags=re.M).rstrip("\n")

    def change() -> None:
        skill.write_text(kept + "\n---\n" + body, encoding="utf-8")

    code, new = introduced(cli, copy, change)
    assert code == 1
    assert any(rule == "frontmatter" and field in message for _, rule, message in new), new


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("name: evaluator", "name: Evaluator", "is not valid"),
        ("name: evaluator", "name: reviewer", "must equal its folder 'evaluator'"),
        ("name: evaluator", "name: evaluator\nversion: 2", "unknown field(s)"),
    ],
)
def test_frontmatter_rules(cli, copy, old, new, expected):
    skill = copy / EVALUATOR
    code, added = introduced(cli, copy, lambda: edit(skill, old, new))
    assert code == 1
    assert any(expected in message for _, _, message in added), added


def test_a_description_over_1024_characters_fails(cli, copy):
    skill = copy / "skills/acceptance/SKILL.md"
    text = skill.read_text(encoding="utf-8")
    start = text.index("description:")
    end = text.index("\n---\n")
    code, added = introduced(
        cli,
        copy,
        lambda: skill.write_text(
            text[:start] + "description: " + "y" * 1025 + text[end:], encoding="utf-8"
        ),
    )
    assert code == 1
    assert any("description has 1025 characters" in m for _, _, m in added), added


def test_a_skill_body_over_500_lines_fails(cli, copy):
    skill = copy / "skills/acceptance/SKILL.md"
    code, added = introduced(
        cli,
        copy,
        lambda: skill.write_text(
            skill.read_text(encoding="utf-8") + "filler\n" * 500, encoding="utf-8"
        ),
    )
    assert code == 1
    assert any(rule == "skill-size" for _, rule, _ in added)


def test_a_missing_path_is_a_usage_error(cli, tmp_path):
    result = cli("skill", "check", str(tmp_path / "nope"))
    assert result.exit_code == 2


# ---------------------------------------------------------------- parsing rules


@pytest.fixture(scope="module")
def tree() -> CommandTree:
    return CommandTree.from_app(app, script_path(REPO))


@pytest.mark.parametrize(
    "text",
    [
        "pmos eval log RUN I 0.9 PASS r.md --spec pass --standards pass",
        "pmos exemplars [--n 2..4] [--json]",
        "pmos schema show|list",
        "pmos skill check [PATH...] [--json]",
        "pmos --root DIR ledger verify --json",
        "pmos eval record --file=- --json",
        "pmos assess SPEC --cwd DIR --run-id R --json",
        "pmos assess --run-id R",
        "pmos assess history TASK --json",
        "pmos ledger",
        "python -m pmos accept R --label fail --by pm",
        "PMOS_ROOT=kit pmos root && pmos ledger path evals",
        'pmos/scripts/pmos-log.sh eval R I SKIPPED "no time" [rubric_path] [evaluator_model]',
        "$ pmos rubric show planning/evals/agent-run-eval-rubric.md  # the default",
    ],
)
def test_valid_invocations(tree, text):
    found = _invocations(text)
    assert found, text
    for kind, args in found:
        problem = tree.check(args) if kind == "pmos" else tree.check_script(args)
        assert problem is None, (text, problem)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pmos metricz", "`pmos metricz` is not a command"),
        ("pmos eval recrod --file v.json", "`pmos eval recrod` is not a command"),
        ("pmos eval record --fiel v.json", "has no option --fiel"),
        ("pmos root extra", "takes no positional argument(s), 1 given"),
        ("pmos --verbose root", "`pmos` has no option --verbose"),
        ("pmos assess SPEC --bogus", "`pmos assess` has no option --bogus"),
        ("pmos ledger --nope", "`pmos ledger` has no option --nope"),
        ("scripts/pmos-log.sh accept R --label pass --by pm --force", "has no option --force"),
    ],
)
def test_invalid_invocations(tree, text, expected):
    [(kind, args)] = _invocations(text)
    problem = tree.check(args) if kind == "pmos" else tree.check_script(args)
    assert problem is not None and expected in problem


@pytest.mark.parametrize("text", ["pmos.yaml", "pmos/", "pmos-log.sh", "cat pmos.yaml", "pmos"])
def test_words_that_are_not_invocations(tree, text):
    assert all(tree.check(args) is None for kind, args in _invocations(text) if kind == "pmos")
    assert all(kind == "pmos" and args == [] for kind, args in _invocations(text))


def test_the_script_table_is_read_from_the_script_itself(tmp_path):
    script = tmp_path / "scripts/pmos-log.sh"
    script.parent.mkdir()
    original = (REPO / "scripts/pmos-log.sh").read_text(encoding="utf-8")
    script.write_text(original.replace("eval log", "eval logg"), encoding="utf-8")
    tree = CommandTree.from_app(app, script)
    assert "`pmos eval logg` is not a command" in tree.check_script(["eval", "R"])
    assert CommandTree.from_app(app, script_path(REPO)).check_script(["eval", "R"]) is None


def test_the_command_tree_is_the_real_cli():
    root = typer.main.get_command(app)
    ctx = root.context_class(root)
    assert "skill" in root.list_commands(ctx)


def test_the_kit_agents_md_template_is_checked_where_it_is_shipped(cli, tmp_path):
    """kit/AGENTS.md lands at the kit root (pmos.kit.init.SHIPPED_AS), so its links
    are checked from there: one that only works from kit/ is broken once shipped."""
    root = tmp_path / "repo"
    init_kit(root)
    (root / "kit").mkdir()
    template = root / "kit" / "AGENTS.md"
    template.write_text(
        "# AGENTS.md\n\nRead [the rubric](planning/evals/agent-run-eval-rubric.md).\n",
        encoding="utf-8",
    )
    result = cli("--root", str(root), "skill", "check", "--json")
    data = json.loads(result.stdout)
    assert "kit/AGENTS.md" in data["files"]
    assert not [p for p in data["problems"] if p["path"] == "kit/AGENTS.md"], data["problems"]
    template.write_text(
        "# AGENTS.md\n\nRead [the rubric](../planning/evals/agent-run-eval-rubric.md).\n",
        encoding="utf-8",
    )
    result = cli("--root", str(root), "skill", "check", "--json")
    assert result.exit_code == 1
    [problem] = [p for p in json.loads(result.stdout)["problems"] if p["path"] == "kit/AGENTS.md"]
    assert problem["rule"] == "link" and "does not resolve" in problem["message"]
