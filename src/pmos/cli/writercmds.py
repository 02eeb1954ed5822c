"""Writer commands: run register, eval record, eval log, accept.

Each parses its arguments and hands them to :mod:`pmos.writers`; every rule
lives there. Success prints the record_id (the stored record with --json).
"""

from __future__ import annotations

import enum
import getpass
import sys
from pathlib import Path
from typing import Annotated, Any, cast

import typer

from pmos.cli._app import (
    JsonFlag,
    emit_json,
    examples,
    kit,
    new_typer,
    rejections_as_json,
    warn,
)
from pmos.cli.draftcmds import eval_draft
from pmos.gate import sshsig
from pmos.gate.writers import (
    load_contract,
    new_run_id,
    parse_short_form,
    record_acceptance,
    record_short_verdict,
    record_verdict,
    register_run,
)
from pmos.inputs import read_json_input
from pmos.schemas import enum_values
from pmos.store.append import Written

#: A PM's label: the acceptance schema's ``label`` words.
Label = enum.StrEnum("Label", {v: v for v in enum_values("acceptance", "/properties/label")})  # type: ignore[misc]
#: One axis of a verdict, spec or standards: the verdict schema's axis ``verdict`` words.
_AXIS = "/$defs/axis/properties/verdict"
AxisVerdict = enum.StrEnum("AxisVerdict", {v: v for v in enum_values("verdict", _AXIS)})  # type: ignore[misc]


Ledger = Annotated[
    Path | None,
    typer.Option(
        "--ledger",
        help="Expected ledger file; the write is refused unless it is this kit's ledger of the "
        "right kind.",
    ),
]

SHORT_FORM = (
    "pmos eval log run-7 checkout 0.86 PASS planning/evals/agent-run-eval-rubric.md gpt-5 "
    "--spec pass --standards pass --note 'both criteria met'"
)


def register(app: typer.Typer) -> None:
    run_app = new_typer(
        "Register agent runs.",
        example="pmos run register --run-id run-7 --initiative-id checkout --builder-model m",
    )
    run_app.command(
        "register",
        epilog=examples(
            "pmos run register --run-id run-7 --initiative-id checkout "
            "--builder-model claude-sonnet-4 --contract contract.yaml"
        ),
    )(run_register)
    app.add_typer(run_app, name="run")
    eval_app = new_typer(
        "Record review-gate verdicts.", example="pmos eval record --file verdict.json"
    )
    eval_app.command("record", epilog=examples("pmos eval record --file verdict.json"))(eval_record)
    eval_app.command(
        "log",
        context_settings={"ignore_unknown_options": False},
        epilog=examples(
            SHORT_FORM, "pmos eval log run-8 checkout SKIPPED 'the branch was never pushed'"
        ),
    )(eval_log)
    eval_app.command("draft", epilog=examples("pmos eval draft --run-id run-7 --json"))(eval_draft)
    app.add_typer(eval_app, name="eval")
    app.command(
        "accept",
        epilog=examples(
            "pmos accept run-7 --label pass --by ana --note 'works as asked'",
            "pmos accept run-99 --label fail --by ana --allow-unknown-run",
            "pmos accept run-7 --label fail --by ana --verdict ev-20261130T081500123456Z-5f2c9a1b",
        ),
    )(accept)


def _report(written: Written, json_output: bool) -> None:
    warn(written.warnings)
    if json_output:
        emit_json(written.record)
    else:
        typer.echo(written.record["record_id"])


