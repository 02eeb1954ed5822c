"""Follow-up suggestions: the work an evaluation found, deduplicated before it reaches the board.

Sources, per run: every defect of the run's latest judged verdict (SKIPPED
verdicts are passed over), and every failed check of its latest assessment.
Each becomes one structured suggestion.

**Dedupe key.** ``dk-`` + a hash of the normalised title and location, and of
nothing run-specific, so the same problem found by two runs has the same key.
Normalising: Unicode NFKC, case-folded, punctuation to spaces (identifiers
such as ``parse_date`` keep their underscores), whitespace collapsed. From the
location, line and column numbers (``app.py:42:7``, ``#L10-L20``, ``line 42``)
are also dropped, because they move whenever code above them changes. Numbers
in titles are kept: "returns 500" and "returns 404" are different problems.

**Suggestion id.** ``sg-`` + a hash of the parent run id and the dedupe key:
the same problem in the same run always has the same id.

**Suppression**, checked in this order (the first that applies is recorded):

* ``empty_or_generic`` - the title has no words, or it only uses generic words
  ("improve code quality", "add more tests") and the location names no place
  ("general", "n/a", blank).
* ``insufficient_signal`` - the defect is only ``low`` or ``nit``.
* ``duplicate_prior_suggestion`` - the same suggestion id was already
  suggested for this run (by an earlier call, or earlier in this one).
* ``duplicate_open_task`` - an open task in the tasks ledger has the same key.

**Policy.** ``policyQualified`` means the problem is blocking: severity
``critical`` or ``must-fix`` (a failed test, script or file check is
``must-fix``; a failed llm_review check is ``should-fix``, an AI judgment).
Modes: ``persist_only`` creates nothing; ``auto_create_qualified`` creates the
non-suppressed qualified ones; ``create_all_non_duplicates`` creates every
non-suppressed one. The project setting ``followup_policy`` (or ``--policy``)
``off`` or ``suggest`` means persist_only and ``create`` auto_create_qualified;
the mode names themselves are accepted too.

Every suggestion, suppressed ones included, is appended to the followups
ledger. A created task gets an id derived from its suggestion id and is
appended to the tasks ledger in state triage with its provenance.

**Two ledgers, one command.** The follow-ups are written first, and they are
the decision: a suggestion in state ``created`` names its task and holds
everything the task is made of. The tasks are then derived from the
follow-ups, idempotently: every ``created`` suggestion whose task is not in
the tasks ledger yet gets it, this call's and any earlier call's that stopped
between the two writes (a full disk, a kill). Such a task counts as open for
the dedupe check meanwhile, so no second task is decided for the same
problem. If the task write fails, :class:`~pmos.errors.IncompleteWrite`
(exit 75) says so, and running the same command again completes it without a
duplicate.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from pmos.errors import BadInput, IncompleteWrite, LedgerBusy
from pmos.gate.runfacts import RunFacts, gather_known
from pmos.kit import Kit
from pmos.store import read
from pmos.store.append import Draft, append, check_schema, record_meta
from pmos.tasks.evidence import check_id, defect_id, excerpt, review_id
from pmos.tasks.task_list import TaskView, append_created, created_record, current_tasks

KIND = "followups"
EMPTY_OR_GENERIC = "empty_or_generic"
INSUFFICIENT_SIGNAL = "insufficient_signal"
DUPLICATE_OPEN_TASK = "duplicate_open_task"
DUPLICATE_PRIOR_SUGGESTION = "duplicate_prior_suggestion"

PERSIST_ONLY = "persist_only"
AUTO_CREATE_QUALIFIED = "auto_create_qualified"
CREATE_ALL_NON_DUPLICATES = "create_all_non_duplicates"
POLICY_MODES = (PERSIST_ONLY, AUTO_CREATE_QUALIFIED, CREATE_ALL_NON_DUPLICATES)
#: The project setting's values and the backend mode each one means.
POLICY_SETTINGS = {"off": PERSIST_ONLY, "suggest": PERSIST_ONLY, "create": AUTO_CREATE_QUALIFIED}
DEFAULT_POLICY = "suggest"
CONFIG_KEY = "followup_policy"

QUALIFYING_SEVERITIES = frozenset({"critical", "must-fix"})
WEAK_SEVERITIES = frozenset({"low", "nit"})
PRIORITY = {
    "critical": "urgent",
    "must-fix": "high",
    "should-fix": "medium",
    "low": "low",
    "nit": "low",
}
TITLE_LIMIT = 120

#: Words that name no particular problem; a title made only of these says nothing.
# fmt: off
GENERIC_WORDS = frozenset({
    "a", "an", "the", "and", "or", "of", "for", "to", "in", "on", "with", "more", "some",
    "better", "general", "various", "misc", "stuff", "things", "improve", "improved",
    "improvement", "improvements", "fix", "fixes", "fixed", "add", "added", "update", "updates",
    "refactor", "refactoring", "cleanup", "clean", "up", "code", "quality", "tests", "test",
    "testing", "coverage", "docs", "documentation", "doc", "bug", "bugs", "issue", "issues",
    "error", "errors", "handling", "todo", "tbd", "na", "n", "none", "nothing", "other",
    "minor", "polish", "tidy", "review", "check", "overall", "make", "should", "could",
    "consider"
})
#: Locations that name no place.
GENERIC_LOCATIONS = frozenset({
    "", "n a", "n/a", "na", "none", "general", "various", "global", "codebase", "everywhere",
    "unknown", "all", "repo", "repository", "project", "overall", "multiple", "misc"
})
# fmt: on


# ---------------------------------------------------------------- keys


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


_NON_WORD = re.compile(r"[^\w]+")
_LINE_REFS = (
    re.compile(r"#l\d+(?:-l?\d+)?"),
    re.compile(r"\blines?\s+\d+(?:\s*-\s*\d+)?"),
    re.compile(r"(?<=[\s:(])l\d+(?:-l?\d+)?\b"),
    re.compile(r":\d+(?::\d+)?(?:-\d+)?(?=$|[\s,;)])"),
)


def normalise_title(title: str) -> str:
    return " ".join(_NON_WORD.sub(" ", _fold(title)).split())


def normalise_location(location: str) -> str:
    text = _fold(location).replace("\\", "/")
    for pattern in _LINE_REFS:
        text = pattern.sub(" ", text)
    text = re.sub(r"[^\w./-]+", " ", text)
    return " ".join(text.split()).strip(" ./-")


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:16]


def dedupe_key(title: str, location: str) -> tuple[str, str]:
    """(key, basis): the key is stable across runs for the same title and location."""
    basis = f"{normalise_title(title)} @ {normalise_location(location)}"
    return f"dk-{_digest('dedupe', basis)}", basis


def suggestion_id(run_id: str, key: str) -> str:
    return f"sg-{_digest('suggestion', run_id, key)}"


def task_id_for(suggestion: str) -> str:
    return f"task-{_digest('task', suggestion)[:12]}"


def is_generic(title: str, location: str) -> bool:
    words = normalise_title(title).split()
    if not words:
        return True
    vague_title = all(w in GENERIC_WORDS or w.isdigit() for w in words)
    return vague_title and normalise_location(location) in GENERIC_LOCATIONS


def resolve_policy(kit: Kit, policy: str | None) -> tuple[str, str]:
    """(policy as given or configured, backend mode)."""
    value = policy if policy is not None else kit.config.raw.get(CONFIG_KEY, DEFAULT_POLICY)
    if value in POLICY_SETTINGS:
        return value, POLICY_SETTINGS[value]
    if value in POLICY_MODES:
        return value, value
    raise BadInput(
        f"--policy {value!r} is not a follow-up policy; use off, suggest or create "
        f"(or a mode: {', '.join(POLICY_MODES)})"
    )


# ---------------------------------------------------------------- candidates


@dataclass
class Candidate:
    """One problem found in a run's records, before dedupe and policy."""

    title: str
    location: str
    description: str
    severity: str
    rationale: str
    expected_outcome: str
    evidence_refs: list[str]
    source: dict[str, Any]


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    match = re.search(r"(?<=[.!?])\s", flat)
    return flat[: match.start()] if match else flat


