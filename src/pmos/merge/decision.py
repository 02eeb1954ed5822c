"""Whether a change may merge: ``pmos gate --base REV [--head REV]``.

The decision is made under the base revision's policy, from both revisions'
objects, never from the working tree:

1. **Policy from the base.** The base's kit (its pmos.yaml, allowed signers,
   rubrics, known-bad cases, exemplar log and override anchors) is written
   from git objects into a temporary folder; head's ledger records, found
   through the base's ledger paths, are written beside them. Every reader,
   screen and signature check then runs under the base's rules.
2. **Policy changes.** A trust file added, changed or removed in base..head
   fails the change unless a policy approval added by the change names each
   such file with its content at head and is signed by a key the base's
   allowed-signers file allows for its ``by`` (:mod:`pmos.gate.approvals`).
3. **Integrity.** Every record present at base is present and unchanged at
   head; every record added is checked in full (its line, its schema, every
   writer rule, its signature) under the base's policy; an added record may
   not reuse a record id the base holds.
4. **Each run of the change** (a run with any record added) must be
   registered (with its contract when ``gate.require_contract``) and its
   latest judged verdict must be on the pass side; while the review gate is
   *advisory* for the verdict's evaluator model (or with
   ``gate.require_label``) it also needs a PM ``pass`` label on that verdict.
   A FAIL, SKIPPED or missing verdict, or a PM ``fail`` label, fails it.
   *Calibrated* is computed by :mod:`pmos.calibration` under the base's policy
   from the labels present at base, seeded labels left out.
5. **Known-bad runs** are only the seeded ones: a run named ``known-bad-CASE``
   whose case folder is present at base and whose records match the case.
   Anything else so named is an ordinary run.

A kit absent at base is a first adoption: the change may merge, and the
report says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from pmos._util.forked import ForkedCall
from pmos._util.git import Repository
from pmos.errors import BadInput, PmosError
from pmos.gate.approvals import signature_problem
from pmos.gate.artifact import local_repository
from pmos.gate.clock import label_before_verdict
from pmos.gate.evidence_pointers import exemplar_problems
from pmos.gate.known_bad import load_case
from pmos.gate.latest import instant_key
from pmos.gate.recheck import Context, stored_record_problems
from pmos.gate.rules import check_against_assessments
from pmos.gate.seeded import INITIATIVE, LABELLER, RUN_PREFIX
from pmos.gate.stored_evidence import known_cases, unresolved_pointers
from pmos.gate.versions import AddedByChange, newest_version
from pmos.gate.vocabulary import PASS_SIDE, SKIPPED
from pmos.kit import Kit
from pmos.kit.config import CONFIG_NAME
from pmos.merge import calibration_memo
from pmos.merge.kitfiles import (
    TRUST_SETTINGS,
    find_kit,
    join,
    ledger_folders,
    trust_entries,
    write_tree,
)
from pmos.store.append import Draft, append, schema_problems
from pmos.store.layout import MARKER, write_marker
from pmos.store.registry import LEDGER_KINDS
from pmos.store.revision import BlobCache, Ledgers, StoredRecord, changes, read_ledgers
from pmos.store.rows import row_type
from pmos.timestamps import rfc3339

#: The remote's default branch, whose merge base with head is the default --base.
DEFAULT_REMOTE_HEAD = "refs/remotes/origin/HEAD"
MAY_MERGE, MAY_NOT_MERGE = "may-merge", "may-not-merge"
CALIBRATED, ADVISORY = "calibrated", "advisory"


@dataclass
class RunDecision:
    """One run of the change and why it may or may not merge."""

    run_id: str
    decision: str = "pass"
    seeded: bool = False
    mode: str = ADVISORY
    evaluator_model: str | None = None
    verdict: str | None = None
    verdict_record_id: str | None = None
    label: str | None = None
    label_record_id: str | None = None
    reasons: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "decision": self.decision,
            "seeded": self.seeded,
            "mode": self.mode,
            "evaluator_model": self.evaluator_model,
            "verdict": self.verdict,
            "verdict_record_id": self.verdict_record_id,
            "label": self.label,
            "label_record_id": self.label_record_id,
            "reasons": self.reasons,
        }


@dataclass
class Report:
    """The gate's answer (``as_dict`` is ``pmos gate --json``)."""

    base: str
    base_commit: str
    head: str
    head_commit: str
    checked_at: str
    kit_base: str | None = None
    kit_head: str | None = None
    first_adoption: bool = False
    runs: list[RunDecision] = field(default_factory=list)
    policy_changes: list[dict[str, Any]] = field(default_factory=list)
    policy_approved: bool | None = None
    approvals: list[dict[str, Any]] = field(default_factory=list)
    integrity: list[dict[str, Any]] = field(default_factory=list)
    calibration: dict[str, dict[str, Any]] = field(default_factory=dict)
    seeded_labels_excluded: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def reasons(self) -> list[str]:
        """Every reason the change may not merge (none: it may)."""
        out: list[str] = []
        if self.policy_changes and not self.policy_approved:
            paths = ", ".join(c["path"] for c in self.policy_changes)
            out.append(
                f"policy change not approved: {paths} changed in base..head and no policy "
                "approval added by the change, signed by a key the base's allowed-signers "
                "file allows, states their content at head (pmos policy approve)"
            )
        out += [f"integrity: {f['problem']}" for f in self.integrity]
        for run in self.runs:
            out += [f"run {run.run_id}: {reason}" for reason in run.reasons]
        return out

    @property
    def decision(self) -> str:
        return MAY_NOT_MERGE if self.reasons else MAY_MERGE

    def as_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "reasons": self.reasons,
            "base": {"revision": self.base, "commit": self.base_commit, "kit": self.kit_base},
            "head": {"revision": self.head, "commit": self.head_commit, "kit": self.kit_head},
            "checked_at": self.checked_at,
            "first_adoption": self.first_adoption,
            "runs": [r.as_dict() for r in self.runs],
            "policy_changes": {
                "changed": self.policy_changes,
                "approved": self.policy_approved,
                "approvals": self.approvals,
            },
            "integrity": self.integrity,
            "calibration": {
                "by_model": self.calibration,
                "seeded_labels_excluded": self.seeded_labels_excluded,
            },
            "notes": self.notes,
        }