def run_register(
    initiative_id: Annotated[
        str, typer.Option("--initiative-id", help="Initiative the run serves.")
    ],
    builder_model: Annotated[
        str, typer.Option("--builder-model", help="Model that built the run.")
    ],
    run_id: Annotated[
        str | None,
        typer.Option(
            "--run-id",
            help="Id of the agent run. Without it pmos makes a unique, time-ordered one "
            "(run-<UTC time>-<random>), which no other branch will choose, and prints it.",
        ),
    ] = None,
    contract: Annotated[
        Path | None,
        typer.Option("--contract", help="Pre-run contract (YAML or JSON) with done_criteria."),
    ] = None,
    repo: Annotated[
        str | None,
        typer.Option(
            "--repo",
            metavar="PATH_OR_URL",
            help="Repository the run built in: a local path (stored relative to the kit root) "
            "or a URL.",
        ),
    ] = None,
    base: Annotated[
        str | None,
        typer.Option(
            "--base", metavar="REV", help="Revision the run started from (needs --repo, --head)."
        ),
    ] = None,
    head: Annotated[
        str | None,
        typer.Option("--head", metavar="REV", help="Revision the run ended at (needs --repo)."),
    ] = None,
    ledger: Ledger = None,
    json_output: JsonFlag = False,
) -> None:
    """Register a run, its pre-run contract and what it built.

    Revisions of a local --repo are stored as commit ids; 'pmos evidence' reads
    base..head from them by default. Example:
    pmos run register --run-id r1 --initiative-id i1 --builder-model claude-sonnet-4
    --contract contract.yaml --repo . --base main --head HEAD
    """
    data = load_contract(contract) if contract is not None else None
    made = run_id is None
    with rejections_as_json(json_output):
        written = register_run(
            kit(),
            run_id=new_run_id() if run_id is None else run_id,
            initiative_id=initiative_id,
            builder_model=builder_model,
            contract=data,
            repo=repo,
            base=base,
            head=head,
            target=ledger,
        )
    if made and not json_output:
        # The id the caller must use from now on, alone on stdout for $(...).
        warn(written.warnings)
        typer.echo(
            f"registered run {written.record['run_id']} ({written.record['record_id']})", err=True
        )
        typer.echo(written.record["run_id"])
        return
    _report(written, json_output)


AllowUnknownRun = Annotated[
    bool,
    typer.Option(
        "--allow-unknown-run",
        help="Record a verdict for a run that is not registered; without it such a verdict "
        "is refused, since it is most often a typo in RUN_ID. Stored flagged unregistered-run.",
    ),
]


def _read_json(source: str, what: str = "verdict") -> Any:
    return read_json_input(source, what=what)


def eval_record(
    file: Annotated[str, typer.Option("--file", "-f", help="Verdict JSON file, or - for stdin.")],
    allow_unknown_run: AllowUnknownRun = False,
    ledger: Ledger = None,
    json_output: JsonFlag = False,
) -> None:
    """Record a full verdict (two axes, criteria, dimensions, defects).

    The run must be registered ('pmos run register'), unless --allow-unknown-run.
    """
    data = _read_json(file)
    with rejections_as_json(json_output):
        written = record_verdict(
            kit(), data, target=ledger, refuse_unknown_run=not allow_unknown_run
        )
    _report(written, json_output)


def eval_log(
    args: Annotated[
        list[str],
        typer.Argument(
            metavar="RUN_ID INITIATIVE_ID (SCORE VERDICT RUBRIC_PATH | SKIPPED REASON "
            "[RUBRIC_PATH]) [EVALUATOR_MODEL]",
            help="Positional fields of the kit's short form. RUBRIC_PATH is relative to the "
            "kit root; EVALUATOR_MODEL defaults to $PMOS_EVALUATOR_MODEL.",
        ),
    ],
    spec: Annotated[
        AxisVerdict | None,
        typer.Option(
            "--spec",
            help="Spec axis, for a run without a contract (with a contract it is derived "
            "from --criterion). Refused with SKIPPED.",
        ),
    ] = None,
    standards: Annotated[
        AxisVerdict | None,
        typer.Option(
            "--standards",
            help="Standards axis. Required for a judged verdict; refused with SKIPPED.",
        ),
    ] = None,
    note: Annotated[
        str | None, typer.Option("--note", help="Free-text note (axis rationales).")
    ] = None,
    criterion: Annotated[
        list[str] | None,
        typer.Option(
            "--criterion",
            metavar="ID=pass|fail|unverified[:EVIDENCE]",
            help="Grade of one done-criterion of the run's contract; repeat it for each. "
            "Required for every criterion when the run registered a contract; the spec axis "
            "is derived from the grades. 'unverified' is stored as fail with verified: false.",
        ),
    ] = None,
    allow_unknown_run: AllowUnknownRun = False,
    ledger: Ledger = None,
    json_output: JsonFlag = False,
) -> None:
    """Record a verdict in the kit's short form (no per-dimension detail).

    On a run with a contract, grade every done-criterion with --criterion; the
    spec axis is derived from the grades.
    """
    fields = parse_short_form(
        args,
        spec=spec.value if spec else None,
        standards=standards.value if standards else None,
        note=note,
        criteria=criterion,
    )
    with rejections_as_json(json_output):
        written = record_short_verdict(
            kit(), **fields, target=ledger, refuse_unknown_run=not allow_unknown_run
        )
    _report(written, json_output)


