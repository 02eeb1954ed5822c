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
    label_app.command("plan", epilog=examples("pmos label plan --limit 5 --json"))(plan_runs)
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
        f"waiting {proposal['age']}; {proposal['waiting']} run(s) await a label, "
        f"{proposal['in_plan']} in the labelling plan)",
    ]
    if proposal["plan_weight"] is not None and proposal["plan_weight"] != 1.0:
        lines.append(f"plan: the label stands for {proposal['plan_weight']:g} run(s)")
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


def plan_runs(
    blind: Annotated[
        bool,
        typer.Option(
            "--blind",
            help="Say nothing of the gate's side: the plan's runs oldest first, without "
            "their side or weight (either would tell the PM what the gate said).",
        ),
    ] = False,
    limit: Annotated[
        int, typer.Option("--limit", min=0, help="At most this many runs (default 10).")
    ] = 10,
    json_output: JsonFlag = False,
) -> None:
    """The runs the labelling plan asks the PM to label next, in order.

    Under a plan (pmos.yaml calibration.plan_pass_side_rate below 1) every run the
    gate failed and a sampled share of those it passed, the FAIL side first; each
    label of them, written with 'pmos accept RUN --plan', records the weight it
    stands for. Without a plan: the acceptance queue, oldest first.
    """
    # Deferred: the plan reads the queue, which loads numpy (about 0.2 s).
    from pmos.calibration.plan import suggest

    found = suggest(kit(), blind=blind, limit=limit)
    if json_output:
        emit_json(found)
        return
    rate = found["plan_pass_side_rate"]
    head = (
        f"labelling plan: every run the gate failed, {rate:g} of those it passed"
        if found["planned"]
        else "no labelling plan (calibration.plan_pass_side_rate is 1): the queue, oldest first"
    )
    lines = [head, f"{found['in_plan']} of {found['waiting']} waiting run(s) are in the plan"]
    for p in found["proposals"]:
        side = (
            ""
            if p["gate_side"] is None
            else f" gate {p['gate_side']}, weight {p['plan_weight']:g};"
        )
        lines.append(f"  {p['run_id']} ({p['age']};{side} {p['accept_command']})")
    typer.echo("\n".join(lines))
