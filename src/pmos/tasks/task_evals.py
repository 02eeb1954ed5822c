"""The task-evaluation ledger: writing a scored evaluation and reading it back.

The writer never trusts a number it can compute: :func:`pmos.scoring.score_input`
derives every final score, weight, band and the overall score, and the stored
record is validated against ``task-eval.schema.json`` before it is appended.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pmos.errors import BadInput, RecordRejected, Violation
from pmos.kit import Kit
from pmos.store import lookup
from pmos.store.append import Draft, Written, append, record_meta
from pmos.store.read import newest_first
from pmos.tasks.collect import collect
from pmos.tasks.scoring import score_input

KIND = "task-evals"


def from_collect_output(data: Any) -> Any:
    """``pmos score collect --json`` output as a ``score record`` input; anything else
    unchanged. The collect output's ``template`` is the input; an ``aiScore``,
    ``rationale`` or ``evidence`` written beside a category's computed score
    (under ``categories``) is taken too."""
    if not (isinstance(data, dict) and isinstance(data.get("template"), dict)):
        return data
    template = copy.deepcopy(data["template"])
    written = data.get("categories")
    cats = template.get("categories")
    if isinstance(written, dict) and isinstance(cats, dict):
        for name, entry in cats.items():
            extra = written.get(name)
            if not isinstance(entry, dict) or not isinstance(extra, dict):
                continue
            for key in ("aiScore", "rationale", "evidence"):
                if key in extra and entry.get(key) in (None, "", []):
                    entry[key] = extra[key]
    return template


def computed_input(kit: Kit, data: Any) -> tuple[Any, dict[str, Any]]:
    """The input with each category's deterministic score computed from the kit's
    records (:func:`pmos.tasks.collect.collect`), and the collect result.

    A submitted deterministic score must equal the computed one: the deterministic
    half of a score is what the kit recorded, never what an author says it was.
    """
    data = from_collect_output(data)
    if not isinstance(data, dict):
        return data, {}
    run_id = data.get("run_id")
    if not isinstance(run_id, str) or not run_id:
        raise RecordRejected(
            "task-eval",
            [
                Violation(
                    "required",
                    "run_id",
                    "missing; pmos computes the deterministic scores from the run's records "
                    "('pmos score collect --run-id R' shows them). To only compute a score "
                    "from given numbers, use 'pmos score compute'",
                )
            ],
        )
    computed = collect(kit, run_id)
    data = copy.deepcopy(data)
    data.setdefault("task_id", computed["task_id"])
    problems: list[Violation] = []
    categories = data.get("categories")
    if isinstance(categories, dict):
        for name, basis in computed["categories"].items():
            entry = categories.get(name)
            if not isinstance(entry, dict):
                continue
            want = basis["deterministicScore"]
            got = entry.get("deterministicScore")
            if got is None:
                entry["deterministicScore"] = want
            elif got != want or type(got) is not int:
                problems.append(
                    Violation(
                        "deterministic-computed",
                        f"categories/{name}/deterministicScore",
                        f"submitted {got!r}, but pmos computes {want} from the kit's records "
                        f"of run {run_id!r} ({basis['formula']}); leave it out or submit {want}",
                    )
                )
    if problems:
        raise RecordRejected("task-eval", problems)
    return data, computed


def compute_task_eval(data: Any) -> dict[str, Any]:
    """The calculator: what ``score record --json`` prints for explicit deterministic
    and AI scores, computed by the same code and recorded nowhere."""
    scored = score_input(from_collect_output(data))
    fields = {**scored.fields}
    if scored.warnings:
        fields["warnings"] = list(scored.warnings)
    return summary(fields)


def record_task_eval(kit: Kit, data: Any, *, target: str | Path | None = None) -> Written:
    """Score ``data`` (the ``pmos score record`` input, or ``score collect --json``
    output with the AI scores filled in) and append the result; the deterministic
    scores are computed from the kit's records of the run."""
    data, computed = computed_input(kit, data)
    scored = score_input(data)

    def build() -> Draft:
        record: dict[str, Any] = {**record_meta(KIND), **scored.fields}
        notes = list(scored.warnings)
        if computed and not computed["complete"]:
            record["flags"] = ["incomplete-inputs"]
            notes.append(
                "some deterministic inputs are missing, so those parts were scored as "
                "stated (flagged incomplete-inputs): " + "; ".join(computed["missing"])
            )
        run_id = record.get("run_id")
        if isinstance(run_id, str) and lookup.find_run(kit.store, run_id) is None:
            record["flags"] = [*record.get("flags", []), "unregistered-run"]
            notes.append(
                f"run {run_id!r} was never registered ('pmos run register'); "
                "the evaluation is flagged unregistered-run"
            )
        if scored.warnings:
            record["warnings"] = list(scored.warnings)
        return Draft([record], notes)

    return append(kit.store, KIND, build, target=target)


#: The keys of ``pmos score show --json``, always all present (null when the record lacks one).
SUMMARY_KEYS = (
    "record_id",
    "recorded_at",
    "task_id",
    "run_id",
    "categoryScores",
    "overallScore",
    "band",
    "flags",
    "warnings",
)


def summary(record: dict[str, Any]) -> dict[str, Any]:
    """The stable ``--json`` shape of one evaluation.

    Stored records omit optional fields (run_id, flags, warnings) and carry
    ledger internals (hashes, schema_version); a reader's keys must not come
    and go with them.
    """
    return {key: record.get(key) for key in SUMMARY_KEYS}


def latest_for_task(kit: Kit, task_id: str) -> dict[str, Any]:
    """The most recent evaluation of ``task_id``; unknown task -> :class:`BadInput`."""
    for record in newest_first(kit.store, KIND):
        if record.get("task_id") == task_id:
            return record
    raise BadInput(f"no evaluation recorded for task {task_id!r} (record one: pmos score record)")


def latest_for_run(kit: Kit, run_id: str) -> dict[str, Any] | None:
    for record in newest_first(kit.store, KIND):
        if record.get("run_id") == run_id:
            return record
    return None