def accept(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="Run to label.")],
    label: Annotated[Label, typer.Option("--label", help="The PM's label.")],
    by: Annotated[str, typer.Option("--by", help="Who is labelling (the PM).")],
    note: Annotated[str | None, typer.Option("--note", help="Why.")] = None,
    allow_unknown_run: Annotated[
        bool,
        typer.Option(
            "--allow-unknown-run",
            help="Label a run the kit has never seen (no registration, no verdict); without "
            "it such a label is refused, since it is most often a typo in RUN_ID.",
        ),
    ] = False,
    verdict: Annotated[
        str | None,
        typer.Option(
            "--verdict",
            metavar="RECORD_ID",
            help="The record_id of the judged (non-SKIPPED) verdict of RUN_ID this label "
            "judges, when it is not the run's latest (default: the latest). Another run's "
            "verdict, a SKIPPED one or an unknown id is refused.",
        ),
    ] = None,
    sign_key: Annotated[
        Path | None,
        typer.Option(
            "--sign-key",
            metavar="PATH",
            help="The PM's SSH private key to sign the label with. A label is signed only "
            "when this is given (never from git's signing settings). Required where pmos.yaml "
            "requires signatures (signing.required or signing.required_since).",
        ),
    ] = None,
    blind: Annotated[
        bool,
        typer.Option(
            "--blind",
            help="The PM labelled without seeing the gate's verdict ('pmos label next "
            "--blind' shows a run without it): the label is marked blind: true, and "
            "calibration reports agreement on blind labels apart.",
        ),
    ] = False,
    plan: Annotated[
        bool,
        typer.Option(
            "--plan",
            help="The run is one the labelling plan asked for ('pmos label next'): the label "
            "records the weight it stands for, derived from the verdict it judges and pmos.yaml "
            "calibration.plan_pass_side_rate (never typed in). A run the plan did not sample, "
            "or a kit with no plan, is refused (exit 2).",
        ),
    ] = False,
    ledger: Ledger = None,
    json_output: JsonFlag = False,
) -> None:
    """Record a PM's acceptance label for a run (supersedes an earlier one).

    The label judges the run's latest judged (non-SKIPPED) verdict, or the
    earlier one --verdict names: calibration pairs the label with the verdict
    the PM read.

    With --sign-key the label carries the PM's SSH signature, bound to this kit
    and to the verdict it judges, checked against pmos.yaml's
    signing.allowed_signers. Example:
    pmos accept r1 --label pass --by ana@example.com --sign-key ~/.ssh/id_ed25519
    """
    k = kit()
    key = _signing_key(sign_key)
    with rejections_as_json(json_output):
        written = record_acceptance(
            k,
            run_id=run_id,
            label=label.value,
            by=by,
            note=note,
            target=ledger,
            signing_key=key,
            refuse_unknown_run=not allow_unknown_run,
            verdict_id=verdict,
            blind=blind,
            plan=plan,
        )
    _report(cast(Written, written), json_output)  # None only with only_if_unlabelled


def _signing_key(sign_key: Path | None) -> Any:
    """The private key to sign with: --sign-key, or None. Never git's
    user.signingkey: a label is signed only when its writer asks. An encrypted
    key's passphrase is asked for on a terminal."""
    if sign_key is None:
        return None
    try:
        return sshsig.load_private_key(sign_key)
    except sshsig.KeyEncrypted:
        if not sys.stdin.isatty():
            raise
    passphrase = getpass.getpass(f"passphrase for {sign_key}: ").encode("utf-8")
    return sshsig.load_private_key(sign_key, passphrase)
