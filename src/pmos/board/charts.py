"""The board's charts, drawn with matplotlib's SVG backend (no pyplot, no raster).

Each function takes numbers the library already computed and returns a
:class:`Chart`: inline SVG markup (see :mod:`pmos.board.svg`) and how many
marks it holds. A *mark* is one drawn datum (a period's kappa, a model's
kappa, a histogram bar); the chart code tags each with ``gid="mark-..."``,
thresholds with ``threshold-...``, interval bands and whiskers with
``band-...`` / ``interval-...``, so a reader or a test can find them.

Colours follow the Okabe-Ito palette, which stays distinct under the common
colour-vision deficiencies: blue for pass (PM accepted, gate pass), vermillion
for fail, black for thresholds and neutral data. Shapes and line styles carry
the same distinction for a grey-scale print.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pmos.board.scores import ScoreBins
from pmos.board.svg import inline_svg
from pmos.board.visible import plain

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

PASS_COLOUR = "#0072B2"  # Okabe-Ito blue
FAIL_COLOUR = "#D55E00"  # Okabe-Ito vermillion
INK = "#000000"
MUTED = "#6B6B6B"
#: Most evaluator models drawn in one chart; the table beside it lists them all.
MAX_MODELS = 30
#: Most period labels written under the over-time chart (every period is still drawn).
MAX_TICKS = 12

STYLE: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",  # text stays text: smaller, selectable, no glyph paths
    "svg.hashsalt": "pmos-board",  # the same data gives the same file
    "text.parse_math": False,  # a "$" in a model name is a dollar sign, not TeX
    "text.usetex": False,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#DDDDDD",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"],
}
#: Date and software fields matplotlib would write into the SVG's metadata.
NO_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}


@dataclass(frozen=True)
class Chart:
    """One chart: its name (the id prefix of its SVG), title, markup and mark count."""

    name: str
    title: str
    svg: str
    marks: int


@contextmanager
def _figure(width: float, height: float) -> Iterator[Any]:
    # Deferred: matplotlib, the optional 'board' extra, heavy, only to draw a chart.
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(STYLE):
        yield Figure(figsize=(width, height), layout="constrained")


def _finish(fig: Any, name: str, title: str) -> Chart:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata=NO_METADATA)
    inline = inline_svg(buffer.getvalue(), name, title)
    return Chart(name, title, inline.markup, inline.marks)


def _defined(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def over_time(
    periods: Sequence[Mapping[str, Any]],
    kappa_threshold: float,
    alarm: float | None,
    unit: str,
) -> Chart:
    """Kappa with its 95% band and the pass fraction, one point per period, oldest first.

    ``periods`` has the shape of ``compute_metrics(..., by=...)["periods"]``.
    A period whose kappa (or pass fraction) is undefined gets no point and
    leaves a gap in the line, rather than a made-up value.
    """
    title = f"Agreement over time, per {unit}"
    n = len(periods)
    xs = list(range(n))
    with _figure(7.5, 4.6) as fig:
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
        kappas: list[float] = [
            p["kappa"] if _defined(p.get("kappa")) else math.nan for p in periods
        ]
        lows, highs = [], []
        for p in periods:
            ci: Any = p.get("kappa_ci95")
            ok = isinstance(ci, list | tuple) and len(ci) == 2 and all(map(_defined, ci))
            lows.append(ci[0] if ok else math.nan)
            highs.append(ci[1] if ok else math.nan)
        band = top.fill_between(
            xs, lows, highs, color=PASS_COLOUR, alpha=0.18, linewidth=0, label="95% interval"
        )
        band.set_gid("band-kappa")
        top.plot(xs, kappas, color=PASS_COLOUR, linewidth=1.2)
        for i, value in enumerate(kappas):
            if not math.isnan(value):
                top.plot([i], [value], "o", color=PASS_COLOUR, markersize=4, gid=f"mark-kappa-{i}")
        top.axhline(
            kappa_threshold,
            color=INK,
            linestyle="--",
            linewidth=1,
            gid="threshold-kappa",
            label=f"kappa threshold {kappa_threshold:.2f}",
        )
        low_end = min([v for v in [*kappas, *lows] if not math.isnan(v)] + [0.0])
        top.set_ylim(min(-0.05, low_end - 0.05), 1.02)
        top.set_ylabel("Cohen's kappa\n(−1 to 1)")
        top.plot([], [], "o-", color=PASS_COLOUR, markersize=4, label="kappa")
        top.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncols=3, fontsize=8)

        fractions = [
            p["pass_fraction"] if _defined(p.get("pass_fraction")) else math.nan for p in periods
        ]
        bottom.plot(xs, fractions, color=INK, linewidth=1.0)
        for i, value in enumerate(fractions):
            if not math.isnan(value):
                bottom.plot([i], [value], "s", color=INK, markersize=3.5, gid=f"mark-passfrac-{i}")
        if alarm is not None:
            bottom.axhline(
                alarm,
                color=FAIL_COLOUR,
                linestyle=":",
                linewidth=1.2,
                gid="threshold-alarm",
                label=f"leniency alarm {alarm:.2f}",
            )
            bottom.legend(loc="lower left", bbox_to_anchor=(0, 1.0), fontsize=8)
        bottom.set_ylim(-0.02, 1.02)
        bottom.set_ylabel("pass fraction\n(share 0 to 1)")
        bottom.set_xlabel(f"{unit} (oldest left)")
        step = max(1, math.ceil(n / MAX_TICKS))
        ticks = xs[::step]
        bottom.set_xticks(ticks, [plain(periods[i].get("period"), 24) for i in ticks])
        for label in bottom.get_xticklabels():
            label.set_rotation(30)
            label.set_horizontalalignment("right")
        if n:
            bottom.set_xlim(-0.5, n - 0.5)
        return _finish(fig, "over-time", title)


def by_model(models: Mapping[str, Mapping[str, Any]], kappa_threshold: float) -> Chart:
    """Each evaluator model's kappa with its 95% interval, models with most pairs on top.

    Filled dots are calibrated models, open ones advisory; a model whose kappa
    is undefined is listed with no dot (its row in the table says why).
    """
    title = "Kappa per evaluator model"
    ranked = sorted(models.items(), key=lambda item: (-item[1].get("pairs", 0), item[0]))
    shown = ranked[:MAX_MODELS]
    rows = len(shown)
    with _figure(7.5, 1.5 + 0.32 * max(rows, 1)) as fig:
        ax = fig.subplots()
        lows = [0.0]
        for i, (_, m) in enumerate(shown):
            y = rows - 1 - i
            ci = m.get("kappa_ci95")
            if isinstance(ci, list | tuple) and len(ci) == 2 and all(map(_defined, ci)):
                ax.plot([ci[0], ci[1]], [y, y], color=INK, linewidth=1.4, gid=f"interval-model-{i}")
                lows.append(ci[0])
            kappa: Any = m.get("kappa")
            if _defined(kappa):
                calibrated = bool(m.get("calibrated"))
                ax.plot(
                    [kappa],
                    [y],
                    "o",
                    markersize=6,
                    color=PASS_COLOUR,
                    markerfacecolor=PASS_COLOUR if calibrated else "white",
                    markeredgewidth=1.4,
                    gid=f"mark-model-{i}",
                )
                lows.append(kappa)
        ax.axvline(
            kappa_threshold,
            color=INK,
            linestyle="--",
            linewidth=1,
            gid="threshold-kappa",
            label=f"kappa threshold {kappa_threshold:.2f}",
        )
        ax.plot([], [], "o", color=PASS_COLOUR, label="calibrated")
        ax.plot(
            [],
            [],
            "o",
            color=PASS_COLOUR,
            markerfacecolor="white",
            label="advisory (not calibrated)",
        )
        ax.plot([], [], "-", color=INK, label="95% interval")
        labels = [f"{plain(name, 36)} ({m.get('pairs', 0)} pairs)" for name, m in shown]
        ax.set_yticks(range(rows), list(reversed(labels)))
        ax.set_ylim(-0.7, max(rows, 1) - 0.3)
        ax.set_xlim(min(-0.05, min(lows) - 0.05), 1.02)
        ax.set_xlabel("Cohen's kappa against PM labels (−1 to 1)")
        ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncols=2, fontsize=8)
        return _finish(fig, "by-model", title)


def score_histogram(
    bins: ScoreBins, rubric_threshold: float | None, optimal_threshold: float | None
) -> Chart:
    """Verdict scores of PM-accepted and PM-rejected runs side by side, per score bin.

    Only non-empty bars are drawn, so the mark count is the number of
    (label, bin) cells that hold at least one run.
    """
    title = "Verdict scores by PM label"
    width = (bins.edges[1] - bins.edges[0]) if len(bins.edges) > 1 else 0.05
    bar = width * 0.45
    with _figure(7.5, 3.2) as fig:
        ax = fig.subplots()
        for side, counts, colour, offset, hatch in (
            ("accepted", bins.accepted, PASS_COLOUR, 0.0, None),
            ("rejected", bins.rejected, FAIL_COLOUR, bar, "//"),
        ):
            for i, count in enumerate(counts):
                if count:
                    ax.bar(
                        bins.edges[i] + width * 0.05 + offset,
                        count,
                        width=bar,
                        align="edge",
                        color=colour,
                        hatch=hatch,
                        edgecolor="white" if hatch else colour,
                        linewidth=0,
                        gid=f"mark-{side}-{i}",
                    )
        # Deferred: matplotlib, the optional 'board' extra, heavy, only to draw a chart.
        from matplotlib.patches import Patch
        from matplotlib.ticker import MaxNLocator

        handles = [
            Patch(color=PASS_COLOUR, label=f"PM accepted ({sum(bins.accepted)})"),
            Patch(
                facecolor=FAIL_COLOUR,
                edgecolor="white",
                hatch="//",
                label=f"PM rejected ({sum(bins.rejected)})",
            ),
        ]
        if rubric_threshold is not None:
            handles.append(
                ax.axvline(
                    rubric_threshold,
                    color=INK,
                    linestyle="--",
                    linewidth=1.2,
                    gid="threshold-rubric",
                    label=f"rubric threshold {rubric_threshold:.2f}",
                )
            )
        if optimal_threshold is not None:
            handles.append(
                ax.axvline(
                    optimal_threshold,
                    color=MUTED,
                    linestyle=":",
                    linewidth=1.6,
                    gid="threshold-optimal",
                    label=f"PM-optimal threshold {optimal_threshold:.2f}",
                )
            )
        ax.set_xlim(0, 1)
        ax.set_xlabel("verdict score (0 to 1)")
        ax.set_ylabel("labelled runs")
        ax.grid(axis="x", visible=False)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0), ncols=2, fontsize=8)
        return _finish(fig, "scores", title)