def candidates(facts: RunFacts) -> tuple[list[Candidate], list[str]]:
    """The latest judged verdict's defects and the latest assessment's failed checks.

    A SKIPPED verdict is passed over: judging did not happen, so nothing it
    carries is a finding, and a skip recorded after a judgement does not hide it.
    """
    found: list[Candidate] = []
    notes: list[str] = []
    verdict = facts.latest_judged_verdict
    if verdict is None:
        if facts.verdicts:
            notes.append("the run has no judged verdict (only SKIPPED), so no defects")
        else:
            notes.append("the run has no verdict, so no defects")
    else:
        defects = verdict.get("defects", [])
        if not defects:
            notes.append(f"the latest verdict ({verdict['verdict']}) lists no defects")
        rid = verdict["record_id"]
        for index, d in enumerate(defects):
            found.append(
                Candidate(
                    title=excerpt(_first_sentence(d["problem"]), TITLE_LIMIT),
                    location=d["where"],
                    description=excerpt(f"{d['problem']} Suggested fix: {d['fix']}"),
                    severity=d["severity"],
                    rationale=(
                        f"verdict {rid} ({verdict['verdict']}) reports a {d['severity']} "
                        f"defect at {excerpt(d['where'], 200)}"
                    ),
                    expected_outcome=excerpt(d["fix"]),
                    evidence_refs=[defect_id(rid, index), review_id(rid)],
                    source={"type": "verdict_defect", "record_id": rid, "index": index},
                )
            )
    assessment = facts.latest_assessment
    if assessment is None:
        notes.append("the run has no assessment, so no failed checks")
    else:
        failed = [c for c in assessment.get("checks", []) if not c.get("passed")]
        if not failed:
            notes.append("the latest assessment has no failed check")
        for check in failed:
            found.append(_check_candidate(assessment, check))
    return found, notes