#: The ledgers the writers' rules read besides the record checked (a verdict its
#: run, a label its verdict): written into the temporary kit.
RULES_READ = ("runs", "evals")


#: Below this many base verdicts and labels, calibration is computed in this process:
#: a fork costs more than it saves.
FORK_MIN_RECORDS = 20_000


def calibration_at_base(base: Ledgers, config: Any) -> tuple[dict[str, dict[str, Any]], int]:
    """Per evaluator model, whether the review gate is calibrated (and why), under
    the base's policy from the records present at base, by the calibration's own
    code (from rows); and how many seeded labels were left out. Seeded labels are
    answer keys, not a PM's judgment: they never count toward the PM's classes.
    The base's records are its history, each checked in full when a change added
    it; they are not checked again here."""
    # numpy and the statistics load in the process that computes this: on a large
    # kit a forked child, while the parent checks the change.
    from pmos.calibration.judged import BLIND_FIELDS, LABEL_FIELDS, VERDICT_FIELDS
    from pmos.calibration.metrics import metrics_from_rows

    verdict_row = row_type("evals", VERDICT_FIELDS)
    # Blind labels and plan weights, as pmos metrics reads them (the decision needs
    # both: calibration.min_blind_labels, and the plan's weighted table).
    label_row = row_type("acceptances", LABEL_FIELDS + BLIND_FIELDS)
    # The calibration readers keep the right answer whatever order rows come in.
    verdicts = base.records.get("evals", {}).values()
    labels = base.records.get("acceptances", {}).values()
    seeded = sum(1 for r in labels if r.by == LABELLER)
    decode_verdict = msgspec.json.Decoder(verdict_row).decode
    decode_label = msgspec.json.Decoder(label_row).decode
    metrics = metrics_from_rows(
        (decode_verdict(r.raw) for r in verdicts),
        (decode_label(r.raw) for r in labels if r.by != LABELLER),
        config,
    )
    by_model = {
        model: {
            "calibrated": bool(entry.get("calibrated")),
            "reason": entry.get("calibration_reason"),
        }
        for model, entry in metrics["by_model"].items()
    }
    return by_model, seeded


#: A RAM-backed folder, where the machine has one.
RAM_FOLDER = "/dev/shm"


def _scratch() -> str | None:
    """Where the temporary kit goes: a RAM-backed folder when there is one (the kit
    is small, thrown away at the end, and the store fsyncs every record it
    appends: on tmpfs that returns at once), else the system's temp folder."""
    return RAM_FOLDER if os.path.isdir(RAM_FOLDER) and os.access(RAM_FOLDER, os.W_OK) else None


