"""The writers' rules, applied again to a record already in a ledger.

A record's digest proves that its line was sealed by the recipe, not that a
pmos writer accepted it: anyone can seal a record by following the recipe. So a
stored record is trusted only after the rules its writer enforces are applied
to it again, every rule that can be checked from the
record itself or against the kit:

=============  ==============================================================
kind           rules
=============  ==============================================================
every kind     its schema; not dated after the time of checking
               (:func:`pmos.gate.clock.future_dated`)
evals          rubric (the path resolves to a valid rubric in the kit);
               judged verdicts: dimensions, weights and axes match the rubric,
               the score is the weighted sum, ``verified: false`` caps a
               dimension at 0.5, spec and standards axes as derived, the
               combine rule, evidence admitting no check has
               ``verified: false`` (schema_version 2), an unverified criterion
               is a fail, a verified item cites an evidence pointer of a
               documented form (schema_version 2;
               :mod:`pmos.gate.evidence_pointers`), the criteria grade exactly
               the registered contract (full form; short form from
               schema_version 2), and the run's
               initiative and builder match its registration
runs           contract criterion ids are unique; one registration per run id
acceptances    the label's signature, its signer's validity window checked at
               the time of checking (:mod:`pmos.gate.signing`); the verdict it
               names (``gate_record_id``) exists for the same run and says
               ``gate_verdict``
=============  ==============================================================

Not re-checkable: a verdict's ``pass_fraction`` and ``flags`` (what the ledger
and the config said when it was written), and a task evaluation's
deterministic scores (computed from records that have grown since), and a
verdict's agreement with the run's assessments
(:func:`pmos.gate.rules.check_against_assessments`: what the assessments ledger
held when it was written). A record of
schema_version 1 is checked with the rules of version 1: evidence ``unverified``
(exactly) caps a dimension, no admission check, no contract for the short form.

The readers and ``pmos ledger verify`` call :func:`stored_record_problems`
with one :class:`Context` per pass, so each ledger a rule needs is read once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from itertools import islice
from typing import Any

import msgspec
import orjson

from pmos.errors import BadInput, Violation
from pmos.gate import rules as verdict_rules
from pmos.gate.approvals import approval_problems
from pmos.gate.clock import checking_time, future_dated
from pmos.gate.evidence_pointers import BY_FORM, evidence_problems
from pmos.gate.rubric import Rubric, load_rubric
from pmos.gate.run_ids import duplicate_registration
from pmos.gate.signing import LabelSignatures, SwitchCheck, switch_check, verdict_sha256
from pmos.gate.versions import NEWEST, CommittedAtHead, Order
from pmos.gate.vocabulary import SKIPPED
from pmos.kit import Kit
from pmos.store.append import schema_problems
from pmos.store.read import batches, newest_first, records, stored_lines
from pmos.store.rows import row_type

#: How many of the newest verdicts a look-up reads one by one before it indexes
#: the whole eval ledger: enough for the labels of a busy day, far fewer than a
#: large ledger holds.
RECENT_VERDICTS = 2_000


class Context:
    """What rules need from the kit beyond one record, read once and kept.

    ``runs`` (run_id -> its first registration) is read in full on first use.
    Verdicts (record_id -> (run_id, verdict)) are read newest first, and the
    whole eval ledger is indexed only when a look-up reaches further back than
    :data:`RECENT_VERDICTS`: a label names a recent verdict, so screening the
    loose labels of a large kit does not read its whole eval ledger. Rubrics are
    loaded once per path, and the paths read are kept (:attr:`rubrics_read`),
    for the basis a pack records. Make one per pass; a kit that grows during
    the pass is read as it was when each part was first needed. ``now`` is the
    pass's time of checking (:mod:`pmos.gate.clock`), read once.
    """

    def __init__(
        self,
        kit: Kit,
        *,
        now: datetime | None = None,
        at_switch: SwitchCheck | None = None,
        order: Order | None = None,
    ) -> None:
        self.kit = kit
        self.now = checking_time() if now is None else now
        #: Whether an unsigned label predates signing's switch (None: the kit's git
        #: history says, :class:`pmos.gate.signing.SwitchCommit`).
        self.at_switch = at_switch
        #: Whether a record of an older version came after a newer one (None: the
        #: kit's git history says, :class:`pmos.gate.versions.CommittedAtHead`).
        self.order = order or CommittedAtHead(
            kit.store, lambda kind: newest_first(kit.store, kind, plain=True)
        )
        self._runs: dict[str, dict[str, Any]] | None = None
        self._verdicts: dict[str, tuple[str, str]] = {}
        self._verdict_stream: Iterator[dict[str, Any]] | None = None
        self._verdicts_complete = False
        self._verdict_passes = 0  # passes over the eval ledger made for find_verdicts
        self._absent: set[str] = set()  # looked up by find_verdicts, not in the kit
        #: Answers to find_verdicts from elsewhere (see answer_verdicts), and the
        #: ids asked of it that are not yet answered.
        self._answers: Callable[[], tuple[dict[str, tuple[str, str]], set[str]]] | None = None
        self._asked: set[str] = set()
        self._rubrics: dict[str, Rubric | BadInput] = {}
        self._signatures: LabelSignatures | None = None
        #: verdict_digest's answers (None: no such verdict), the ids the labels being
        #: checked name (see want_digests), and the newest verdicts, looked back at once.
        self._digests: dict[str, str | None] = {}
        self._digests_wanted: set[str] = set()
        self._recent: dict[str, dict[str, Any]] | None = None
        self._recent_whole = False  # the look-back read the whole eval ledger
        self.digest_passes = 0  # forward passes over the eval ledger made for verdict_digest
        self._verdicts_asked = False  # a check asked about a verdict (ledgers_read)

    @property
    def signatures(self) -> LabelSignatures:
        """The kit's signature rule, its settings and allowed signers read once per pass."""
        if self._signatures is None:
            self._signatures = LabelSignatures(
                self.kit.config,
                self.kit.root,
                verdicts=self.verdict_digest,
                now=self.now,
                at_switch=self.at_switch or switch_check(self.kit.config, self.kit.store),
            )
        return self._signatures

    @property
    def rubrics_read(self) -> list[str]:
        return list(self._rubrics)

    @property
    def ledgers_read(self) -> list[str]:
        """The ledger kinds whose records the checks made so far read: ``runs`` for a
        run's registration, ``evals`` for the verdict a label names, and each kind
        whose newest version the version order read (:attr:`order`)."""
        kinds = set(getattr(self.order, "kinds_read", ()))
        if self._runs is not None:
            kinds.add("runs")
        if self._verdicts_asked:
            kinds.add("evals")
        return sorted(kinds)

    def run(self, run_id: str) -> dict[str, Any] | None:
        if self._runs is None:
            self._runs = {}
            for record in records(self.kit.store, "runs", plain=True):
                run = record.get("run_id")
                if isinstance(run, str):
                    self._runs.setdefault(run, record)
        return self._runs.get(run_id)

    def answer_verdicts(
        self, answers: Callable[[], tuple[dict[str, tuple[str, str]], set[str]]]
    ) -> None:
        """Let ``answers()`` answer :meth:`find_verdicts` instead of a pass over the
        eval ledger, when first needed: a process already reading the whole
        ledger collects the verdicts asked for on its way (``pmos metrics``).

        It returns (record_id -> (run_id, verdict) for those it found, the ids
        it vouches for: found, or surely not in the ledger). Any other id asked
        is looked up here, in one pass.
        """
        self._answers = answers

    def find_verdicts(self, record_ids: set[str]) -> None:
        """Look up many verdicts in one pass over the eval ledger (the verdicts the
        loose labels name), keeping only those: a later :meth:`verdict` of any of
        them is answered without reading the ledger again."""
        self._verdicts_asked = True
        wanted = record_ids - self._verdicts.keys() - self._absent
        if not wanted or self._verdicts_complete:
            return
        if self._answers is not None:
            self._asked |= wanted  # answered when first needed
            return
        self._look_up(wanted)

    def _look_up(self, wanted: set[str]) -> None:
        """One pass over the eval ledger for ``wanted``. The first pass keeps only
        those (the loose labels' verdicts: a large ledger's index costs memory);
        a second means ids are asked batch by batch (the packs of a cold screening
        cache), so the whole ledger is indexed once instead of once per batch."""
        self._verdict_passes += 1
        if self._verdict_passes > 1:
            self._index_verdicts(None)
            self._verdicts_complete = True
            return
        self._index_verdicts(wanted)
        self._absent |= wanted - self._verdicts.keys()

    def _take_answers(self) -> None:
        answers, self._answers = self._answers, None
        asked, self._asked = self._asked, set()
        found, vouched = answers()  # type: ignore[misc]
        # Everything vouched for is kept, not only what was asked so far: the
        # answers are taken once, and later batches of labels ask for the rest.
        for record_id in vouched:
            if record_id in found:
                self._verdicts.setdefault(record_id, found[record_id])
            else:
                self._absent.add(record_id)
        rest = asked - vouched - self._verdicts.keys()
        if rest and not self._verdicts_complete:
            self._look_up(rest)

    def verdict(self, record_id: str) -> tuple[str, str] | None:
        self._verdicts_asked = True
        if self._asked:
            self._take_answers()
        found = self._verdicts.get(record_id)
        if found is not None or self._verdicts_complete or record_id in self._absent:
            return found
        if self._verdict_stream is None:
            self._verdict_stream = newest_first(self.kit.store, "evals", plain=True)
        # A label names a recent verdict: look back a little from the end first.
        for record in islice(self._verdict_stream, RECENT_VERDICTS):
            rid, run, verdict = (record.get(k) for k in ("record_id", "run_id", "verdict"))
            if isinstance(rid, str):
                self._verdicts.setdefault(rid, (run, verdict))  # type: ignore[arg-type]
                if rid == record_id:
                    return self._verdicts[rid]
        # An older one: index the whole ledger once.
        self._index_verdicts(None)
        self._verdicts_complete = True
        return self._verdicts.get(record_id)

    def _index_verdicts(self, wanted: set[str] | None) -> None:
        """One pass of the fast forward reader over the eval ledger, keeping the
        verdicts in ``wanted`` (every one when None); the first copy of an id wins."""
        row = row_type("evals", ("record_id", "run_id", "verdict"))
        for batch in batches(self.kit.store, "evals", row=row):
            for v in batch:
                if wanted is None or v.record_id in wanted:
                    self._verdicts.setdefault(v.record_id, (v.run_id, v.verdict))

    def want_digests(self, record_ids: set[str]) -> None:
        """The verdicts the batch of labels about to be checked names (their
        ``gate_record_id``): a pass over the eval ledger that :meth:`verdict_digest`
        has to make looks up all of them at once, not one pass per label. The
        previous batch's, and their digests, are forgotten (it has been checked),
        so a cold read of many batches holds one batch's, not the ledger's."""
        self._digests = {k: v for k, v in self._digests.items() if k in record_ids}
        self._digests_wanted = record_ids - self._digests.keys()

    def verdict_digest(self, record_id: str) -> str | None:
        """The :func:`~pmos.gate.signing.verdict_sha256` of the verdict stored as
        ``record_id`` (None: no such verdict), what a signed label binds.

        Only the verdicts labels name are digested. The newest
        :data:`RECENT_VERDICTS` verdicts are read first, once (a label names a
        recent verdict); an id not among them is looked up, with every id
        :meth:`want_digests` named and not yet answered, in one forward pass that
        keeps only those records. The first copy of an id wins, as in
        :meth:`verdict`."""
        self._verdicts_asked = True
        if record_id in self._digests:
            return self._digests[record_id]
        recent = self._look_back()
        wanted = (self._digests_wanted | {record_id}) - self._digests.keys()
        self._digests_wanted = set()
        for rid in wanted & recent.keys():
            self._digests[rid] = verdict_sha256(recent[rid])
        rest = wanted - recent.keys()
        if rest and not self._recent_whole:
            self.digest_passes += 1
            for rid, record in _verdicts_named(self.kit, rest):
                self._digests[rid] = verdict_sha256(record)
        for rid in rest - self._digests.keys():
            self._digests[rid] = None
        return self._digests[record_id]

    def _look_back(self) -> dict[str, dict[str, Any]]:
        """The newest :data:`RECENT_VERDICTS` verdicts by id, read once (newest first,
        so the first copy met of an id is kept, as :meth:`verdict` keeps it)."""
        if self._recent is None:
            recent: dict[str, dict[str, Any]] = {}
            read = 0
            for record in islice(
                newest_first(self.kit.store, "evals", plain=True), RECENT_VERDICTS
            ):
                read += 1
                rid = record.get("record_id")
                if isinstance(rid, str):
                    recent.setdefault(rid, record)
            self._recent, self._recent_whole = recent, read < RECENT_VERDICTS
        return self._recent

    def rubric(self, path: str) -> Rubric:
        found = self._rubrics.get(path)
        if found is None:
            try:
                found = load_rubric(self.kit.root, path)
            except BadInput as exc:
                found = exc
            self._rubrics[path] = found
        if isinstance(found, BadInput):
            raise found
        return found


