"""Assessing a task and keeping its history in the assessments ledger.

One assessment = run a sanitised spec (:mod:`pmos.assess_spec`) with
:mod:`pmos.assess_run` (and :mod:`pmos.jury` for LLM reviews), then append one
record through the validated writer path. The task's attempt number, the
default trigger and the fix-attempt budget are computed from the ledger under
its lock, so two assessments of one task finishing together cannot both be
"attempt 2".

Fix accounting: a failed task may be handed back to its agent for a fix a
limited number of times (``maxFixAttempts``, default 2) before the normal
retry policy applies. ``fix_attempts_left`` is that budget minus the task's
fix-triggered assessments so far, this one included, never below 0.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from pmos.assess import beneath, environment, jury
from pmos.assess import run as assess_run
from pmos.assess.spec import Expectation, NothingToAssess, Spec, from_contract, load_spec
from pmos.assess.worktree import WorkTree, work_tree
from pmos.errors import BadInput, ConfigError
from pmos.kit import Kit
from pmos.store.append import Draft, Written, append, check_schema, check_storable, record_meta
from pmos.store.lookup import find_run
from pmos.store.read import records

TRIGGERS = ("initial", "reassess", "fix", "retry", "auto-correct", "judge")
#: The assessment layout written: 2 since it records the commit and the work
#: tree's state (``commit``, ``dirty``); readers still take version 1 records.
ASSESSMENT_SCHEMA_VERSION = 2


#: The trigger that spends the fix budget (maxFixAttempts); retries do not.
FIX_TRIGGER = "fix"


def fix_attempts_used(records: Iterable[Mapping[str, Any]]) -> int:
    """How many of a task's assessments were fix attempts."""
    return sum(1 for r in records if r.get("trigger") == FIX_TRIGGER)


def assess_timeout(config: Mapping[str, Any]) -> float:
    """pmos.yaml ``assess.timeout_s`` (default 600 s), per command."""
    section = config.get("assess") or {}
    return float(section.get("timeout_s", assess_run.DEFAULT_TIMEOUT_S))


def assess_workers(config: Mapping[str, Any]) -> int:
    """pmos.yaml ``assess.workers`` (default 8): commands run at once."""
    section = config.get("assess") or {}
    return int(section.get("workers", assess_run.DEFAULT_WORKERS))


class _Probe(Exception):
    """Raised inside the probe's build step so the store writes nothing."""


def check_writable(kit: Kit) -> None:
    """Refuse, before any command runs, an assessment that could not be stored.

    The store's own append path is exercised up to the point where it would
    write (it opens and locks the assessments ledger, then calls the build
    step, which aborts), and the ledger's folder must accept new files: a
    read-only ``state/`` or file system is found here, not after every command
    of the spec has run.
    """
    target = folder = kit.store.folder("assessments")

    def abort() -> Draft:
        raise _Probe()

    try:
        append(kit.store, "assessments", abort)
    except _Probe:
        pass
    except OSError as exc:
        raise BadInput(_unwritable(target, exc.strerror or str(exc))) from None
    try:  # the one sure test: create (and remove) a file where the record will go
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".tmp-probe-")
    except OSError as exc:
        raise BadInput(_unwritable(folder, exc.strerror or str(exc))) from None
    os.close(fd)
    os.unlink(probe)


def _unwritable(path: Path, why: str) -> str:
    return (
        f"the assessment could not be stored ({path}: {why}), so nothing was run; make "
        "the kit's state folder writable and run the assessment again"
    )


def resolve_task_id(explicit: str | None, spec: Spec, run_id: str | None) -> str:
    """--task-id, else the task file's own id, else the run id, else the spec file's name.

    An explicit but empty or blank --task-id is refused rather than quietly
    replaced by a default: the caller asked for a task id and gave none.
    """
    if explicit is not None and not explicit.strip():
        raise BadInput(
            f"--task-id {explicit!r} is empty; give the task's id, or leave --task-id out to "
            "use the spec's id, else --run-id, else the spec file's name"
        )
    for candidate in (explicit, spec.task_id, run_id):
        if candidate:
            return candidate
    return Path(spec.source).stem


def spec_to_assess(
    kit: Kit, spec_path: Path | None, run_id: str | None, *, lenient: bool = False
) -> tuple[Spec, dict[str, Any] | None]:
    """What ``pmos assess`` assesses, and the registered run it belongs to (or None).

    A spec file when one is given; otherwise the run's contract, which needs the
    run to be registered, since an unregistered run has no contract.
    """
    if run_id is not None and not run_id.strip():
        raise BadInput(f"--run-id {run_id!r} is empty; give the run's id or leave --run-id out")
    run = find_run(kit.store, run_id) if run_id is not None else None
    if spec_path is not None:
        return load_spec(spec_path, lenient=lenient), run
    if run_id is None:
        raise BadInput("give a SPEC file, or --run-id to assess the run's contract criteria")
    if run is None:
        raise BadInput(f"run {run_id!r} is not registered, so it has no contract to assess")
    return from_contract(run, lenient=lenient), run