def default_base(repo: Repository, head: str) -> str:
    """The merge base of ``head`` with the remote's default branch."""
    if not repo.ref_exists(DEFAULT_REMOTE_HEAD):
        raise BadInput(
            "--base is needed: the remote's default branch (refs/remotes/origin/HEAD) is not "
            "known here; give --base REV (for example --base origin/main), or run "
            "'git remote set-head origin --auto'"
        )
    found = repo.merge_base(DEFAULT_REMOTE_HEAD, head)
    if found is None:
        raise BadInput(
            f"--base is needed: {head} has no merge base with origin's default branch "
            "(a shallow clone? fetch with full history, fetch-depth: 0)"
        )
    return found


def _key(record: dict[str, Any]) -> tuple[str, str]:
    stamp = str(record.get("recorded_at", ""))
    with contextlib.suppress(ValueError, PmosError):
        stamp = instant_key(stamp)
    return stamp, str(record.get("record_id", ""))


def decide(
    start: Path, base: str | None, head: str = "HEAD", *, now: datetime | None = None
) -> Report:
    """Decide whether base..head may merge (see the module docstring)."""
    repo = Repository(start)
    where = repo.relative(start)
    base_revision = base if base is not None else default_base(repo, head)
    base_commit = repo.commit(base_revision, what="--base")
    head_commit = repo.commit(head, what="--head")
    moment = now or datetime.now(UTC)
    report = Report(
        base_revision,
        base_commit,
        head,
        head_commit,
        rfc3339(moment),
    )
    report.kit_base = find_kit(repo, base_commit, where)
    report.kit_head = find_kit(repo, head_commit, where)
    if report.kit_base is None:
        if report.kit_head is None:
            raise BadInput(
                f"no pmos kit (a folder with {CONFIG_NAME}, or pmos/{CONFIG_NAME}) at "
                f"{base_revision} or {head} on the way from {repo.top} to {start}"
            )
        report.first_adoption = True
        report.notes.append(
            f"first adoption: there is no kit at the base {base_revision}, so there is no policy "
            f"to judge by; the kit at {report.kit_head or '.'} is adopted as it is"
        )
        return report
    with tempfile.TemporaryDirectory(prefix="pmos-gate-", dir=_scratch()) as folder:
        _Judge(repo, report, Path(folder), moment).run()
    return report


def _newest_at(base: Ledgers, kind: str) -> int:
    """The newest schema version of ``kind`` the base holds (each record parsed)."""
    return newest_version(r.record for r in base.records.get(kind, {}).values())


def _added_by_the_change(record: dict[str, Any]) -> str | None:
    """A label added by the change was not in the kit at the base's switch commit."""
    return "it is added by this change, after the switch"


