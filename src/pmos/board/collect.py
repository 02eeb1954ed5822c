"""Everything the board shows, read from the kit through the library's own readers.

Nothing here computes a statistic. The numbers come from
:func:`~pmos.calibration.metrics.compute_metrics` (with per-period rows when
this pmos offers ``by=``), :func:`~pmos.calibration.queue.compute_queue`,
:func:`~pmos.calibration.metrics.scored_pairs` (when this pmos has it), the
exemplar log (:func:`~pmos.gate.exemplars.read_log`) and the newest ledger
records (:func:`~pmos.store.read.newest_first`). What this module adds is the
scope (the same filters for every section that can take them, and a plain
statement where a filter cannot apply), the limits that keep the page small
on a large kit, and the ledger checkpoint the page was built from.

On a large kit the queue and the score pairs are each read in a forked child
process while this one computes the metrics (which forks a reader of its own):
the three readers are independent, and the machine's cores are what makes the
board cost about one metrics run instead of three.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pmos._util.forked import ForkedCall
from pmos.board.scores import ScoreBins, score_bins
from pmos.errors import BadInput, PmosError
from pmos.gate.rubric import load_rubric
from pmos.gate.signing import allowed_signers_path
from pmos.kit import Kit
from pmos.store.digest import record_digest
from pmos.store.read import newest_first, stored_bytes
from pmos.timestamps import parse_instant, seconds_rfc3339

#: How many records each list shows by default (latest verdicts, each queue, overrides).
DEFAULT_LIMIT = 50
MAX_LIMIT = 5000
#: The ledgers the board reads; their newest records are its checkpoint.
CHECKPOINT_KINDS = ("runs", "evals", "acceptances")
#: An eval ledger at least this large has the queue and score pairs read in
#: child processes; below it a fork costs more than it saves.
PARALLEL_MIN_BYTES = 16 << 20
PERIOD_UNITS = ("week", "month")


@dataclass(frozen=True)
class BoardOptions:
    """The scope and size of a board; every field is checked by :meth:`checked`."""

    initiative: str | None = None
    model: str | None = None
    since: datetime | None = None
    #: Period of the over-time chart: "week", "month", or a whole number of runs.
    by: str | int = "week"
    limit: int = DEFAULT_LIMIT

    def checked(self) -> BoardOptions:
        if isinstance(self.limit, bool) or not isinstance(self.limit, int):
            raise BadInput(f"limit: must be a whole number; got {self.limit!r}")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise BadInput(f"limit: must be from 1 to {MAX_LIMIT:,}; got {self.limit}")
        parse_by(self.by)
        return self

    @property
    def period_unit(self) -> str:
        return self.by if isinstance(self.by, str) else f"{self.by} runs"


def parse_by(value: str | int) -> str | int:
    """``week``, ``month`` or a positive whole number of runs (as text or int)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value >= 1:
            return value
    elif isinstance(value, str):
        text = value.strip().lower()
        if text in PERIOD_UNITS:
            return text
        if text.isdecimal() and int(text) >= 1:
            return int(text)
    raise BadInput(
        f"by: {value!r} is not a period; use 'week', 'month' or a whole number of runs such as 50"
    )


@dataclass
class QueuePart:
    """One debt list as the board shows it: the oldest ``limit`` entries and the total."""

    total: int
    shown: list[dict[str, Any]]


@dataclass(frozen=True)
class Waiting:
    """One run that waits for the PM's label, in the order the PM should take them.

    ``reason`` says why the run is suggested at its place (a labelling plan's
    word); None when the order is the acceptance queue's own (oldest first).
    The board takes any list of these, so a plan that ranks runs can replace
    the queue's order without the page changing.
    """

    run_id: str
    initiative_id: str = ""
    age: str = ""
    verdict: str = ""
    registered: bool = True
    reason: str | None = None


