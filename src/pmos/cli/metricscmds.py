"""Reader commands: metrics (calibration of the review gate) and queue (what is owed)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from pmos import exit_codes
from pmos.calibration.periods import parse_by
from pmos.cli._app import JsonFlag, emit_json, examples, excluded_lines, kit, table
from pmos.db.connect import resolve_dsn
from pmos.errors import BadInput

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="DSN",
        help="Read the kits synced to this PostgreSQL database ('pmos sync') instead of "
        "this kit's ledgers ('-' or empty: $PMOS_DATABASE_URL).",
    ),
]
KitsOption = Annotated[
    list[str] | None,
    typer.Option("--kit", help="With --db: only this kit id (repeatable; default all kits)."),
]


def _no_kits_without_db(kits: list[str] | None) -> None:
    if kits:
        raise BadInput("--kit selects kits in a database: it needs --db DSN")


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
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            metavar="week|month|N",
            help="Also report each period, oldest first: ISO weeks, calendar months, or "
            "groups of N pairs, each pair dated by its PM label.",
        ),
    ] = None,
    db: DbOption = None,
    kits: KitsOption = None,
) -> None:
    """Calibration of the review gate against PM labels: kappa, TPR/TNR, pass fraction.

    The gate stays advisory until the lower end of kappa's 95% interval reaches
    the threshold, with enough pairs of each PM label class (pmos.yaml).
    """
    # Deferred: pmos.calibration.metrics imports numpy (about 0.2 s).
    from pmos.calibration.metrics import compute_metrics, parse_since

    try:
        period = parse_by(by) if by is not None else None
    except ValueError as exc:
        raise BadInput(f"--by: {exc}") from None
    filters: dict[str, Any] = {
        "window": window,
        "initiative": initiative,
        "model": model,
        "since": parse_since(since) if since is not None else None,
        "by": period,
    }
    if db is not None:
        # Deferred: pmos.db.readings imports msgspec (about 30 ms).
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


def _threshold_note(r: dict[str, Any]) -> str:
    """'your rubric threshold 0.70 vs the PM-optimal 0.78' when both are known."""
    rubric, youden = r["rubric_threshold"], r["youden_threshold"]
    if rubric is None or youden is None:
        return ""
    return (
        f"rubric threshold {rubric:.2f} vs the PM-optimal {youden:.2f} "
        f"(a gate at {youden:.2f} would have kappa {_num(r['kappa_at_youden_threshold'])})"
    )


def _drift_line(r: dict[str, Any]) -> str:
    basis = r["drift_basis"]
    if r["drift"] is None:
        return f"drift: undefined ({r['undefined'].get('drift', 'no baseline')})"
    baseline = (
        f"baseline: {basis['baseline_pairs']} pairs from pair {basis['baseline_start_pair']}, "
        f"kappa {_num(basis['baseline_kappa'])}, "
        f"disagreement {_num(basis['baseline_disagreement'])}"
    )
    if r["drift"]:
        return (
            f"drift: YES since pair {basis['alarm_at_pair']}, not yet recalibrated "
            f"(disagreements rose towards {_num(basis['alarm_disagreement'])}; {baseline})"
        )
    return (
        f"drift: no (CUSUM {_num(basis['cusum'])} of {basis['decision_interval']:g} over "
        f"{basis['pairs_since_baseline']} pairs since the {baseline})"
    )


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
    needed = r["labels_needed"]
    rows = [
        ["pairs", r["pairs"], ""],
        ["observed agreement", _num(r["observed_agreement"]), ""],
        ["kappa", _num(r["kappa"]), _interval(r["kappa_ci95"])],
        ["TPR (pass recall)", _num(r["tpr"]), _interval(r["tpr_ci95"])],
        ["TNR (fail recall)", _num(r["tnr"]), _interval(r["tnr_ci95"])],
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
        ["kappa threshold", _num(r["kappa_threshold"]), f"rule: {r['calibration_rule']}"],
        ["kappa point >= threshold", _num(r["kappa_point_meets_threshold"]), ""],
        [
            "calibrated",
            _num(r["calibrated"]),
            f"evaluator model {r['model']} ({r['model_source']})" if r["model"] else "",
        ],
        [
            "labels needed",
            _num(needed),
            "" if needed is not None else r["undefined"].get("labels_needed", ""),
        ],
        ["score AUC (full verdicts)", _num(r["score_auc"]), _interval(r["score_auc_ci95"])],
        ["Brier score", _num(r["brier"]), f"{r['score_pairs']} scored pair(s)"],
        ["PM-optimal threshold", _num(r["youden_threshold"]), _threshold_note(r)],
        ["skipped runs", r["skipped"], ""],
        ["unlabelled verdicts", r["unlabeled_verdicts"], ""],
        ["labels without verdict", r["labels_without_verdict"], ""],
        ["labels superseded", r["labels_superseded"], "a newer verdict awaits a label"],
    ]
    lines.append(table(["statistic", "value", "95% interval / note"], rows))
    lines.append("")
    lines.append(_drift_line(r))
    if r["periods"]:
        lines.append("")
        lines.append(
            table(
                ["period", "pairs", "kappa", "kappa 95%", "TPR", "TNR", "pass frac"],
                [
                    [
                        p["period"],
                        p["pairs"],
                        _num(p["kappa"]),
                        _interval(p["kappa_ci95"]),
                        _num(p["tpr"]),
                        _num(p["tnr"]),
                        _num(p["pass_fraction"]),
                    ]
                    for p in r["periods"]
                ],
            )
        )
    if r["unsigned_labels"]:
        lines.append("")
        lines.append(
            f"unsigned labels: {r['unsigned_labels']} of the pairs count a PM label with no "
            "signature, recorded before signing was required (pmos.yaml "
            "signing.required_since)"
        )
    if r["excluded_records"]:
        lines.append("")
        lines += excluded_lines(r["excluded_records"])
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
                _interval(m["kappa_ci95"]),
                _num(m["tpr"]),
                _num(m["tnr"]),
                _num(m["ac1"]),
                _num(m["pass_fraction"]),
                _num(m["score_auc"]),
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
                    "kappa 95%",
                    "TPR",
                    "TNR",
                    "AC1",
                    "pass frac",
                    "score AUC",
                    "calibrated",
                ],
                model_rows,
            )
        )
    return "\n".join(lines)


def queue(
    json_output: JsonFlag = False,
    include_calibration: Annotated[
        bool,
        typer.Option(
            "--include-calibration",
            help="Also exit 1 while seeded known-bad runs await a verdict (calibration debt).",
        ),
    ] = False,
    db: DbOption = None,
    kits: KitsOption = None,
) -> None:
    """What is owed: verification debt (exit 1), acceptance debt, calibration debt.

    Verification debt is every run the kit knows of (registered, judged or
    labelled) whose latest verdict is missing or SKIPPED; acceptance debt is
    every judged run the PM has not labelled since its latest verdict;
    calibration debt is the seeded known-bad runs awaiting a verdict, listed
    apart so a CI gate on 'pmos queue' stays meaningful after seeding.
    Example: pmos queue --json
    """
    # Deferred: pmos.calibration.queue imports sshsig and cryptography (about 50 ms).
    from pmos.calibration.queue import Queue, compute_queue, queue_fails

    if db is not None:
        # Deferred: pmos.db.queue imports sshsig and cryptography (about 50 ms).
        from pmos.db.queue import db_queue

        found = db_queue(resolve_dsn(db), kits=kits)
        if json_output:
            emit_json(found)
        else:
            typer.echo(f"kits: {len(found['kits'])} ({', '.join(found['kits']) or 'none'})")
        fails = queue_fails(found, include_calibration=include_calibration)
        if not json_output:
            for name in ("verification_debt", "acceptance_debt", "calibration_debt"):
                typer.echo(f"{name.replace('_', ' ')}: {len(found[name])} run(s)")
                if found[name]:
                    cols = ["kit_id", "run_id", "initiative_id", "age"]
                    rows = [[d.get(c) for c in cols] for d in found[name]]
                    typer.echo(table(["kit", "run_id", "initiative", "age"], rows))
        if fails:
            raise typer.Exit(exit_codes.CHECK_FAILED)
        return
    _no_kits_without_db(kits)
    q: Queue = compute_queue(kit())
    if json_output:
        emit_json(q.as_dict())
    else:
        typer.echo(f"verification debt: {len(q.verification_debt)} run(s)")
        if q.verification_debt:
            rows = [
                [
                    d["run_id"],
                    d["initiative_id"] or "-",
                    d["age"],
                    d["status"],
                    d["skipped_reason"],
                    "" if d["registered"] else "unregistered",
                ]
                for d in q.verification_debt
            ]
            typer.echo(
                table(["run_id", "initiative", "age", "status", "skip reason", "note"], rows)
            )
        typer.echo(f"acceptance debt: {len(q.acceptance_debt)} run(s)")
        if q.acceptance_debt:
            rows = [
                [
                    d["run_id"],
                    d["initiative_id"] or "-",
                    d["age"],
                    d["verdict"],
                    ", ".join(
                        note
                        for note, on in (
                            ("unregistered", not d["registered"]),
                            ("label judged an older verdict or none", d["label_superseded"]),
                        )
                        if on
                    ),
                ]
                for d in q.acceptance_debt
            ]
            typer.echo(table(["run_id", "initiative", "age", "verdict", "note"], rows))
        counted = "counted" if include_calibration else "not counted without --include-calibration"
        typer.echo(
            f"calibration debt: {len(q.calibration_debt)} seeded run(s) awaiting a verdict "
            f"({counted})"
        )
        if q.calibration_debt:
            rows = [[d["run_id"], d["age"], d["status"]] for d in q.calibration_debt]
            typer.echo(table(["run_id", "age", "status"], rows))
        for line in excluded_lines(q.excluded_records):
            typer.echo(line)
    if q.check_fails(include_calibration=include_calibration):
        raise typer.Exit(exit_codes.CHECK_FAILED)