class _Judge:
    """One gate run's working state (see :func:`decide`)."""

    def __init__(self, repo: Repository, report: Report, folder: Path, now: datetime) -> None:
        self.repo = repo
        self.report = report
        self.now = now
        self.kit_dir = report.kit_base or ""
        self.base_root = folder / "base"
        self.head_root = folder / "head"
        self.cache = BlobCache(repo)
        #: Approvals added by the change that break a rule, with the first one.
        self.refused_approvals: list[tuple[StoredRecord, str]] = []
        #: The base's records and ledger folders (set by :meth:`run`), and the
        #: calibration cases they hold, read only for a verdict that names one.
        self.base: Ledgers | None = None
        #: Per kind, the records head holds and base does not, and the reverse.
        self.changes: dict[str, tuple[dict[str, StoredRecord], dict[str, StoredRecord]]] = {}
        self.folders: dict[str, str] = {}
        self._cases: set[str] | None = None

    def run(self) -> None:
        report, repo, kit_dir = self.report, self.repo, self.kit_dir
        config_path = join(kit_dir, CONFIG_NAME) if kit_dir else CONFIG_NAME
        config_entries = [
            e for e in repo.tree(report.base_commit, [config_path]) if e.kind == "blob"
        ]
        write_tree(repo, config_entries, kit_dir, self.base_root)
        base_config = Kit.open(self.base_root).config
        folders = ledger_folders(base_config, kit_dir)
        base_trust = trust_entries(repo, report.base_commit, kit_dir, base_config)
        head_trust = trust_entries(repo, report.head_commit, kit_dir, base_config)
        write_tree(repo, base_trust.values(), kit_dir, self.base_root, self.head_root)
        # The base's files are its history (checked when a change added them): their
        # lines' digests are checked; head's other files are checked in full.
        base = read_ledgers(self.cache, report.base_commit, folders, strict=False)
        self.base, self.folders = base, folders
        calibration = self._calibration(base, base_config)
        try:
            head = read_ledgers(self.cache, report.head_commit, folders)
            self.changes = {kind: changes(self.cache, base, head, kind) for kind in LEDGER_KINDS}
            head_kit = Kit.open(self.head_root)
            self._materialise(head_kit, base, head, folders)
            if report.kit_head != report.kit_base:
                self._finding(
                    None,
                    None,
                    None,
                    f"the kit moved from {report.kit_base or '.'} to "
                    f"{report.kit_head or '(nowhere)'}; the base's records and policy are "
                    "judged where the base keeps them",
                )
            added = self._integrity(base, head, head_kit)
            self._policy(base_trust, head_trust, added, head_kit)
            self._take_calibration(calibration)
            self._runs(head, added, base_trust, base_config)
        finally:
            if calibration is not None:
                calibration.cancel()  # an error before its result was taken

    # ------------------------------------------------------------ materialising

    def _materialise(self, kit: Kit, base: Ledgers, head: Ledgers, folders: dict[str, str]) -> None:
        """Give the temporary kit (the base's policy) what the writers' rules read
        besides the record they check: the registrations and verdicts, at head, of
        every run with a record the base does not hold (a verdict's rules read its
        run, a label's the verdict it names, which must be its own run's). They go
        in through the store's append, so the kit is laid out as the store lays
        it out; a record its schema refuses is left out (it is a finding)."""
        cut = len(self.kit_dir) + 1 if self.kit_dir else 0
        for kind in LEDGER_KINDS:
            folder = self.head_root / folders[kind][cut:]
            folder.mkdir(parents=True, exist_ok=True)
            if not (folder / MARKER).is_file():
                write_marker(folder, kind)
        changed = {
            r.run_id
            for added, _ in self.changes.values()
            for r in added.values()
            if r.run_id is not None
        }
        for kind in RULES_READ:
            wanted = [
                r.record
                for r in head.records.get(kind, {}).values()
                if r.run_id in changed and not schema_problems(kind, r.record, parsed=True)
            ]
            if wanted:
                append(kit.store, kind, partial(Draft, wanted))

    # ------------------------------------------------------------ integrity

    def _finding(
        self, kind: str | None, record_id: str | None, file: str | None, problem: str
    ) -> None:
        self.report.integrity.append(
            {"kind": kind, "record_id": record_id, "file": file, "problem": problem}
        )

    def _integrity(
        self, base: Ledgers, head: Ledgers, head_kit: Kit
    ) -> dict[str, dict[str, StoredRecord]]:
        """Records added in base..head that count (every finding reported)."""
        base_files = {(p, e.sha) for files in base.files.values() for p, e in files.items()}
        for problem in head.problems:
            entry = head.files[problem.kind].get(problem.path)
            if entry is not None and (problem.path, entry.sha) in base_files:
                continue  # present as it is at base: not this change's doing
            where = f" line {problem.line}" if problem.line else ""
            self._finding(
                problem.kind, None, problem.path, f"{problem.path}{where}: {problem.problem}"
            )
        added: dict[str, dict[str, StoredRecord]] = {}
        # Every record checked here is added by the change: none was in the kit at
        # signing's switch commit, which the base's policy names.
        # and later than everything at the base (versions move forward).
        context = Context(
            head_kit,
            at_switch=_added_by_the_change,
            order=AddedByChange(lambda kind: _newest_at(base, kind)),
        )
        for kind in LEDGER_KINDS:
            new, vanished = self.changes[kind]
            gone = list(vanished.values())
            ids_after = head.ids(kind) if gone else set()
            for record in sorted(gone, key=lambda r: r.record_id):
                how = "was changed" if record.record_id in ids_after else "is missing"
                self._finding(
                    kind,
                    record.record_id,
                    record.path,
                    f"the {kind} record {record.record_id} present at base {how} at head",
                )
            ids_before = base.ids(kind) if new else set()
            counted: dict[str, StoredRecord] = {}
            seen: dict[str, str] = {}
            for digest, record in sorted(new.items(), key=lambda item: _key(item[1].record)):
                if record.record_id in ids_before:
                    self._finding(
                        kind,
                        record.record_id,
                        record.path,
                        f"the added {kind} record {record.record_id} reuses a record id present "
                        "at base",
                    )
                    continue
                if record.record_id in seen:
                    self._finding(
                        kind,
                        record.record_id,
                        record.path,
                        f"two added {kind} records share the record id {record.record_id}",
                    )
                    continue
                seen[record.record_id] = digest
                violations = stored_record_problems(head_kit, kind, record.record, context=context)
                if kind == "evals" and not violations:
                    violations = self._unresolved(record.record, head)
                    violations += exemplar_problems(record.record, self._base_cases)
                if violations and kind == "policy":
                    self.refused_approvals.append((record, str(violations[0])))
                if violations:
                    for violation in violations:
                        self._finding(
                            kind,
                            record.record_id,
                            record.path,
                            f"the added {kind} record {record.record_id} breaks a rule of the "
                            f"base's policy: {violation}",
                        )
                    continue
                counted[digest] = record
            added[kind] = counted
        self.head_records = head
        return added

    def _unresolved(self, verdict: dict[str, Any], head: Ledgers) -> list[Any]:
        """An added verdict's verified evidence pointers resolved as the writer
        resolves them (:mod:`pmos.gate.stored_evidence`): files at the run's head
        in the repository its registration names (from the kit's place in this
        repository), checks among the run's assessments at head."""
        if verdict.get("schema_version", 1) < 2:
            return []
        run_id = verdict.get("run_id")
        runs = [r.record for r in head.records.get("runs", {}).values() if r.run_id == run_id]
        run = min(runs, key=_key) if runs else None
        where = self.repo.top / self.kit_dir if self.kit_dir else self.repo.top
        return unresolved_pointers(
            verdict,
            local_repository(where, run),
            (run or {}).get("head"),
            lambda: [
                r.record for r in head.records.get("assessments", {}).values() if r.run_id == run_id
            ],
        )

    def _base_cases(self) -> set[str]:
        """The calibration cases of the base (``pmos exemplars`` there), which an
        added verdict's ``exemplars`` must name: the base's policy kit is given the
        base's registrations, verdicts and labels (through the store's append, as
        :meth:`_materialise` does) and asked, once a gate run and only when an
        added verdict names a case."""
        if self._cases is None:
            kit = Kit.open(self.base_root)
            cut = len(self.kit_dir) + 1 if self.kit_dir else 0
            for kind in LEDGER_KINDS:
                folder = self.base_root / self.folders[kind][cut:]
                folder.mkdir(parents=True, exist_ok=True)
                if not (folder / MARKER).is_file():
                    write_marker(folder, kind)
                if kind not in ("runs", "evals", "acceptances"):
                    continue  # what the cases' screening reads
                held = (self.base.records.get(kind, {}) if self.base else {}).values()
                wanted = [
                    r.record for r in held if not schema_problems(kind, r.record, parsed=True)
                ]
                if wanted:
                    append(kit.store, kind, partial(Draft, wanted))
            self._cases = known_cases(kit)
        return self._cases

    # ------------------------------------------------------------ policy

    def _policy(
        self,
        base_trust: dict[str, Any],
        head_trust: dict[str, Any],
        added: dict[str, dict[str, StoredRecord]],
        head_kit: Kit,
    ) -> None:
        report, cut = self.report, len(self.kit_dir) + 1 if self.kit_dir else 0
        changed: list[dict[str, Any]] = []
        for path in sorted(set(base_trust) | set(head_trust)):
            before, after = base_trust.get(path), head_trust.get(path)
            if before is not None and after is not None and before.sha == after.sha:
                continue
            how = "added" if before is None else "removed" if after is None else "modified"
            changed.append({"path": path[cut:], "change": how, "sha256": None, "blob": after})
        contents = self.repo.blobs(c["blob"].sha for c in changed if c["blob"] is not None)
        for change in changed:
            blob = change.pop("blob")
            if blob is not None:
                change["sha256"] = hashlib.sha256(contents[blob.sha]).hexdigest()
        report.policy_changes = changed
        approvals = sorted(added.get("policy", {}).values(), key=lambda r: _key(r.record))
        wanted = {c["path"]: c["sha256"] for c in changed}
        ok = False
        for approval in approvals:
            record = approval.record
            problem = signature_problem(head_kit.config, head_kit.root, record, at=self.now)
            listed = {f.get("path"): f.get("sha256") for f in record.get("files", [])}
            unmatched = sorted(
                p for p, digest in wanted.items() if listed.get(p, "absent") != digest
            )
            if problem is None and unmatched:
                problem = "does not state the content at head of " + ", ".join(unmatched)
            report.approvals.append(
                {
                    "record_id": approval.record_id,
                    "by": record.get("by"),
                    "valid": problem is None,
                    "problem": problem,
                }
            )
            ok = ok or problem is None
        for approval, problem in self.refused_approvals:
            report.approvals.append(
                {
                    "record_id": approval.record_id,
                    "by": approval.record.get("by"),
                    "valid": False,
                    "problem": problem,
                }
            )
        report.policy_approved = ok if changed else None

    # ------------------------------------------------------------ calibration

    def _calibration(self, base: Ledgers, config: Any) -> ForkedCall | None:
        """Start computing whether the review gate is calibrated (see
        :func:`calibration_at_base`): in a child process on a large kit, while this
        one checks the change; its result is taken by :meth:`_take_calibration`."""
        remembered = calibration_memo.load(self.repo.top, self.report.base_commit, self.kit_dir)
        if remembered is not None:
            self._calibrated = remembered
            return None
        records = sum(len(base.records.get(k, {})) for k in ("evals", "acceptances"))
        if records < FORK_MIN_RECORDS or not hasattr(os, "fork"):
            self._calibrated = calibration_at_base(base, config)
            self._remember_calibration()
            return None
        return ForkedCall(calibration_at_base, base, config)

    def _take_calibration(self, child: ForkedCall | None) -> None:
        if child is not None:
            self._calibrated = child.result()
            self._remember_calibration()
        self.report.calibration, self.report.seeded_labels_excluded = self._calibrated

    def _remember_calibration(self) -> None:
        calibration_memo.save(
            self.repo.top, self.report.base_commit, self.kit_dir, self._calibrated
        )

    # ------------------------------------------------------------ runs

    def _runs(
        self,
        head: Ledgers,
        added: dict[str, dict[str, StoredRecord]],
        base_trust: dict[str, Any],
        base_config: Any,
    ) -> None:
        bad = {
            (f["kind"], f["record_id"]) for f in self.report.integrity if f["record_id"] is not None
        }
        changed_runs: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for kind, records in added.items():
            for record in records.values():
                run_id = record.record.get("run_id")
                if isinstance(run_id, str):
                    changed_runs.setdefault(run_id, []).append((kind, record.record))
        for kind, records in head.records.items():  # runs whose only added records were refused
            refused = {record_id for of, record_id in bad if of == kind}
            for record in records.values() if refused else ():
                if record.record_id in refused and record.run_id is not None:
                    changed_runs.setdefault(record.run_id, [])
        by_run: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for kind in ("runs", "evals", "acceptances", "assessments"):
            for record in head.records.get(kind, {}).values():
                run_id = record.run_id
                if run_id in changed_runs and (kind, record.record_id) not in bad:
                    by_run.setdefault(run_id, {}).setdefault(kind, []).append(record.record)
        section = base_config.raw.get("gate") or {}
        require_label = bool(section.get("require_label", False))
        require_contract = bool(section.get("require_contract", False))
        known_bad = join(
            self.kit_dir, str(base_config.raw.get("known_bad_dir", TRUST_SETTINGS["known_bad_dir"]))
        )
        cases = {
            p[len(known_bad) + 1 :].split("/", 1)[0]
            for p in base_trust
            if p.startswith(known_bad + "/")
        }
        for run_id in sorted(changed_runs):
            run_records = {k: sorted(v, key=_key) for k, v in by_run.get(run_id, {}).items()}
            decision = RunDecision(run_id)
            if self._seeded(run_id, run_records, changed_runs[run_id], cases, known_bad):
                decision.seeded = True
                decision.decision = "seeded"
                self.report.runs.append(decision)
                continue
            self._judge_run(decision, run_records, require_label, require_contract)
            decision.decision = "fail" if decision.reasons else "pass"
            self.report.runs.append(decision)

    def _seeded(
        self,
        run_id: str,
        records: dict[str, list[dict[str, Any]]],
        added: list[tuple[str, dict[str, Any]]],
        cases: set[str],
        known_bad: str,
    ) -> bool:
        """A seeded known-bad run: its case folder is present at base and its records
        match the case (registered as the seed registers it, labelled only ``fail``
        by ``seeded``)."""
        if not run_id.startswith(RUN_PREFIX):
            return False
        case_id = run_id[len(RUN_PREFIX) :]
        if case_id not in cases:
            return False
        cut = len(self.kit_dir) + 1 if self.kit_dir else 0
        case, _problems = load_case(self.base_root / known_bad[cut:] / case_id)
        if case is None:
            return False
        runs = records.get("runs", [])
        if not runs or any(
            r.get("initiative_id") != INITIATIVE or r.get("contract") != case.contract for r in runs
        ):
            return False
        for kind, record in added:
            if (
                kind == "acceptances"
                and record.get("by") == LABELLER
                and record.get("label") != "fail"
            ):
                return False
            if kind not in ("runs", "evals", "acceptances"):
                return False
        return True

    def _judge_run(
        self,
        decision: RunDecision,
        records: dict[str, list[dict[str, Any]]],
        require_label: bool,
        require_contract: bool,
    ) -> None:
        reasons = decision.reasons
        runs = records.get("runs", [])
        if not runs:
            reasons.append("not registered (pmos run register)")
        elif require_contract and not any(r.get("contract") for r in runs):
            reasons.append(
                "registered without a contract, which the policy requires (gate.require_contract)"
            )
        verdicts = records.get("evals", [])
        judged = [v for v in verdicts if v.get("verdict") != SKIPPED]
        latest_judged = judged[-1] if judged else None
        if not verdicts:
            reasons.append("has no verdict")
        elif verdicts[-1].get("verdict") == SKIPPED:
            reasons.append(
                f"its latest verdict {verdicts[-1]['record_id']} is SKIPPED: it was not judged"
            )
        if latest_judged is not None:
            decision.verdict = latest_judged.get("verdict")
            decision.verdict_record_id = latest_judged.get("record_id")
            decision.evaluator_model = latest_judged.get("evaluator_model")
            if decision.verdict not in PASS_SIDE:
                reasons.append(
                    f"its latest judged verdict {decision.verdict_record_id} is {decision.verdict}"
                )
        elif verdicts:
            reasons.append("has no judged verdict")
        labels = [a for a in records.get("acceptances", []) if a.get("by") != LABELLER]
        label = labels[-1] if labels else None
        if label is not None:
            decision.label = label.get("label")
            decision.label_record_id = label.get("record_id")
            if decision.label == "fail":
                reasons.append(
                    f"the PM labelled it fail ({decision.label_record_id} by {label.get('by')})"
                )
        if latest_judged is not None:
            # The writers' rules that depend on other records of the run, applied to
            # what the change holds (a hand-made record never passed a writer).
            run = runs[-1] if runs else None
            assessments = records.get("assessments", [])
            for found in check_against_assessments(latest_judged, run, assessments, now=self.now):
                reasons.append(f"its latest judged verdict {decision.verdict_record_id}: {found}")
        if label is not None:
            named = label.get("gate_record_id")
            judged_by_label = next((v for v in verdicts if v.get("record_id") == named), None)
            early = (
                None if judged_by_label is None else label_before_verdict(label, judged_by_label)
            )
            if early is not None:
                reasons.append(f"its PM label {decision.label_record_id}: {early}")
        model = decision.evaluator_model
        calibrated = model is not None and self.report.calibration.get(model, {}).get(
            "calibrated", False
        )
        decision.mode = CALIBRATED if calibrated else ADVISORY
        if latest_judged is None or decision.label == "fail" or decision.verdict not in PASS_SIDE:
            return  # already refused: a label could not make it pass
        if decision.mode == ADVISORY or require_label:
            why = (
                "the policy requires one (gate.require_label)"
                if decision.mode == CALIBRATED
                else f"the review gate is advisory for {model!r} at base"
            )
            if label is None or decision.label != "pass":
                reasons.append(
                    f"needs a PM pass label on verdict {decision.verdict_record_id}: {why}"
                )
            elif label.get("gate_record_id") != decision.verdict_record_id:
                reasons.append(
                    f"its PM pass label {decision.label_record_id} judges verdict "
                    f"{label.get('gate_record_id')}, not the latest judged verdict "
                    f"{decision.verdict_record_id}: {why}"
                )
