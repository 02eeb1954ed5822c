"""The eval draft command, attached to the eval group by writercmds.

It lives in its own small module so that ``pmos eval record``, whose start-up
is benchmarked, loads only this much more.
"""

from __future__ import annotations

from typing import Annotated

import typer

from pmos.cli._app import JsonFlag, emit_json, kit, table, warn


def eval_draft(
    run_id: Annotated[str, typer.Option("--run-id", help="Registered run to draft a verdict for.")],
    json_output: JsonFlag = False,
) -> None:
    """Print a verdict skeleton for a run, to fill in and record with 'pmos eval record'.

    It holds the run's ids, the rubric's dimensions and the criteria already checked
    by the run's latest clean assessment of its head (the one 'pmos eval record' holds
    the verdict to); the judgment fields are left empty.
    """
    # Deferred: pmos.gate.drafts imports sshsig and cryptography (about 50 ms).
    from pmos.gate.drafts import draft_verdict

    draft, notes = draft_verdict(kit(), run_id)
    warn(notes)
    if json_output:
        emit_json(draft)
        return
    typer.echo(
        f"run {draft['run_id']}  initiative {draft['initiative_id']}  "
        f"builder {draft['builder_model']}  rubric {draft['rubric_path']}"
    )
    rows = [(c["id"], c["result"] or "(judge)", c["evidence"] or "-") for c in draft["criteria"]]
    typer.echo(table(["criterion", "result", "evidence"], rows))
    rows = [(n, d["axis"], d["weight"]) for n, d in draft["dimensions"].items()]
    typer.echo(table(["dimension", "axis", "weight"], rows))
    typer.echo("use --json for the editable skeleton; record it with 'pmos eval record'")
