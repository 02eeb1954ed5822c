"""The board's HTML: one Jinja2 template with autoescaping, and the charts inline.

Autoescaping is on for the whole template, so every value from a ledger is
escaped wherever it lands (text or attribute); the only markup inserted as is
comes from :mod:`pmos.board.svg`, which escapes the chart text itself. The
``shown`` filter additionally spells out hidden characters
(:mod:`pmos.board.visible`). A Content-Security-Policy in the page forbids
scripts and every network load, as a second wall behind the escaping.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pmos.board import charts, view
from pmos.board.collect import BoardData
from pmos.board.visible import code, pieces, shorten
from pmos.gate.vocabulary import pass_side_words, side

TEMPLATES = Path(__file__).parent / "templates"
#: The first line of every board; a file that starts with it may be overwritten by the next one.
MARKER = "<!DOCTYPE html>\n<!-- pmos board:"


@dataclass(frozen=True)
class Page:
    """A rendered board: its HTML, each chart's mark count (None: not drawn), and
    what this pmos could not provide."""

    html: str
    charts: dict[str, int | None]
    unavailable: list[str]


def shown(value: Any, limit: int | None = view.TEXT_LIMIT) -> Any:
    """Record text as escaped markup, hidden characters as visible codes, cut to ``limit``."""
    # Deferred: MarkupSafe, the optional 'board' extra (Jinja2's).
    from markupsafe import Markup, escape

    text = "" if value is None else str(value)
    out = []
    for hidden, piece in pieces(shorten(text, limit)):
        if hidden:
            out.append(Markup('<span class="hidden-char">{}</span>').format(code(piece)))
        else:
            out.append(escape(piece))
    return Markup("").join(out)


@cache
def _environment() -> Any:
    """One Jinja environment per process: it keeps the compiled template (about
    0.1 s to compile) and, as any environment does, recompiles it if the file
    changes."""
    # Deferred: Jinja2, the optional 'board' extra.
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["shown"] = shown
    env.filters["side"] = side  # the one pass-side rule (pmos.gate.vocabulary)
    env.globals["pass_side_words"] = pass_side_words()
    return env


def _charts(data: BoardData) -> tuple[dict[str, charts.Chart | None], dict[str, str]]:
    """Each chart, or why it is not drawn."""
    r = data.metrics
    drawn: dict[str, charts.Chart | None] = {}
    missing: dict[str, str] = {}
    threshold = float(r.get("kappa_threshold", 0.6))
    if not data.periods_supported:
        drawn["over-time"] = None
        missing["over-time"] = (
            "not available: this pmos does not compute metrics per period yet "
            "(compute_metrics has no 'by')"
        )
    elif not r.get("periods"):
        drawn["over-time"] = None
        missing["over-time"] = "no period holds a verdict in scope yet"
    else:
        drawn["over-time"] = charts.over_time(
            r["periods"], threshold, data.goodhart_alarm, data.options.period_unit
        )
    if r.get("by_model"):
        drawn["by-model"] = charts.by_model(r["by_model"], threshold)
    else:
        drawn["by-model"] = None
        missing["by-model"] = "no evaluator model has judged a run in scope yet"
    if data.scores is None:
        drawn["scores"] = None
        missing["scores"] = (
            "not available: this pmos does not list scored pairs yet "
            "(pmos.calibration.metrics has no scored_pairs)"
        )
    elif not data.scores.scored:
        drawn["scores"] = None
        missing["scores"] = "no labelled run has a scored verdict yet"
    else:
        drawn["scores"] = charts.score_histogram(
            data.scores, data.rubric_threshold, view.optimal_threshold(r)
        )
    return drawn, missing


def render(data: BoardData) -> Page:
    """The whole board as one HTML document."""
    # Deferred: MarkupSafe, the optional 'board' extra (Jinja2's).
    from markupsafe import Markup

    drawn, missing = _charts(data)
    r = data.metrics
    context = {
        "data": data,
        "banner": view.banner(data),
        "stats": view.statistics(r),
        "kappa_method": view.key(r, "kappa_ci_method", str),
        "confusion": view.confusion(r),
        "periods": view.periods(data),
        "models": view.models(r),
        "score_stats": view.score_statistics(data),
        "scores": data.scores,
        "latest": [view.verdict_row(v, data.labels, data.builders) for v in data.latest],
        "waiting": view.waiting(data),
        "excluded": view.excluded(r),
        "scope": view.scope(data),
        "svg": {name: Markup(c.svg) if c else None for name, c in drawn.items()},
        "missing": missing,
        "max_models": charts.MAX_MODELS,
        "not_available": view.NOT_AVAILABLE,
    }
    html = _environment().get_template("board.html.j2").render(**context)
    unavailable = [f"{name}: {why}" for name, why in missing.items() if why.startswith("not avail")]
    return Page(
        html,
        {name: (c.marks if c else None) for name, c in drawn.items()},
        unavailable,
    )