def waiting_for_pm(
    acceptance: QueuePart, order: Sequence[tuple[str, str | None]] | None = None
) -> list[Waiting]:
    """The runs the PM owes a label: ``order`` (run ids, each with an optional
    reason) when given, else the acceptance queue's order. A run ``order`` names
    that the queue does not list is shown with what is known of it: its id."""
    queued = {d["run_id"]: d for d in acceptance.shown}

    def entry(run_id: str, reason: str | None) -> Waiting:
        d = queued.get(run_id, {})
        return Waiting(
            run_id=run_id,
            initiative_id=str(d.get("initiative_id") or ""),
            age=str(d.get("age") or ""),
            verdict=str(d.get("verdict") or ""),
            registered=bool(d.get("registered", True)),
            reason=reason,
        )

    if order is None:
        return [entry(run_id, None) for run_id in queued]
    return [entry(run_id, reason) for run_id, reason in order]


def plan_order(kit: Kit, limit: int) -> list[tuple[str, str | None]] | None:
    """The labelling plan's suggestion (``pmos label plan``) as the order of what
    waits for the PM, each run with why it is there; None when the kit has no plan
    (``calibration.plan_pass_side_rate`` 1), and the acceptance queue's order stands."""
    if kit.config.plan_pass_side_rate >= 1.0:
        return None
    # Deferred: the plan reads the queue, which imports sshsig and cryptography (about 50 ms).
    from pmos.calibration.plan import suggest

    order: list[tuple[str, str | None]] = []
    for proposal in suggest(kit, limit=limit)["proposals"]:
        weight = proposal["plan_weight"]
        if proposal["gate_side"] == "fail":
            reason = "the gate failed it: the plan labels every FAIL (weight 1)"
        else:
            reason = (
                f"the plan's sample of the gate's passes (weight {weight:g}); label it with --plan"
            )
        order.append((proposal["run_id"], reason))
    return order


@dataclass
class BoardData:
    """What one board shows; built by :func:`collect`, rendered by :mod:`pmos.board.page`."""

    kit_root: str
    generated_at: str
    options: BoardOptions
    metrics: dict[str, Any]
    #: Does this pmos compute per-period metrics (``compute_metrics(by=...)``)?
    periods_supported: bool
    #: Score bins from ``scored_pairs``; None when this pmos has no ``scored_pairs``.
    scores: ScoreBins | None
    rubric_threshold: float | None
    rubric_note: str | None
    goodhart_alarm: float | None
    queue_now: str
    verification: QueuePart
    acceptance: QueuePart
    latest: list[dict[str, Any]]
    overrides: list[dict[str, Any]]
    checkpoint: list[dict[str, Any]]
    #: True when a ledger gained records while the board was being read.
    moved: bool = False
    notes: list[str] = field(default_factory=list)
    #: What waits for the PM, in the order to take it (:func:`waiting_for_pm`).
    waiting: list[Waiting] = field(default_factory=list)
    #: Each listed run's latest PM label (``label``, ``by``, ``signed``, ``blind``).
    labels: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Each listed run's builder model from its run record (a short verdict names none).
    builders: dict[str, str] = field(default_factory=dict)


def _stamp(moment: datetime) -> str:
    return seconds_rfc3339(moment)


def checkpoint(kit: Kit) -> list[dict[str, Any]]:
    """The newest record of each ledger the board reads, by id, time and content digest.

    The content digest (:mod:`pmos.store.digest`) names a record wherever it is
    stored, so "built from evals up to ev-123 (digest 3f2a...)" can be checked
    against the ledgers later with ``pmos ledger show``.
    """
    out = []
    for kind in CHECKPOINT_KINDS:
        newest = next(iter(newest_first(kit.store, kind, plain=True)), None)
        if newest is None:
            out.append({"kind": kind, "record_id": None, "recorded_at": None, "digest": None})
        else:
            out.append(
                {
                    "kind": kind,
                    "record_id": newest.get("record_id"),
                    "recorded_at": newest.get("recorded_at"),
                    "digest": record_digest(newest),
                }
            )
    return out


