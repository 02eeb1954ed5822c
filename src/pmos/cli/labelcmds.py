"""``pmos label next``: which run the PM should label next, optionally blind."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from pmos.cli._app import JsonFlag, emit_json, examples, kit, new_typer


def register(app: typer.Typer) -> None:
    label_app = new_typer(
        "Labelling: which run the PM should label next.", example="pmos label next --blind"
    )
    label_app.command("next", epilog=examples("pmos label next --blind --json"))(next_run)
    app.add_typer(label_app, name="label")


def next_run(
    blind: Annotated[
        bool,
        typer.Option(
            "--blind",
            help="Leave the gate's verdict out: show the run, its contract and where its "
            "evidence is, so the PM judges the run itself; then 'pmos accept RUN --blind'.",
        ),
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """The oldest judged run awaiting a PM label (the acceptance queue), to label next.

    Shows its contract, what it built and how to collect its evidence; without
    --blind, also the gate's verdict. Nothing to label: says so (exit 0).
    """
    # Deferred: pmos.calibration.labelling imports sshsig and cryptography (about 50 ms).
    from pmos.calibration.labelling import next_to_label

    proposal = next_to_label(kit(), blind=blind)
    if json_output:
        emit_json(proposal)
        return
    if proposal["run_id"] is None:
        typer.echo("nothing to label: no judged run awaits a PM label")
        return
    lines = [
        f"label next: {proposal['run_id']} (initiative {proposal['initiative_id'] or '-'}, "
        f"waiting {proposal['age']}; {proposal['waiting']} run(s) await a label)",
    ]
    if blind:
        lines.append("blind: the gate's verdict is not shown")
    contract = proposal["contract"]
    if contract:
        lines.append("contract:")
        for criterion in contract.get("done_criteria", []):
            lines.append(f"  - {criterion.get('id')}: {criterion.get('text', '')}".rstrip())
    else:
        lines.append("contract: none registered")
    if proposal["artifact"]:
        lines.append("built: " + json.dumps(proposal["artifact"], sort_keys=True))
    lines.append(f"evidence: {proposal['evidence_command']}")
    verdict = proposal["verdict"]
    if verdict is not None:
        lines.append(
            f"gate verdict: {verdict.get('verdict')} (score {verdict.get('score')}, "
            f"{verdict.get('evaluator_model')}, {verdict.get('record_id')})"
        )
    lines.append(f"then: {proposal['accept_command']}")
    typer.echo("\n".join(lines))
