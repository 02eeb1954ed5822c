"""Reader commands: metrics (calibration of the review gate) and queue (what is owed)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from pmos import exit_codes
from pmos.cli._app import JSON_OPTION, emit_json, kit, table

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="DSN",
        help="Read the kits synced to this PostgreSQL database ('pmos sync') instead of "
        "this kit's ledgers.",
    ),
]
KitsOption = Annotated[
    list[str] | None,
    typer.Option("--kit", help="With --db: only this kit id (repeatable; default all kits)."),
]


def _no_kits_without_db(kits: list[str] | None) -> None:
    if kits:
        from pmos.errors import BadInput

        raise BadInput("--kit selects kits in a database: it needs --db DSN")


def register(app: typer.Typer) -> None:
    app.command("metrics")(metrics)
    app.command("queue")(queue)


def metrics(
    json_output: bool = JSON_OPTION,
    window: int | None = typer.Option(
        None,
        "--window",
        help="Pass-fraction window: the last N non-SKIPPED verdicts (default from pmos.yaml).",
    ),
    initiative: str | None = typer.Option(None, "--initiative", help="Only this initiative."),
    model: str | None = typer.Option(None, "--model", help="Only this evaluator model."),
    since: str | None = typer.Option(
        None, "--since", help="Only verdicts recorded at or after DATE (YYYY-MM-DD or RFC 3339)."
    ),
    db: DbOption = None,
    kits: KitsOption = None,
) -> None:
    """Calibration of the review gate against PM labels: kappa, TPR/TNR, pass fraction.

    The gate stays advisory until kappa reaches the threshold over enough pairs
    with both pass and fail PM labels. With --db, over the kits synced to that
    database (all, or those given with --kit).
    """
    from pmos.calibration.metrics import compute_metrics, parse_since

    filters = {
        "window": window,
        "initiative": initiative,
        "model": model,
        "since": parse_since(since) if since is not None else None,
    }
    if db is not None:
        from pmos.db.connect import resolve_dsn
        from pmos.db.readings import db_metrics

        report = db_metrics(resolve_dsn(db), kits=kits, **filters)
    else:
        _no_kits_without_db(kits)
        report = compute_metrics(kit(), **filters)
    if json_output:
        emit_json(report)
        return
    if db is not None:
        typer.echo(f"kits ({len(report['kits'])}): {', '.join(report['kits']) or 'none'}")
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


def queue(json_output: bool = JSON_OPTION, db: DbOption = None, kits: KitsOption = None) -> None:
    """Verification debt (runs with no verdict or a SKIPPED one) and acceptance debt
    (judged runs the PM has not labelled). Exits 1 while verification debt exists.

    With --db, every synced kit's queue (or those given with --kit); entries name their kit.
    """
    if db is not None:
        from pmos.db.connect import resolve_dsn
        from pmos.db.queue import db_queue

        _render_db_queue(db_queue(resolve_dsn(db), kits=kits), json_output)
        return
    _no_kits_without_db(kits)
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


def _render_db_queue(q: dict[str, Any], json_output: bool) -> None:
    if json_output:
        emit_json(q)
    else:
        typer.echo(f"kits: {len(q['kits'])}")
        typer.echo(f"verification debt: {len(q['verification_debt'])} run(s)")
        if q["verification_debt"]:
            rows = [
                [
                    d["kit_id"],
                    d["run_id"],
                    d["initiative_id"],
                    d["age"],
                    d["status"],
                    d["skipped_reason"],
                ]
                for d in q["verification_debt"]
            ]
            typer.echo(table(["kit", "run_id", "initiative", "age", "status", "skip reason"], rows))
        typer.echo(f"acceptance debt: {len(q['acceptance_debt'])} run(s)")
        if q["acceptance_debt"]:
            rows = [
                [
                    d["kit_id"],
                    d["run_id"],
                    d["initiative_id"],
                    d["age"],
                    d["verdict"],
                    "" if d["registered"] else "unregistered",
                ]
                for d in q["acceptance_debt"]
            ]
            typer.echo(table(["kit", "run_id", "initiative", "age", "verdict", "note"], rows))
    if q["verification_debt"]:
        raise typer.Exit(exit_codes.CHECK_FAILED)
