"""What the page says: the board's data turned into rows, captions and words.

Numbers are formatted, never changed. A key the metrics report does not have
(an older or newer pmos) reads "not available"; a key it has with a null value
reads "undefined" with the report's own reason. Record text stays raw here:
the template escapes it and :func:`pmos.board.page.shown` makes its hidden
characters visible, so no text from a ledger is trusted on the way to HTML.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pmos.board.collect import BoardData
from pmos.timestamps import seconds_rfc3339

NOT_AVAILABLE = "not available"
UNDEFINED = "undefined"
#: Longest stretch of one record text field shown on the page.
TEXT_LIMIT = 400
#: Most criteria and defects listed under one verdict.
ITEMS_LIMIT = 20


def number(value: Any, digits: int = 3) -> str:
    if value is None:
        return UNDEFINED
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def interval(value: Any) -> str:
    if value is None:
        return UNDEFINED
    if isinstance(value, list | tuple) and len(value) == 2:
        return f"[{number(value[0])}, {number(value[1])}]"
    return str(value)


def key(report: Mapping[str, Any], name: str, form: Callable[[Any], str] = number) -> str:
    """A report key as text: "not available" when this pmos does not report it."""
    if name not in report:
        return NOT_AVAILABLE
    return form(report[name])


def _why(report: Mapping[str, Any], *names: str) -> str:
    undefined = report.get("undefined") or {}
    return "; ".join(f"{n}: {undefined[n]}" for n in names if n in undefined)


def banner(data: BoardData) -> dict[str, Any]:
    """The gate's state in one sentence a PM can act on, and the reason beside it.

    It says what the merge gate (``pmos gate``) does with a passing verdict now,
    for the evaluator model that decides calibration, and nothing that pulls the
    other way (no point estimate beside an interval that decides).
    """
    r = data.metrics
    calibrated = bool(r.get("calibrated"))
    # The decision is the current evaluator model's own (a model change starts
    # calibration again); the sentence says which model it is about.
    model = r.get("model")
    about = f"evaluator model {model}" if model else "no evaluator model yet"
    if calibrated:
        sentence = (
            f"The gate is CALIBRATED for {about}: a passing verdict lets a run merge "
            "without the PM's label."
        )
    else:
        sentence = (
            f"The gate is ADVISORY for {about}: a run merges only with the PM's pass "
            "label on its passing verdict."
        )
    out: dict[str, Any] = {
        "calibrated": calibrated,
        "headline": "CALIBRATED" if calibrated else "ADVISORY",
        "sentence": sentence,
        "reason": r.get("calibration_reason", ""),
        "alarm": None,
    }
    if r.get("goodhart_alarm"):
        out["alarm"] = (
            f"Leniency alarm: {number(r.get('pass_fraction'))} of the last "
            f"{r.get('pass_fraction_window')} verdicts are on the pass side."
        )
    return out


def waiting(data: BoardData) -> list[dict[str, Any]]:
    """The runs waiting for the PM's label, in the order to take them."""
    return [
        {
            "run_id": w.run_id,
            "initiative_id": w.initiative_id,
            "age": w.age,
            "verdict": w.verdict,
            "registered": w.registered,
            "reason": w.reason if w.reason is not None else "oldest first (the acceptance queue)",
        }
        for w in data.waiting
    ]


def excluded(r: Mapping[str, Any]) -> list[dict[str, str]]:
    """Records the metrics left out, each with the rule it breaks."""
    return [
        {
            "kind": str(e.get("kind") or ""),
            "record_id": str(e.get("record_id") or ""),
            "rule": str(e.get("rule") or ""),
            "problem": str(e.get("problem") or ""),
            "file": str(e.get("file") or ""),
        }
        for e in r.get("excluded_records") or []
    ]


def statistics(r: Mapping[str, Any]) -> list[dict[str, str]]:
    """The agreement statistics beside the confusion matrix, with intervals where reported."""
    crp = r.get("corrected_pass_rate")
    labels_needed = key(r, "labels_needed")
    rows = [
        ("pairs (runs with a verdict and a PM label)", key(r, "pairs"), "", ""),
        ("Cohen's kappa", key(r, "kappa"), key(r, "kappa_ci95", interval), _why(r, "kappa")),
        ("TPR (PM-accepted runs the gate passed)", key(r, "tpr"), key(r, "tpr_ci95", interval),
         _why(r, "tpr")),
        ("TNR (PM-rejected runs the gate failed)", key(r, "tnr"), key(r, "tnr_ci95", interval),
         _why(r, "tnr")),
        (f"pass fraction (last {r.get('pass_fraction_window', '?')} verdicts)",
         key(r, "pass_fraction"), "", _why(r, "pass_fraction")),
        ("observed agreement", key(r, "observed_agreement"), "", _why(r, "observed_agreement")),
        ("corrected pass rate (unlabelled runs)",
         number(crp["value"]) if crp else UNDEFINED,
         interval(crp["ci95"]) if crp else "",
         _why(r, "corrected_pass_rate")),
        ("kappa threshold", key(r, "kappa_threshold", lambda v: number(v, 2)), "", ""),
        ("more labelled pairs needed (at the current agreement)", labels_needed, "",
         _why(r, "labels_needed")),
        ("labels superseded by a newer verdict", key(r, "labels_superseded"), "", ""),
        ("runs skipped by the gate", key(r, "skipped"), "", ""),
        ("judged runs without a PM label", key(r, "unlabeled_verdicts"), "", ""),
        ("PM labels without a verdict", key(r, "labels_without_verdict"), "", ""),
    ]  # fmt: skip
    if r.get("unsigned_labels") is not None:  # a kit that switched signing on
        rows.append(
            ("pairs counting an unsigned PM label (from before signing was required)",
             key(r, "unsigned_labels"), "", "signing.required_since in pmos.yaml")
        )  # fmt: skip
    return [{"name": a, "value": b, "interval": c, "note": d} for a, b, c, d in rows]