def _verdicts_named(kit: Kit, wanted: set[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(record_id, record)`` of the verdicts in ``wanted``, in one forward pass over
    the eval ledger as every forward reader reads it, the first copy of an id only.
    Each stored line's id is read by a decoder of that one field; only the wanted
    records are parsed whole."""
    ids = msgspec.json.Decoder(row_type("evals", ("record_id",)))
    left = set(wanted)
    for batch in stored_lines(kit.store, "evals"):
        for _digest, body in batch:
            try:
                rid = getattr(ids.decode(body), "record_id", None)
            except (msgspec.DecodeError, msgspec.ValidationError):
                rid = orjson.loads(body).get("record_id")
            if isinstance(rid, str) and rid in left:
                left.discard(rid)
                yield rid, orjson.loads(body)
                if not left:
                    return


def stored_record_problems(
    kit: Kit, kind: str, record: Any, *, context: Context | None = None
) -> list[Violation]:
    """Every writer rule ``record``, stored in the ``kind`` ledger, breaks (empty: none).

    ``record`` is as a reader decoded it from its stored line, by orjson or
    msgspec (every reader does): it holds no NaN or infinity, which they refuse.
    Never raises for a bad record; a problem of the kit itself (an unreadable
    ledger) propagates as the readers' errors do.
    """
    found = schema_problems(kind, record, parsed=True)
    if found or not isinstance(record, dict):
        return found
    context = context or Context(kit)
    future = future_dated(record, context.now)
    if future is not None:
        found.append(future)
    check = _CHECKS.get(kind)
    if check:
        found += check(context, record)
    if record.get("schema_version", 1) < NEWEST.get(kind, 1):
        later = context.order.problem(kind, record)
        if later is not None:
            found.append(later)
    return found


# ---------------------------------------------------------------- per kind


def _verdict_problems(context: Context, record: dict[str, Any]) -> list[Violation]:
    version = record.get("schema_version", 1)
    problems: list[Violation] = []
    if version >= 2:
        problems += verdict_rules.check_verified(record)
        problems += evidence_problems(record, BY_FORM)
    rubric = None
    path = record.get("rubric_path")
    if isinstance(path, str):
        try:
            rubric = context.rubric(path)
        except BadInput as exc:
            problems.append(Violation("rubric-path", "rubric_path", str(exc)))
        else:
            if rubric.path != path:
                problems.append(
                    Violation(
                        "rubric-path",
                        "rubric_path",
                        f"{path!r} is not how the writer names it ({rubric.path!r})",
                    )
                )
    judged = record["verdict"] != SKIPPED
    if judged and rubric is not None:
        if record["form"] == "full":
            problems += verdict_rules.check_full(record, rubric)
        else:
            problems += verdict_rules.check_short(record, rubric)
    run = context.run(record["run_id"])
    if version < 2 and record["form"] == "short":
        # Version 1 short verdicts graded no criteria: check the run, not the contract.
        problems += verdict_rules.check_against_run({**record, "verdict": SKIPPED}, run)
    else:
        problems += verdict_rules.check_against_run(record, run)
    return problems


def _run_problems(context: Context, record: dict[str, Any]) -> list[Violation]:
    problems: list[Violation] = []
    if "contract" in record:
        problems += verdict_rules.check_contract_ids(record["contract"])
    duplicate = duplicate_registration(context.run(record["run_id"]), record)
    if duplicate is not None:
        problems.append(duplicate)
    return problems


def _label_problems(context: Context, record: dict[str, Any]) -> list[Violation]:
    problems: list[Violation] = []
    problem = context.signatures.problem(record)
    if problem is not None:
        field = "signature" if "signature" in record else "by"
        problems.append(Violation("label-signature", field, problem))
    named = record.get("gate_record_id")
    if named is not None:
        found = context.verdict(named)
        if found is None:
            problems.append(
                Violation("gate-record", "gate_record_id", f"no verdict {named!r} in the kit")
            )
        elif found[0] != record["run_id"]:
            problems.append(
                Violation(
                    "gate-record",
                    "gate_record_id",
                    f"verdict {named!r} judges run {found[0]!r}, not {record['run_id']!r}",
                )
            )
        elif found[1] != record.get("gate_verdict"):
            problems.append(
                Violation(
                    "gate-record",
                    "gate_verdict",
                    f"{record.get('gate_verdict')!r}, but verdict {named!r} says {found[1]!r}",
                )
            )
    elif record.get("gate_verdict") is not None:
        problems.append(
            Violation("gate-record", "gate_verdict", "names a verdict but no gate_record_id")
        )
    return problems


def _approval_problems(context: Context, record: dict[str, Any]) -> list[Violation]:
    return approval_problems(context.kit, record)


#: Each kind's writer rules that a stored record can be checked against.
_CHECKS = {
    "evals": _verdict_problems,
    "runs": _run_problems,
    "acceptances": _label_problems,
    "policy": _approval_problems,
}