def task_records(kit: Kit, task_id: str) -> list[dict[str, Any]]:
    """Every assessment of ``task_id``, oldest first."""
    return [r for r in records(kit.store, "assessments") if r.get("task_id") == task_id]


class TaskHistory(NamedTuple):
    """A task's current assessment and the ones before it, newest first."""

    latest: dict[str, Any]
    earlier: list[dict[str, Any]]


def task_history(kit: Kit, task_id: str) -> TaskHistory:
    """The latest record of a task is its current assessment; the rest its history.

    A task with no assessment is bad input (exit 2), as an unknown id is
    everywhere in pmos: a typo must not read as "nothing wrong here".
    """
    records = task_records(kit, task_id)
    if not records:
        raise BadInput(
            f"no assessment recorded for task {task_id!r} (assess it: pmos assess SPEC "
            "--task-id TASK)"
        )
    return TaskHistory(records[-1], list(reversed(records[:-1])))


def _check_trigger(trigger: str | None) -> None:
    if trigger is not None and trigger not in TRIGGERS:
        raise BadInput(f"--trigger {trigger!r} is not one of {', '.join(TRIGGERS)}")


def _record(
    spec: Spec,
    *,
    task_id: str,
    run_id: str | None,
    trigger: str,
    attempt: int,
    passed: bool,
    cwd: Path,
    duration: float,
    checks: list[dict[str, Any]],
    metrics: list[dict[str, Any]],
    warnings: list[str],
    fixes: int,
    flags: list[str],
    tree: WorkTree,
) -> dict[str, Any]:
    """One assessment record; the same code builds the pre-run probe and the real one."""
    record: dict[str, Any] = {
        **record_meta("assessments"),
        "schema_version": ASSESSMENT_SCHEMA_VERSION,
        "task_id": task_id,
        "trigger": trigger,
        "attempt": attempt,
        "passed": passed,
        "spec": spec.source,
        "cwd": str(cwd),
        **tree.fields(),
        "duration_s": duration,
        "checks": checks,
        "metrics": metrics,
        "warnings": warnings,
        "max_fix_attempts": spec.max_fix_attempts,
        "max_assessment_retries": spec.max_assessment_retries,
        "fix_attempts_left": max(0, spec.max_fix_attempts - fixes),
    }
    if run_id is not None:
        record["run_id"] = run_id
    if flags:
        record["flags"] = flags
    return record


def _check_storable(record: dict[str, Any]) -> None:
    """Refuse a record the assessments ledger would refuse: its schema, then its
    JSON encoding (integers beyond 64 bits, text that is not valid Unicode)."""
    check_schema("assessments", record)
    try:
        check_storable("assessments", record)
    except BadInput as exc:
        raise BadInput(f"the assessment could not be stored, so nothing was run: {exc}") from None