def _metrics(kit: Kit, options: BoardOptions) -> tuple[dict[str, Any], bool]:
    # Deferred: pmos.calibration.metrics imports numpy (about 0.2 s).
    from pmos.calibration import metrics

    kwargs: dict[str, Any] = {
        "initiative": options.initiative,
        "model": options.model,
        "since": options.since,
    }
    periods = "by" in inspect.signature(metrics.compute_metrics).parameters
    if periods:
        kwargs["by"] = options.by
    return metrics.compute_metrics(kit, **kwargs), periods


def scored_pairs_available() -> bool:
    # Deferred: pmos.calibration.metrics imports numpy (about 0.2 s).
    from pmos.calibration import metrics

    return hasattr(metrics, "scored_pairs")


def _score_part(kit: Kit, options: BoardOptions) -> ScoreBins:
    # Deferred: pmos.calibration.metrics imports numpy (about 0.2 s).
    from pmos.calibration import metrics

    pairs = metrics.scored_pairs(
        kit, initiative=options.initiative, model=options.model, since=options.since
    )
    return score_bins(pairs)


def _queue_part(kit: Kit, options: BoardOptions, now: datetime) -> tuple[str, QueuePart, QueuePart]:
    # Deferred: pmos.calibration.queue imports sshsig and cryptography (about 50 ms).
    from pmos.calibration.queue import compute_queue

    queue = compute_queue(kit, now)

    def part(items: list[dict[str, Any]]) -> QueuePart:
        if options.initiative is not None:
            items = [i for i in items if i["initiative_id"] == options.initiative]
        return QueuePart(len(items), items[: options.limit])

    stamp = queue.as_dict()["now"]
    return stamp, part(queue.verification_debt), part(queue.acceptance_debt)


def latest_verdicts(kit: Kit, options: BoardOptions) -> list[dict[str, Any]]:
    """The newest ``limit`` verdict records in scope, newest first, read from the end."""
    found: list[dict[str, Any]] = []
    for record in newest_first(kit.store, "evals"):
        if options.since is not None and parse_instant(record["recorded_at"]) < options.since:
            break  # records are appended in time order: everything further back is older
        if options.initiative is not None and record.get("initiative_id") != options.initiative:
            continue
        if options.model is not None and record.get("evaluator_model") != options.model:
            continue
        found.append(record)
        if len(found) >= options.limit:
            break
    return found


def latest_labels(
    kit: Kit, runs: Collection[str], left_out: Collection[str] = ()
) -> dict[str, dict[str, Any]]:
    """The newest PM label of each run in ``runs``: its label, who gave it, whether
    it carries a signature, whether it was given blind, and whether the metrics
    left it out (its ``record_id`` in ``left_out``: the metrics' excluded labels).
    Whether a label counts (a signature that verifies, one the policy requires, a
    verdict it names) is the metrics' call, never a field the record carries: a
    label they left out is never shown as signed, and is listed with its reason
    under excluded records."""
    found: dict[str, dict[str, Any]] = {}
    wanted = set(runs)
    if not wanted:
        return found
    try:
        checked = allowed_signers_path(kit.config, kit.root) is not None
    except BadInput:
        checked = False  # a misconfigured file: every signed label is left out, and says so
    for record in newest_first(kit.store, "acceptances"):
        run = record.get("run_id")
        if run in wanted and run not in found:
            found[run] = {
                "label": record.get("label", ""),
                "by": record.get("by", ""),
                # A signature counts as one only where the kit checks signatures.
                "signed": bool(record.get("signature")) and checked,
                "unchecked": bool(record.get("signature")) and not checked,
                "blind": bool(record.get("blind")),
                "left_out": record.get("record_id") in left_out,
            }
            if len(found) == len(wanted):
                break
    return found


def run_builders(kit: Kit, runs: Collection[str]) -> dict[str, str]:
    """The builder model each run in ``runs`` registered with (its newest run record)."""
    found: dict[str, str] = {}
    wanted = set(runs)
    if not wanted:
        return found
    for record in newest_first(kit.store, "runs"):
        run = record.get("run_id")
        if run in wanted and run not in found and record.get("builder_model"):
            found[run] = str(record["builder_model"])
            if len(found) == len(wanted):
                break
    return found


