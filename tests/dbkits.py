"""Kits for the database tests, written through pmos's own writers.

``populate`` gives a kit a mix that exercises every rule the readers apply:
judged and labelled runs of several evaluator models, re-judged runs,
unlabelled runs, SKIPPED-only runs, a judged run skipped later, labels
without a verdict and registered runs nobody judged.

``union_kit`` replays several kits' records, in (recorded_at, record_id)
order, into one kit through the store's append path: file mode over the union
is what the database must equal.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

from pmos.gate.writers import record_acceptance, record_short_verdict, register_run
from pmos.kit import Kit, init_kit, open_kit
from pmos.store.append import Draft, append
from pmos.store.read import records_with_digests
from pmos.store.registry import LEDGER_KINDS

RUBRIC = "planning/evals/agent-run-eval-rubric.md"


def new_kit(folder: Path) -> Kit:
    init_kit(folder)
    return open_kit(folder)


def git_kit(folder: Path, remote: str | None) -> Kit:
    """A kit at ``folder``, the root of a git repository with remote ``origin``."""
    kit = new_kit(folder)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    if remote is not None:
        subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", remote], check=True)
    commit_all(folder)
    return kit


def commit_all(repo: Path, message: str = "kit") -> None:
    """Commit everything in the repository at ``repo`` on its current branch: the
    policy a sync applies is the default branch's committed pmos.yaml."""
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        [
            *("git", "-C", str(repo), "-c", "user.name=pm", "-c", "user.email=pm@example.com"),
            *("commit", "-q", "-m", message),
        ],
        check=True,
    )


def judge(kit: Kit, run: str, verdict: str, *, model: str, initiative: str) -> dict:
    if verdict == "SKIPPED":
        return record_short_verdict(
            kit,
            run_id=run,
            initiative_id=initiative,
            verdict="SKIPPED",
            skipped_reason="evaluator unavailable",
            evaluator_model=model,
        ).record
    passing = verdict != "FAIL"
    return record_short_verdict(
        kit,
        run_id=run,
        initiative_id=initiative,
        verdict=verdict,
        score=0.9 if passing else 0.3,
        rubric_path=RUBRIC,
        evaluator_model=model,
        spec="pass" if passing else "fail",
        standards="pass" if passing else "fail",
    ).record


def label(kit: Kit, run: str, value: str) -> dict:
    return record_acceptance(kit, run_id=run, label=value, by="pm-alex").record


def register(kit: Kit, run: str, initiative: str) -> None:
    register_run(kit, run_id=run, initiative_id=initiative, builder_model="claude-builder")


def populate(
    kit: Kit, prefix: str, models: list[str], runs: int = 40, seed: int = 1, first: int = 0
) -> None:
    """``runs`` registered runs (numbered from ``first``) in the mix described in the
    module docstring."""
    rng = random.Random(seed * 100_003 + first)
    for i in range(first, first + runs):
        run = f"{prefix}-{i:03d}"
        initiative = f"init-{i % 3}"
        model = models[i % len(models)]
        register(kit, run, initiative)
        truth = rng.random() < 0.6
        agree = rng.random() < 0.8
        gate = truth if agree else not truth
        verdict = ("PASS" if rng.random() < 0.7 else "PASS-WITH-FINDINGS") if gate else "FAIL"
        case = i % 10
        if case <= 5:
            judge(kit, run, verdict, model=model, initiative=initiative)
            label(kit, run, "pass" if truth else "fail")
        elif case == 6:  # re-judged by another model before the PM labelled it
            judge(kit, run, "FAIL" if gate else "PASS", model=models[0], initiative=initiative)
            judge(kit, run, verdict, model=model, initiative=initiative)
            label(kit, run, "pass" if truth else "fail")
        elif case == 7:  # judged, not labelled yet
            judge(kit, run, verdict, model=model, initiative=initiative)
        elif case == 8:  # only skipped
            judge(kit, run, "SKIPPED", model=model, initiative=initiative)
        elif i % 20 == 9:  # labelled, never judged
            label(kit, run, "pass" if truth else "fail")
        # else: registered, nothing else yet
        if i % 13 == 0 and case <= 5:  # judged and labelled, then skipped on a re-run
            judge(kit, run, "SKIPPED", model=model, initiative=initiative)


def union_kit(folder: Path, *kits: Kit) -> Kit:
    """A kit holding every record of ``kits``, each kind in (recorded_at, record_id) order."""
    union = new_kit(folder)
    for kind in LEDGER_KINDS:
        found = [record for kit in kits for _, record in records_with_digests(kit.store, kind)]
        found.sort(key=lambda r: (r["recorded_at"], r["record_id"]))
        if found:
            append(union.store, kind, lambda found=found: Draft(found))
    return union


def bulk_labels(
    kit: Kit, count: int, *, prefix: str = "bulk", note_bytes: int = 20_000, batch: int = 100
) -> None:
    """``count`` schema-valid PM labels with long notes, through the store's append path
    in batches: many bytes for a sync to copy, from few records (each record is
    validated against its schema, which costs far more per record than its size)."""
    from pmos.gate.versions import LABEL_SCHEMA_VERSION
    from pmos.store.append import record_meta

    for start in range(0, count, batch):
        records = [
            {
                **record_meta("acceptances"),
                "schema_version": LABEL_SCHEMA_VERSION,  # as pmos accept writes them
                "run_id": f"{prefix}-{i:07d}",
                "label": "pass" if i % 3 else "fail",
                "by": "pm-bulk",
                "note": f"{i} " + "review notes " * (note_bytes // 13),
                "gate_verdict": None,
                "gate_record_id": None,
            }
            for i in range(start, min(count, start + batch))
        ]
        append(kit.store, "acceptances", lambda records=records: Draft(records))
