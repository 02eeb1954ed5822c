"""Statistics for planning, without a kit: ``pmos stats agreement``."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import orjson
import typer

from pmos.calibration.agreement import parse_tables, table_reports
from pmos.calibration.decision import Rule
from pmos.cli._app import JsonFlag, examples, new_typer, table
from pmos.inputs import read_input


def register(app: typer.Typer) -> None:
    stats_app = new_typer(
        "Statistics for planning, computed by the code pmos metrics uses.",
        example="pmos stats agreement --tables tables.jsonl",
    )
    stats_app.command(
        "agreement", epilog=examples("pmos stats agreement --tables tables.jsonl --json")
    )(agreement)
    app.add_typer(stats_app, name="stats")


def agreement(
    tables: Annotated[
        str,
        typer.Option(
            "--tables",
            metavar="FILE|-",
            help='JSON lines, one table each: {"tp": 12, "fn": 1, "fp": 2, "tn": 9} '
            "(tp gate pass & PM pass, fn gate fail & PM pass, fp gate pass & PM fail, "
            "tn gate fail & PM fail); - reads standard input.",
        ),
    ],
    json_output: JsonFlag = False,
) -> None:
    """Every agreement statistic and interval pmos reports, for each table given.

    The same code as pmos metrics computes them, and calibrated /
    calibration_reason are the decision a kit with the default settings would
    make (kappa threshold 0.60, sequential rule with each table read as the look
    at its number of pairs, min_per_class 10, min_tnr 0.50, min_pairs 20). With
    --json, one JSON object per input table, in order.
    """
    source = "standard input" if tables == "-" else tables
    parsed = parse_tables(read_input(tables, what="tables file"), source=source)
    reports = table_reports([c for _, c in parsed], Rule())
    if json_output:
        out = sys.stdout.buffer
        for (number, _), report in zip(parsed, reports, strict=True):
            out.write(orjson.dumps({"line": number, **report}) + b"\n")
        out.flush()
        return
    typer.echo(render_agreement(parsed, reports))


def _num(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _span(pair: list[float] | None) -> str:
    return "-" if pair is None else f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def render_agreement(parsed: list[tuple[int, Any]], reports: list[dict[str, Any]]) -> str:
    rows = []
    for (number, c), r in zip(parsed, reports, strict=True):
        rows.append(
            [
                number,
                f"{c.tp}/{c.fn}/{c.fp}/{c.tn}",
                _num(r["kappa"]),
                _span(r["kappa_ci95"]),
                f"{_num(r['tpr'])} {_span(r['tpr_ci95'])}",
                f"{_num(r['tnr'])} {_span(r['tnr_ci95'])}",
                _num(r["calibrated"]),
                _num(r["labels_needed"]),
            ]
        )
    headers = [
        "line",
        "tp/fn/fp/tn",
        "kappa",
        "kappa 95%",
        "TPR [95%]",
        "TNR [95%]",
        "calibrated",
        "labels needed",
    ]
    return table(headers, rows)