def _check_candidate(assessment: dict[str, Any], check: dict[str, Any]) -> Candidate:
    kind = check["type"]
    criterion = check.get("criterion_id")
    command = check.get("command")
    missing = check.get("missing")
    if criterion:
        location, what = f"criterion {criterion}", f" for criterion {criterion}"
    elif isinstance(command, str) and command.strip():
        location, what = command, f": {command}"
    elif missing:
        paths = ", ".join(map(str, missing)) if isinstance(missing, list) else str(missing)
        location, what = paths, f": missing {paths}"
    else:
        location, what = f"check {check['index']}", f" (check {check['index']})"
    tail = check.get("output_tail")
    description = f"Check {check['index']} ({kind}) failed: {check['reason']}"
    if isinstance(tail, str) and tail.strip():
        description += f" Output: {tail}"
    rid = assessment["record_id"]
    return Candidate(
        title=excerpt(f"Failing {kind} check{what}", TITLE_LIMIT),
        location=location,
        description=excerpt(description),
        severity="should-fix" if kind == "llm_review" else "must-fix",
        rationale=(
            f"assessment {rid} (attempt {assessment.get('attempt')}) reports check "
            f"{check['index']} ({kind}) failed"
        ),
        expected_outcome=f"the {kind} check{what} passes",
        evidence_refs=[check_id(check["index"])],
        source={"type": "assessment_check", "record_id": rid, "index": check["index"]},
    )


# ---------------------------------------------------------------- suggest


@dataclass
class SuggestReport:
    run_id: str
    policy: str
    mode: str
    suggestions: list[dict[str, Any]] = field(default_factory=list)
    created: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        counts = {state: 0 for state in ("suggested", "suppressed", "created")}
        for s in self.suggestions:
            counts[s["state"]] += 1
        return {
            "run_id": self.run_id,
            "policy": self.policy,
            "policyMode": self.mode,
            "counts": counts,
            "createdTaskIds": [t["task_id"] for t in self.created],
            "notes": self.notes,
            "suggestions": self.suggestions,
        }


def suggest(kit: Kit, run_id: str, *, policy: str | None = None) -> SuggestReport:
    """Turn the run's findings into suggestions, persist them, create tasks per policy.

    The follow-ups are appended first (under their lock, which serialises the
    decisions); the tasks are derived from them afterwards (see the module
    docstring), so a failure between the two writes is repaired by the next
    call instead of turning into ``duplicate_open_task`` suppressions.
    """
    given, mode = resolve_policy(kit, policy)
    facts = gather_known(kit.store, run_id)
    found, notes = candidates(facts)
    report = SuggestReport(run_id, given, mode, notes=notes)
    overall = facts.task_evals[-1]["overallScore"] if facts.task_evals else None
    undone: dict[str, dict[str, Any]] = {}

    def build_suggestions() -> Draft:
        prior: dict[str, list[dict[str, Any]]] = {}
        decided: dict[str, dict[str, Any]] = {}
        for r in read.records(kit.store, KIND):
            if r.get("run_id") == run_id:
                prior.setdefault(r["suggestionId"], []).append(r)
            if r.get("state") == "created" and r.get("createdTaskId"):
                decided.setdefault(r["createdTaskId"], r)
        tasks_now = current_tasks(kit)
        missing = {t: r for t, r in decided.items() if t not in tasks_now}
        records: list[dict[str, Any]] = []
        _decide(facts, found, mode, prior, tasks_now, missing, overall, records)
        undone.clear()
        undone.update(missing)
        undone.update({r["createdTaskId"]: r for r in records if r["state"] == "created"})
        return Draft(records)

    report.suggestions = append(kit.store, KIND, build_suggestions).records
    mine = {r["createdTaskId"] for r in report.suggestions if r["state"] == "created"}
    try:
        report.created = create_decided_tasks(kit, list(undone.values()))
    except (OSError, LedgerBusy) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise IncompleteWrite(
            f"the {len(report.suggestions)} follow-up suggestion(s) of run {run_id!r} were "
            f"stored, but the {len(undone)} task(s) they decide could not be written ({why}). "
            "Run the same command again: it creates the missing tasks, and no duplicates"
        ) from None
    repaired = [t["task_id"] for t in report.created if t["task_id"] not in mine]
    if repaired:
        report.notes.append(
            f"created {len(repaired)} task(s) that an earlier call decided but stopped before "
            f"writing: {', '.join(repaired)}"
        )
    return report