def recent_overrides(kit: Kit, options: BoardOptions) -> list[dict[str, Any]]:
    """The newest override entries of the exemplar log, with their lessons."""
    # Deferred: pmos.gate.exemplars imports sshsig and cryptography (about 50 ms).
    from pmos.gate.exemplars import read_log

    entries = [e for e in read_log(kit) if e.get("override")]
    if options.model is not None:
        entries = [e for e in entries if e.get("evaluator_model") == options.model]
    if options.since is not None:
        entries = [e for e in entries if parse_instant(e["recorded_at"]) >= options.since]
    entries.sort(key=lambda e: (parse_instant(e["recorded_at"]), e["case_id"]), reverse=True)
    return entries[: options.limit]


def _rubric_threshold(kit: Kit, report: dict[str, Any]) -> tuple[float | None, str | None]:
    if isinstance(report.get("rubric_threshold"), int | float):
        return float(report["rubric_threshold"]), None
    try:
        return load_rubric(kit.root, kit.config.default_rubric).threshold, None
    except BadInput as exc:
        return None, f"the default rubric could not be read, so no threshold is drawn: {exc}"


def _large(kit: Kit) -> bool:
    if not hasattr(os, "fork"):
        return False
    try:
        return stored_bytes(kit.store, "evals") >= PARALLEL_MIN_BYTES
    except (OSError, PmosError):
        return False


class _Inline:
    """A call run here, when forking does not pay; same interface as ForkedCall."""

    def __init__(self, function: Callable[..., Any], *args: Any) -> None:
        self._function, self._args = function, args

    def result(self) -> Any:
        return self._function(*self._args)

    def cancel(self) -> None:
        pass


def collect(
    kit: Kit,
    options: BoardOptions,
    now: datetime | None = None,
    order: Sequence[tuple[str, str | None]] | None = None,
) -> BoardData:
    """Read everything the board shows (see the module docstring for where each part comes from).

    ``order``: the runs waiting for the PM's label as ``(run_id, reason)`` in the
    order to take them; when None, the kit's labelling plan's (:func:`plan_order`),
    else the acceptance queue's order (oldest first, no reason).
    """
    options = options.checked()
    now = now or datetime.now(UTC)
    before = checkpoint(kit)
    start: Callable[..., Any] = _Inline
    if _large(kit):
        start = ForkedCall
    calls = [start(_queue_part, kit, options, now)]
    with_scores = scored_pairs_available()
    if with_scores:
        calls.append(start(_score_part, kit, options))
    try:
        report, periods = _metrics(kit, options)
        queue_now, verification, acceptance = calls[0].result()
        scores = calls[1].result() if with_scores else None
    finally:
        for call in calls:
            call.cancel()
    latest = latest_verdicts(kit, options)
    listed = [str(v.get("run_id")) for v in latest]
    excluded_labels = {
        str(e.get("record_id"))
        for e in report.get("excluded_records") or []
        if e.get("kind") == "acceptances"
    }
    labels = latest_labels(kit, listed, excluded_labels)
    builders = run_builders(kit, listed)
    overrides = recent_overrides(kit, options)
    rubric_threshold, rubric_note = _rubric_threshold(kit, report)
    after = checkpoint(kit)
    notes = [rubric_note] if rubric_note else []
    return BoardData(
        kit_root=str(kit.root),
        generated_at=_stamp(now),
        options=options,
        metrics=report,
        periods_supported=periods,
        scores=scores,
        rubric_threshold=rubric_threshold,
        rubric_note=rubric_note,
        goodhart_alarm=kit.config.goodhart_alarm,
        queue_now=queue_now,
        verification=verification,
        acceptance=acceptance,
        latest=latest,
        overrides=overrides,
        checkpoint=after,
        moved=before != after,
        notes=notes,
        waiting=waiting_for_pm(
            acceptance, order if order is not None else plan_order(kit, options.limit)
        ),
        labels=labels,
        builders=builders,
    )
