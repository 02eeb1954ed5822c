"""Skill-support commands: exemplars, known-bad seed, skill check."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pmos import exit_codes
from pmos.cli import app
from pmos.cli._app import JsonFlag, emit_json, examples, kit, new_typer, table, warn
from pmos.errors import KitRootNotFound
from pmos.kit.skills import CommandTree, check, default_targets, script_path
from pmos.mcp import tools as mcp_tools


def register(app: typer.Typer) -> None:
    app.command(
        "exemplars",
        epilog=examples("pmos exemplars --n 4 --exclude-run run-7 --json", "pmos exemplars --log"),
    )(exemplars)
    known_bad_app = new_typer(
        "Seeded known-bad runs: a negative class for calibration.",
        example="pmos known-bad seed",
    )
    known_bad_app.command("seed", epilog=examples("pmos known-bad seed"))(known_bad_seed)
    app.add_typer(known_bad_app, name="known-bad")
    skill_app = new_typer(
        "Check the kit's skills and documents against the real CLI.", example="pmos skill check"
    )
    skill_app.command("check", epilog=examples("pmos skill check", "pmos skill check docs"))(
        skill_check
    )
    app.add_typer(skill_app, name="skill")


def exemplars(
    n: Annotated[
        int, typer.Option("--n", min=2, max=4, help="How many anchors to pick (2 to 4).")
    ] = 4,
    exclude_run: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude-run", help="Leave this run out (the run being judged). Repeatable."
        ),
    ] = None,
    log: Annotated[
        bool,
        typer.Option(
            "--log",
            help="Show the whole exemplar log instead (its entries, then the override "
            "entries), as Markdown for people; with --json, the entries as data.",
        ),
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """Pick calibration anchors balanced across the PM's pass and fail labels.

    Anchors come from the paired ledgers (each run's latest non-SKIPPED verdict and
    latest PM label) and the exemplar log, most recent first. A missing side is
    disclosed, never padded. With --log, the exemplar log itself (stored as YAML
    data) rendered for people.
    """
    # Deferred: pmos.gate.exemplars imports sshsig and cryptography (about 50 ms).
    from pmos.gate.exemplars import log_path, read_log, render_markdown, select_anchors

    if log:
        the_kit = kit()
        entries = read_log(the_kit)
        if json_output:
            emit_json({"log": str(log_path(the_kit)), "entries": entries})
        else:
            typer.echo(render_markdown(entries, str(log_path(the_kit))), nl=False)
        return
    selection = select_anchors(kit(), n, exclude_run or [])
    if json_output:
        emit_json(selection.as_dict())
        return
    have = selection.available
    typer.echo(
        f"{len(selection.anchors)} anchor(s) of {selection.requested} requested; available: "
        f"{have['pass']} pass-side, {have['fail']} fail-side; "
        f"balanced: {'yes' if selection.balanced else 'no'}"
    )
    if selection.anchors:
        rows = [
            (a.case_id, a.side, a.kind, a.gate_verdict, a.pm_label, a.recorded_at, a.lesson or "")
            for a in selection.anchors
        ]
        headers = ["case_id", "side", "kind", "gate", "pm", "recorded_at", "lesson"]
        typer.echo(table(headers, rows))
    for disclosure in selection.disclosures:
        typer.echo(f"disclosure: {disclosure}")
    for entry in selection.unbacked_overrides:
        warn([f"override entry {entry['case_id']} (run {entry['run_id']!r}): {entry['problem']}"])


def known_bad_seed(json_output: JsonFlag = False) -> None:
    """Register each known-bad case as a run with PM label fail (by "seeded").

    Idempotent: a registered run or an existing label is left as it is. The seeded
    runs then wait in `pmos queue` for the evaluator to judge them blind.
    """
    # Deferred: pmos.gate.known_bad imports sshsig and cryptography (about 50 ms).
    from pmos.gate.known_bad import seed

    report = seed(kit())
    warn(report.warnings)
    if json_output:
        emit_json(report.as_dict())
        return
    rows = [
        (
            s.case.run_id,
            s.case.expected["probe"],
            "registered" if s.registered else "already registered",
            "labelled fail" if s.labelled else "already labelled",
        )
        for s in report.seeded
    ]
    typer.echo(table(["run_id", "probe", "run", "label"], rows))
    data = report.as_dict()
    typer.echo(
        f"{len(data['registered'])} run(s) registered, {len(data['labelled'])} labelled fail, "
        f"{len(report.seeded)} case(s) in all"
    )


def skill_check(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Files or folders to check; default: the kit's skills, planning and docs."
        ),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Check skills' frontmatter, the `pmos ...` commands, MCP tools and links they name.

    Exits 1 naming each problem, 0 when the documents are sound.
    """
    try:
        root: Path | None = kit().root
    except KitRootNotFound:
        if not paths:
            raise
        root = None  # explicit paths can be checked outside any kit
    targets = list(paths or []) if paths or root is None else default_targets(root)
    tree = CommandTree.from_app(app, script_path(root))
    report = check(targets, tree, root=root, tools=mcp_tools.TOOL_NAMES)
    if json_output:
        emit_json(report.as_dict())
    else:
        for problem in report.problems:
            typer.echo(str(problem))
        state = "ok" if report.ok else f"{len(report.problems)} problem(s)"
        typer.echo(
            f"{state}: {len(report.files)} file(s), {len(report.skills)} skill(s), "
            f"{report.commands} command(s), {report.links} link(s), "
            f"{report.tools} MCP tool(s) checked"
        )
    if not report.ok:
        raise typer.Exit(exit_codes.CHECK_FAILED)