def create_decided_tasks(kit: Kit, decided: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Append the task of every ``created`` suggestion in ``decided`` that the tasks
    ledger does not hold yet; checked under the tasks lock, so never twice."""
    if not decided:
        return []

    def build() -> list[dict[str, Any]]:
        tasks_now = current_tasks(kit)
        out: list[dict[str, Any]] = []
        for suggestion in decided:
            task_id = suggestion["createdTaskId"]
            if task_id in tasks_now or any(t["task_id"] == task_id for t in out):
                continue
            out.append(created_record(task_from_suggestion(suggestion)))
        return out

    return append_created(kit, build)


def task_from_suggestion(suggestion: dict[str, Any]) -> dict[str, Any]:
    """The fields of the task a ``created`` suggestion decided, from the record alone."""
    return {
        "task_id": suggestion["createdTaskId"],
        "title": suggestion["title"],
        "description": suggestion["description"],
        "priority": suggestion["priority"],
        "severity": suggestion["severity"],
        "dedupeKey": suggestion["dedupeKey"],
        "parent_run_id": suggestion["run_id"],
        "provenance": {
            "type": "eval_follow_up",
            "run_id": suggestion["run_id"],
            "suggestionId": suggestion["suggestionId"],
            "policyMode": suggestion["policyMode"],
            "dedupeKey": suggestion["dedupeKey"],
        },
        "context": {
            "problem": suggestion["description"],
            # Suggestions stored before expectedOutcome existed: the description says it.
            "expectedOutcome": suggestion.get("expectedOutcome") or suggestion["description"],
            "severity": suggestion["severity"],
            "overallScore": suggestion.get("overallScore"),
            "rationale": suggestion["rationale"],
            "evidenceRefs": suggestion["evidenceRefs"],
        },
    }


def _decide(
    facts: RunFacts,
    found: list[Candidate],
    mode: str,
    prior: dict[str, list[dict[str, Any]]],
    tasks_now: dict[str, TaskView],
    undone: dict[str, dict[str, Any]],
    overall: int | None,
    records: list[dict[str, Any]],
) -> None:
    """Append one validated suggestion per candidate to ``records``.

    ``undone`` holds the suggestions decided earlier whose task is not written
    yet: each counts as an open task with its dedupe key.
    """
    open_by_key = {v.created["dedupeKey"]: v.task_id for v in tasks_now.values() if v.is_open}
    for task_id, suggestion in undone.items():
        open_by_key.setdefault(suggestion["dedupeKey"], task_id)
    seen: dict[str, list[dict[str, Any]]] = {sid: list(rs) for sid, rs in prior.items()}
    for cand in found:
        key, basis = dedupe_key(cand.title, cand.location)
        sid = suggestion_id(facts.run_id, key)
        reason: str | None = None
        matched_task: str | None = None
        matched_suggestion: str | None = None
        if is_generic(cand.title, cand.location):
            reason = EMPTY_OR_GENERIC
        elif cand.severity in WEAK_SEVERITIES:
            reason = INSUFFICIENT_SIGNAL
        elif sid in seen:
            reason, matched_suggestion = DUPLICATE_PRIOR_SUGGESTION, sid
            matched_task = next(
                (
                    r["createdTaskId"] or r["matchedTaskId"]
                    for r in seen[sid]
                    if r["createdTaskId"] or r["matchedTaskId"]
                ),
                None,
            )
        elif key in open_by_key:
            reason, matched_task = DUPLICATE_OPEN_TASK, open_by_key[key]
        elif task_id_for(sid) in tasks_now:
            # A task made from this very suggestion exists although no suggestion
            # record does (written by a version that wrote tasks first).
            reason, matched_suggestion = DUPLICATE_PRIOR_SUGGESTION, sid
            matched_task = task_id_for(sid)
        qualified = cand.severity in QUALIFYING_SEVERITIES
        should, why = _recommend(mode, qualified, reason)
        record: dict[str, Any] = {
            **record_meta(KIND),
            "run_id": facts.run_id,
            **({"task_id": facts.task_id} if facts.task_id else {}),
            "suggestionId": sid,
            "dedupeKey": key,
            "dedupeBasis": basis,
            "title": cand.title,
            "description": cand.description,
            "location": cand.location,
            "priority": PRIORITY[cand.severity],
            "severity": cand.severity,
            "rationale": cand.rationale,
            "evidenceRefs": cand.evidence_refs,
            "recommendation": {"shouldCreate": should, "policyQualified": qualified, "reason": why},
            "state": "suppressed" if reason else "suggested",
            "suppressedReason": reason,
            "matchedTaskId": matched_task,
            "matchedSuggestionId": matched_suggestion,
            "createdTaskId": None,
            "policyMode": mode,
            "expectedOutcome": cand.expected_outcome,
            "overallScore": overall,
            "source": cand.source,
        }
        if should:
            task_id = task_id_for(sid)
            record["state"], record["createdTaskId"] = "created", task_id
            # The task is built now only to refuse, before anything is written,
            # a suggestion whose task the tasks ledger would not take.
            created_record(task_from_suggestion(record))
            open_by_key[key] = task_id
        check_schema(KIND, record)
        seen.setdefault(sid, []).append(record)
        records.append(record)


def _recommend(mode: str, qualified: bool, reason: str | None) -> tuple[bool, str]:
    if reason is not None:
        return False, f"suppressed ({reason}): not created under any policy"
    if mode == PERSIST_ONLY:
        return False, "policy persist_only: kept for a person to review, never created"
    if mode == CREATE_ALL_NON_DUPLICATES:
        return True, "policy create_all_non_duplicates: every non-suppressed suggestion is created"
    if qualified:
        return True, "policy auto_create_qualified: critical or must-fix, so it is created"
    return False, "policy auto_create_qualified: below must-fix, so kept for review, not created"


# ---------------------------------------------------------------- promote


def promote(
    kit: Kit, suggestion: str, *, by: str | None = None, note: str | None = None
) -> dict[str, Any]:
    """Create the task of a suggestion a person reviewed; return the created record.

    A suggestion persisted without a task (policy ``suggest``, below must-fix, or
    suppressed as generic or weak) can be promoted by hand. The task is built as
    ``suggest`` builds a decided one: from the stored suggestion record alone
    (:func:`task_from_suggestion`). Its id is derived from
    the suggestion id and checked under the tasks lock, so a suggestion becomes
    at most one task. Refused (:class:`BadInput`) when the id is unknown, the
    suggestion already has a task, or an open task has the same dedupe key.
    Only the tasks ledger is written; the task's provenance names the suggestion.
    """
    stored = [r for r in read.records(kit.store, KIND) if r["suggestionId"] == suggestion]
    if not stored:
        raise BadInput(
            f"SUGGESTION_ID {suggestion!r} is not in the followups ledger "
            "(see: pmos followups suggest --run-id RUN --json)"
        )
    latest = stored[-1]
    task_id = task_id_for(suggestion)
    fields = task_from_suggestion({**latest, "createdTaskId": task_id})
    fields.update({k: v for k, v in (("by", by), ("note", note)) if v is not None})

    def build() -> list[dict[str, Any]]:
        tasks_now = current_tasks(kit)
        made = next((r["createdTaskId"] for r in stored if r["createdTaskId"]), None)
        if task_id in tasks_now or made is not None:
            raise BadInput(
                f"suggestion {suggestion!r} is already task {made or task_id!r} "
                "(see: pmos tasks list)"
            )
        for view in tasks_now.values():
            if view.is_open and view.created["dedupeKey"] == latest["dedupeKey"]:
                raise BadInput(
                    f"open task {view.task_id!r} already tracks this problem "
                    f"(dedupe key {latest['dedupeKey']})"
                )
        return [created_record(fields)]

    return append_created(kit, build)[0]
