"""Reader commands: metrics (calibration of the review gate) and queue (what is owed)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from pmos import exit_codes
from pmos.cli._app import JsonFlag, emit_json, examples, kit, table


def register(app: typer.Typer) -> None:
    app.command(
        "metrics",
        epilog=examples("pmos metrics", "pmos metrics --json --model gpt-5 --since 2026-01-31"),
    )(metrics)
    app.command("queue", epilog=examples("pmos queue", "pmos queue --json"))(queue)


def metrics(
    json_output: JsonFlag = False,
    window: Annotated[
        int | None,
        typer.Option(
            "--window",
            help="Pass-fraction window: the last N non-SKIPPED verdicts (default from pmos.yaml).",
        ),
    ] = None,
    initiative: Annotated[
        str | None, typer.Option("--initiative", help="Only this initiative.")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Only this evaluator model.")] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", help="Only verdicts recorded at or after DATE (YYYY-MM-DD or RFC 3339)."
        ),
    ] = None,
) -> None:
    """Calibration of the review gate against PM labels: kappa, TPR/TNR, pass fraction.

    The gate stays advisory until kappa reaches the threshold over enough pairs
    with both pass and fail PM labels.
    """
    from pmos.calibration.metrics import compute_metrics, parse_since

    report = compute_metrics(
        kit(),
        window=window,
        initiative=initiative,
        model=model,
        since=parse_since(since) if since is not None else None,
    )
    if json_output:
        emit_json(report)
        return
    typer.echo(render_metrics(report))


def _num(value: Any) -> str:
    if value is None:
        return "undefined"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _interval(pair: list[float] | None) -> str:
    return "" if pair is None else f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def render_metrics(r: dict[str, Any]) -> str:
    lines: list[str] = []
    if not r["calibrated"]:
        lines += [
            "ADVISORY: the review gate is not calibrated; its verdicts inform, the PM decides.",
            f"  why: {r['calibration_reason']}",
            "",
        ]
    c = r["confusion"]
    lines.append(
        table(
            ["", "PM pass", "PM fail"],
            [
                ["gate pass", f"tp {c['tp']}", f"fp {c['fp']}"],
                ["gate fail", f"fn {c['fn']}", f"tn {c['tn']}"],
            ],
        )
    )
    lines.append("")
    crp = r["corrected_pass_rate"]
    rows = [
        ["pairs", r["pairs"], ""],
        ["observed agreement", _num(r["observed_agreement"]), ""],
        ["kappa", _num(r["kappa"]), _interval(r["kappa_ci95"])],
        ["TPR (pass recall)", _num(r["tpr"]), ""],
        ["TNR (fail recall)", _num(r["tnr"]), ""],
        ["PABAK", _num(r["pabak"]), ""],
        ["Gwet AC1", _num(r["ac1"]), ""],
        [
            f"pass fraction (last {r['pass_fraction_window']})",
            _num(r["pass_fraction"]),
            "GOODHART ALARM" if r["goodhart_alarm"] else "",
        ],
        [
            "corrected pass rate",
            _num(crp["value"] if crp else None),
            _interval(crp["ci95"]) if crp else "",
        ],
        ["kappa threshold", _num(r["kappa_threshold"]), ""],
        ["calibrated", _num(r["calibrated"]), ""],
        ["skipped runs", r["skipped"], ""],
        ["unlabelled verdicts", r["unlabeled_verdicts"], ""],
        ["labels without verdict", r["labels_without_verdict"], ""],
    ]
    lines.append(table(["statistic", "value", "95% interval / note"], rows))
    if r["undefined"]:
        lines.append("")
        lines.append("undefined:")
        lines += [f"  {name}: {why}" for name, why in r["undefined"].items()]
    if r["by_model"]:
        lines.append("")
        model_rows = [
            [
                name,
                m["pairs"],
                _num(m["kappa"]),
                _num(m["tpr"]),
                _num(m["tnr"]),
                _num(m["ac1"]),
                _num(m["pass_fraction"]),
                _num(m["calibrated"]),
            ]
            for name, m in r["by_model"].items()
        ]
        lines.append(
            table(
                [
                    "evaluator model",
                    "pairs",
                    "kappa",
                    "TPR",
                    "TNR",
                    "AC1",
                    "pass frac",
                    "calibrated",
                ],
                model_rows,
            )
        )
    return "\n".join(lines)


def queue(json_output: JsonFlag = False) -> None:
    """List what the gate and the PM still owe; exits 1 while verification debt exists.

    Verification debt: runs with no verdict or a SKIPPED one. Acceptance debt:
    judged runs the PM has not labelled.
    """
    from pmos.calibration.queue import compute_queue

    q = compute_queue(kit())
    if json_output:
        emit_json(q.as_dict())
    else:
        typer.echo(f"verification debt: {len(q.verification_debt)} run(s)")
        if q.verification_debt:
            rows = [
                [d["run_id"], d["initiative_id"], d["age"], d["status"], d["skipped_reason"]]
                for d in q.verification_debt
            ]
            typer.echo(table(["run_id", "initiative", "age", "status", "skip reason"], rows))
        typer.echo(f"acceptance debt: {len(q.acceptance_debt)} run(s)")
        if q.acceptance_debt:
            rows = [
                [
                    d["run_id"],
                    d["initiative_id"],
                    d["age"],
                    d["verdict"],
                    "" if d["registered"] else "unregistered",
                ]
                for d in q.acceptance_debt
            ]
            typer.echo(table(["run_id", "initiative", "age", "verdict", "note"], rows))
    if q.verification_debt:
        raise typer.Exit(exit_codes.CHECK_FAILED)
