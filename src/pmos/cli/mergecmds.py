"""The merge decision: ``pmos gate`` and ``pmos policy approve``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from pmos import exit_codes
from pmos.cli._app import JsonFlag, emit_json, examples, kit, new_typer, root_option, table
from pmos.errors import BadInput
from pmos.gate.approvals import record_approval
from pmos.merge.summary import markdown


def register(app: typer.Typer) -> None:
    app.command(
        "gate",
        epilog=examples(
            "pmos gate --base origin/main --json",
            "pmos gate --base origin/main --summary gate.md",
        ),
    )(gate)
    policy_app = new_typer(
        "Approve changes to the kit's policy files.",
        example="pmos policy approve --by ana@example.com --sign-key ~/.ssh/id_ed25519",
    )
    policy_app.command(
        "approve",
        epilog=examples(
            "pmos policy approve --by ana@example.com --sign-key ~/.ssh/id_ed25519 "
            "--base origin/main"
        ),
    )(approve)
    app.add_typer(policy_app, name="policy")


def _start() -> Path:
    """Where the kit is looked for in each revision: --root, else the working directory."""
    given = root_option() or os.environ.get("PMOS_ROOT")
    return Path(given) if given else Path.cwd()


def gate(
    base: Annotated[
        str | None,
        typer.Option(
            "--base",
            metavar="REV",
            help="The revision the change merges into; its policy decides. Defaults to the "
            "merge base of --head with origin's default branch (refs/remotes/origin/HEAD).",
        ),
    ] = None,
    head: Annotated[
        str, typer.Option("--head", metavar="REV", help="The change's last revision.")
    ] = "HEAD",
    summary: Annotated[
        Path | None,
        typer.Option(
            "--summary",
            metavar="FILE",
            help="Also write the report as Markdown to FILE (and append it to "
            "$GITHUB_STEP_SUMMARY when that is set).",
            dir_okay=False,
        ),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Decide whether the change base..head may merge, by the base revision's rules.

    Exit 0: it may merge; 1: it may not (every reason is listed); 2: bad usage or an
    unreadable repository. Policy (pmos.yaml, allowed signers, rubrics, known-bad
    cases, anchors) comes from the base; a change to it needs a signed
    'pmos policy approve'. Every record added in base..head is checked in full,
    every record present at base must still be there, and each run of the change
    needs a passing verdict (and, while the gate is advisory, a PM pass label).
    """
    # Deferred: pmos.merge.decision imports sshsig and cryptography (about 50 ms).
    from pmos.merge.decision import decide

    report = decide(_start(), base, head).as_dict()
    if summary is not None or os.environ.get("GITHUB_STEP_SUMMARY"):
        text = markdown(report)
        if summary is not None:
            summary.write_text(text, encoding="utf-8")
        step = os.environ.get("GITHUB_STEP_SUMMARY")
        if step:
            with open(step, "a", encoding="utf-8") as handle:
                handle.write(text)
    if json_output:
        emit_json(report)
    else:
        _print(report)
    if report["decision"] != "may-merge":
        raise typer.Exit(exit_codes.CHECK_FAILED)


def _print(report: dict[str, Any]) -> None:
    may = report["decision"] == "may-merge"
    typer.echo(
        f"pmos gate: {'MAY MERGE' if may else 'MAY NOT MERGE'} "
        f"(base {report['base']['commit'][:12]}, head {report['head']['commit'][:12]})"
    )
    for note in report["notes"]:
        typer.echo(f"note: {note}")
    if report["runs"]:
        rows = [
            [r["run_id"], r["decision"], r["mode"], r["evaluator_model"], r["verdict"], r["label"]]
            for r in report["runs"]
        ]
        typer.echo(table(["run", "decision", "mode", "model", "verdict", "label"], rows))
    changed = report["policy_changes"]["changed"]
    if changed:
        state = "approved" if report["policy_changes"]["approved"] else "NOT approved"
        typer.echo(f"policy changes ({state}):")
        typer.echo(table(["file", "change"], [[c["path"], c["change"]] for c in changed]))
    if report["reasons"]:
        typer.echo("why it may not merge:")
        for reason in report["reasons"]:
            typer.echo(f"  - {reason}")


def approve(
    by: Annotated[str, typer.Option("--by", help="The approving PM (the signer's principal).")],
    sign_key: Annotated[
        Path | None,
        typer.Option(
            "--sign-key",
            help="The PM's private SSH key (default: git's user.signingkey when git signs "
            "with SSH).",
            dir_okay=False,
        ),
    ] = None,
    base: Annotated[
        str | None,
        typer.Option(
            "--base",
            metavar="REV",
            help="Also list the base revision's trust files that are gone now, as removed. "
            "Defaults to the merge base with origin's default branch when it is known.",
        ),
    ] = None,
    note: Annotated[str | None, typer.Option("--note", help="Why the policy changes.")] = None,
    json_output: JsonFlag = False,
) -> None:
    """Sign an approval of the kit's policy files as they are now (PMs only).

    The record states the SHA-256 of every trust file (pmos.yaml, the allowed-signers
    file, rubrics, known-bad cases, the exemplar log, override anchors). 'pmos gate'
    accepts a change to them when such an approval, added by the change, matches the
    files at the change's head and is signed by a key the base's allowed-signers file
    allows for --by.
    """
    # Deferred: pmos.merge.policy imports sshsig and cryptography (about 50 ms).
    from pmos.cli.writercmds import _signing_key
    from pmos.merge.policy import approval_files

    k = kit()
    key = _signing_key(sign_key)
    if key is None:
        raise BadInput("a policy approval must be signed: give --sign-key PATH")
    files = approval_files(k, base)
    written = record_approval(k, by=by, files=files, signing_key=key, note=note)
    if json_output:
        emit_json(written)
        return
    typer.echo(f"approved {len(files)} policy file(s) as {written['record_id']} by {by}")