def assess(
    kit: Kit,
    spec: Spec,
    *,
    cwd: Path,
    task_id: str,
    run_id: str | None = None,
    run: Mapping[str, Any] | None = None,
    trigger: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Written:
    """Run ``spec`` in ``cwd`` and append the assessment; returns the stored record.

    Everything that can be refused is refused before the first command starts,
    so a refusal (exit 2) means nothing ran and nothing was written: the
    trigger, the working directory, files the reviewers would see from outside
    it or through a link, the reviewer configuration, a probe record holding
    every value the spec, ids and paths put into the stored record (checked
    against the record schema and the ledger's encoding), and whether the
    assessments ledger can be written at all (:func:`check_writable`).

    Commands get a minimal environment (:mod:`pmos.assess.environment`), run
    ``assess.workers`` at a time, and whatever they leave running is stopped
    and reported (:mod:`pmos.assess.run`).
    """
    environ = os.environ if environ is None else environ
    _check_trigger(trigger)
    if not cwd.is_dir():
        raise BadInput(f"--cwd {cwd} is not a folder")
    cwd = cwd.resolve()
    if spec.empty:
        raise NothingToAssess(spec)
    cwd_fd = beneath.open_dir(cwd)
    try:
        return _assess_in(kit, spec, cwd, cwd_fd, task_id, run_id, run, trigger, environ)
    finally:
        os.close(cwd_fd)


def _assess_in(
    kit: Kit,
    spec: Spec,
    cwd: Path,
    cwd_fd: int,
    task_id: str,
    run_id: str | None,
    run: Mapping[str, Any] | None,
    trigger: str | None,
    environ: Mapping[str, str],
) -> Written:
    unshowable = jury.unshowable_files(spec.expectations, cwd, cwd_fd)
    if unshowable:
        lines = "\n".join(f"  - {p}" for p in unshowable)
        raise BadInput(
            f"spec {spec.source} shows the reviewers files outside --cwd or through a "
            f"symbolic link; nothing was run:\n{lines}"
        )
    settings = jury.review_settings(kit.config.raw, environ) if spec.needs_review else None
    timeout = assess_timeout(kit.config.raw)
    env = environment.command_env(environ, environment.env_allow(kit.config.raw))
    context = jury.ReviewContext(cwd, spec.title, spec.description, run, cwd_fd, env)
    warnings = list(spec.warnings)
    flags: list[str] = []
    # What the commands run on, read before they run (they may change the tree).
    tree = work_tree(cwd)
    warnings += tree_warnings(tree, run)
    if run_id is not None and run is None:
        flags.append("unregistered-run")
        warnings.append(
            f"run {run_id!r} was never registered ('pmos run register'); "
            "the assessment is flagged unregistered-run"
        )

    def placeholder(exp: Expectation) -> dict[str, Any]:
        if exp.type == "llm_review" and settings is not None:
            return jury.placeholder_check(exp, settings.aggregate)
        return assess_run.placeholder_check(exp)

    _check_storable(
        _record(
            spec,
            task_id=task_id,
            run_id=run_id,
            trigger=trigger or "initial",
            attempt=1,
            passed=False,
            cwd=cwd,
            duration=0.0,
            checks=[placeholder(e) for e in spec.expectations],
            metrics=[assess_run.placeholder_metric(m) for m in spec.metrics],
            warnings=warnings,
            fixes=0,
            flags=flags,
            tree=tree,
        )
    )
    check_writable(kit)

    def review(exp: Expectation, tracker: assess_run.ProcessTracker) -> dict[str, Any]:
        if settings is None:  # guarded above; keeps the type checker honest
            raise ConfigError("no reviewers configured")
        return jury.run_review(
            exp, settings, context, max_retries=spec.max_assessment_retries, tracker=tracker
        )

    start = time.monotonic()
    checks, metrics = assess_run.run_spec(
        spec,
        cwd=cwd,
        cwd_fd=cwd_fd,
        timeout_s=timeout,
        review=review,
        env=env,
        workers=assess_workers(kit.config.raw),
    )
    duration = round(time.monotonic() - start, 3)
    passed = all(c["passed"] for c in checks) and all(m["passed"] for m in metrics)
    warnings += _left_running_warnings(checks, metrics)
    for check in checks:
        warnings += [f"check {check['index']} (llm_review): {n}" for n in check.get("notes", [])]

    def build() -> Draft:
        prior = task_records(kit, task_id)
        actual = trigger or ("reassess" if prior else "initial")
        fixes = fix_attempts_used(prior) + (actual == FIX_TRIGGER)
        notes = list(warnings)
        if actual == FIX_TRIGGER and fixes > spec.max_fix_attempts:
            notes.append(
                f"this is fix attempt {fixes} of task {task_id!r}, beyond maxFixAttempts "
                f"{spec.max_fix_attempts}: the normal retry policy applies now"
            )
        record = _record(
            spec,
            task_id=task_id,
            run_id=run_id,
            trigger=actual,
            attempt=len(prior) + 1,
            passed=passed,
            cwd=cwd,
            duration=duration,
            checks=checks,
            metrics=metrics,
            warnings=notes,
            fixes=fixes,
            flags=flags,
            tree=tree,
        )
        return Draft([record])

    return append(kit.store, "assessments", build)


def tree_warnings(tree: WorkTree, run: Mapping[str, Any] | None) -> list[str]:
    """What the author must know about the tree assessed: a dirty one is not the
    commit, and a commit other than the run's registered head is not the run's."""
    out: list[str] = []
    if tree.dirty:
        shown = ", ".join(tree.paths[:5]) + (" ..." if tree.changed > 5 else "")
        out.append(
            f"the work tree is dirty ({tree.changed} path(s) differ from "
            f"{tree.commit or 'no commit'}: {shown}): the assessment is recorded as dirty and "
            "does not stand for the commit; commit or stash the changes and assess again"
        )
    elif tree.dirty is None:
        out.append(
            "--cwd is not in a git work tree (or git could not read it): the assessment "
            "records no commit" + (f" ({tree.why})" if tree.why else "")
        )
    head = (run or {}).get("head")
    if head and tree.commit and head != tree.commit:
        out.append(
            f"--cwd is at commit {tree.commit}, not the run's registered head {head}: "
            "the assessment is of another commit than the run's"
        )
    return out


def _left_running_warnings(
    checks: list[dict[str, Any]], metrics: list[dict[str, Any]]
) -> list[str]:
    """A warning for every check or metric whose command left processes running."""
    out = [
        f"check {c['index']} ({c['type']}) left {c['left_running']} process(es) running "
        "after its command exited; pmos stopped them"
        for c in checks
        if c.get("left_running")
    ]
    out += [
        f"metric {m['name']} left {m['left_running']} process(es) running after its "
        "command exited; pmos stopped them"
        for m in metrics
        if m.get("left_running")
    ]
    return out


def summary(record: Mapping[str, Any]) -> dict[str, Any]:
    """The stable ``--json`` shape of one assessment."""
    keys = (
        "record_id",
        "recorded_at",
        "task_id",
        "run_id",
        "trigger",
        "attempt",
        "passed",
        "commit",
        "dirty",
        "dirty_paths",
        "duration_s",
        "checks",
        "metrics",
        "warnings",
        "fix_attempts_left",
    )
    return {k: record.get(k) for k in keys}