def confusion(r: Mapping[str, Any]) -> dict[str, int]:
    c = r.get("confusion") or {}
    cells = {k: int(c.get(k, 0)) for k in ("tp", "fn", "fp", "tn")}
    cells.update(
        gate_pass=cells["tp"] + cells["fp"],
        gate_fail=cells["fn"] + cells["tn"],
        pm_pass=cells["tp"] + cells["fn"],
        pm_fail=cells["fp"] + cells["tn"],
        total=sum(cells.values()),
    )
    return cells


def periods(data: BoardData) -> list[dict[str, str]]:
    out = []
    for p in data.metrics.get("periods") or []:
        out.append(
            {
                "period": p.get("period"),
                "start": p.get("start"),
                "end": p.get("end"),
                "pairs": number(p.get("pairs")),
                "kappa": number(p.get("kappa")),
                "kappa_ci95": interval(p.get("kappa_ci95")),
                "tpr": number(p.get("tpr")),
                "tnr": number(p.get("tnr")),
                "pass_fraction": number(p.get("pass_fraction")),
            }
        )
    return out


def models(r: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name, m in (r.get("by_model") or {}).items():
        rows.append(
            {
                "model": name,
                "pairs": number(m.get("pairs")),
                "kappa": key(m, "kappa"),
                "kappa_ci95": key(m, "kappa_ci95", interval),
                "tpr": key(m, "tpr"),
                "tpr_ci95": key(m, "tpr_ci95", interval),
                "tnr": key(m, "tnr"),
                "tnr_ci95": key(m, "tnr_ci95", interval),
                "pass_fraction": key(m, "pass_fraction"),
                "calibrated": bool(m.get("calibrated")),
                "reason": m.get("calibration_reason", ""),
                "undefined": _why(m, "kappa", "tpr", "tnr"),
            }
        )
    return rows


def score_statistics(data: BoardData) -> list[dict[str, str]]:
    r = data.metrics
    rows = [
        ("ROC AUC of the score against the PM label", key(r, "score_auc"),
         key(r, "score_auc_ci95", interval), _why(r, "score_auc")),
        ("Brier score (lower is better)", key(r, "brier"), "", _why(r, "brier")),
        ("rubric threshold", number(data.rubric_threshold, 2), "", _why(r, "rubric_threshold")),
        ("PM-optimal threshold (Youden's J)", key(r, "youden_threshold"), "",
         _why(r, "youden_threshold")),
        ("kappa at the PM-optimal threshold", key(r, "kappa_at_youden_threshold"), "",
         _why(r, "kappa_at_youden_threshold")),
    ]  # fmt: skip
    return [{"name": a, "value": b, "interval": c, "note": d} for a, b, c, d in rows]


def optimal_threshold(r: Mapping[str, Any]) -> float | None:
    value = r.get("youden_threshold")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def verdict_row(
    record: Mapping[str, Any],
    labels: Mapping[str, Mapping[str, Any]] | None = None,
    builders: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One row of the latest-verdicts table: the verdict, the builder (from the run
    record when the verdict names none) and the run's PM label."""
    axes = record.get("axes") or {}

    def axis(name: str) -> dict[str, Any]:
        a = axes.get(name) or {}
        return {"verdict": a.get("verdict", ""), "rationale": a.get("rationale") or ""}

    criteria = record.get("criteria") or []
    defects = record.get("defects") or []
    return {
        "run_id": record.get("run_id", ""),
        "recorded_at": record.get("recorded_at", ""),
        "verdict": record.get("verdict", ""),
        "score": "" if record.get("score") is None else number(record.get("score"), 2),
        "form": record.get("form", ""),
        "spec": axis("spec"),
        "standards": axis("standards"),
        "evaluator_model": record.get("evaluator_model") or "",
        "builder_model": record.get("builder_model")
        or (builders or {}).get(str(record.get("run_id")))
        or "",
        "flags": [str(f) for f in record.get("flags") or []],
        "initiative_id": record.get("initiative_id", ""),
        "note": record.get("note") or record.get("skipped_reason") or "",
        "label": _label((labels or {}).get(str(record.get("run_id")))),
        "criteria": criteria[:ITEMS_LIMIT],
        "criteria_more": max(0, len(criteria) - ITEMS_LIMIT),
        "defects": defects[:ITEMS_LIMIT],
        "defects_more": max(0, len(defects) - ITEMS_LIMIT),
    }


def _label(label: Mapping[str, Any] | None) -> dict[str, str]:
    """The run's PM label as the latest-verdicts table shows it."""
    if not label:
        return {"label": "none", "how": "no label yet"}
    if label.get("left_out"):
        # Whatever it carries: the metrics left it out (listed under records left out).
        return {"label": str(label.get("label") or ""), "how": "left out: see records left out"}
    if label.get("signed"):
        how = ["signed"]
    elif label.get("unchecked"):
        how = ["signature not checked: the kit names no allowed signers"]
    else:
        how = ["unsigned"]
    if label.get("blind"):
        how.append("blind")
    return {"label": str(label.get("label") or ""), "how": ", ".join(how)}


def scope(data: BoardData) -> list[tuple[str, str]]:
    o = data.options
    return [
        ("initiative", o.initiative or "all"),
        ("evaluator model", o.model or "all"),
        ("verdicts since", seconds_rfc3339(o.since) if o.since else "the beginning"),
        ("period", o.period_unit),
        ("records listed per section", str(o.limit)),
    ]
