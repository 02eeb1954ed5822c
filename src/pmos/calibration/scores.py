"""Does the verdict's score separate what the PM accepts from what the PM rejects?

Every full verdict carries a 0..1 score and the rubric a pass threshold
(0.70 by default), but agreement statistics only look at the verdict. Over
the labelled full-form verdicts, with the PM's label as the truth and pass
as the positive class, this module reports (scikit-learn computes each):

* ROC AUC of the score (``roc_auc_score``), with Newcombe's interval: the
  chance that a run the PM accepted scored above one the PM rejected;
* the Brier score of the score read as a probability of PM pass
  (``brier_score_loss``): 0 is perfect, 0.25 is what always saying 0.5 earns;
* the threshold that maximises Youden's J = TPR - FPR over the ROC curve
  (``roc_curve``), the kappa a gate passing exactly the runs scored at or
  above it would have had (``confusion_matrix``, then Cohen's kappa), and the
  rubric's own threshold beside it.

Short-form verdicts are left out: their score is typed by hand, not summed
from graded dimensions, so it says nothing about the rubric's threshold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pmos.calibration import intervals, stats
from pmos.calibration.agreement import maybe, pair_of

#: The keys of the score report, in output order.
SCORE_KEYS = (
    "score_pairs",
    "score_auc",
    "score_auc_ci95",
    "score_auc_ci_method",
    "brier",
    "youden_threshold",
    "kappa_at_youden_threshold",
    "rubric_threshold",
)

if TYPE_CHECKING:
    import numpy as np


def score_report(
    pm_pass: np.ndarray,
    score: np.ndarray,
    rubric_threshold: float | None,
    undefined: dict[str, str],
    rubric_problem: str | None = None,
) -> dict[str, Any]:
    """The score statistics of labelled full-form verdicts (``pm_pass`` 0/1, ``score``
    0..1, one entry per pair); each undefined one is None with its reason added
    to ``undefined``."""
    # Deferred: numpy (about 0.2 s), for the statistics alone.
    import numpy as np

    y = np.asarray(pm_pass, dtype=int)
    s = np.asarray(score, dtype=float)
    out: dict[str, Any] = dict.fromkeys(SCORE_KEYS)
    out["score_pairs"] = len(y)
    out["score_auc_ci_method"] = intervals.AUC_CI_METHOD
    out["rubric_threshold"] = rubric_threshold
    if rubric_threshold is None:
        undefined["rubric_threshold"] = rubric_problem or "the default rubric has no threshold"
    separation = ("score_auc", "score_auc_ci95", "youden_threshold", "kappa_at_youden_threshold")
    if len(y) == 0:
        why = "no labelled full-form verdict with a score in scope"
        undefined.update(dict.fromkeys(("brier", *separation), why))
        return out
    # Imported only now: scikit-learn (with SciPy) takes a second or more to import,
    # and a kit of short-form verdicts alone has no scored pair to compute from.
    from sklearn.metrics import brier_score_loss, confusion_matrix, roc_auc_score, roc_curve

    out["brier"] = maybe(float(brier_score_loss(y, s, pos_label=1)))
    positives = int(y.sum())
    negatives = len(y) - positives
    if positives == 0 or negatives == 0:
        missing = "fail" if negatives == 0 else "pass"
        why = (
            f"no PM {missing} label among the {len(y)} scored full-form verdict(s): a score "
            "can only separate two classes"
        )
        undefined.update(dict.fromkeys(separation, why))
        return out
    auc = float(roc_auc_score(y, s))
    out["score_auc"] = maybe(auc)
    out["score_auc_ci95"] = pair_of(intervals.auc_interval(auc, positives, negatives))
    fpr, tpr, thresholds = roc_curve(y, s, drop_intermediate=False)
    finite = np.isfinite(thresholds)
    j = np.where(finite, tpr - fpr, -np.inf)
    best = j.max()
    if best <= 1e-12:
        why = "the score separates PM pass from PM fail no better than chance (Youden's J <= 0)"
        undefined["youden_threshold"] = why
        undefined["kappa_at_youden_threshold"] = why
        return out
    ties = thresholds[np.flatnonzero(j >= best - 1e-12)]
    # Among equally good thresholds, the one nearest the rubric's (then the higher):
    # a tie is no reason to suggest a change.
    anchor = 0.5 if rubric_threshold is None else rubric_threshold
    threshold = float(max(ties, key=lambda t: (-abs(t - anchor), t)))
    out["youden_threshold"] = maybe(threshold)
    cells = confusion_matrix(y, (s >= threshold).astype(int), labels=[1, 0])
    c = stats.Confusion(
        tp=int(cells[0, 0]), fn=int(cells[0, 1]), fp=int(cells[1, 0]), tn=int(cells[1, 1])
    )
    out["kappa_at_youden_threshold"] = maybe(stats.cohen_kappa(c))
    return out
