"""The ledger kinds: the one place that says which kinds of record pmos stores.

Each kind names its JSON Schema (the one source of truth for its shape), the
folder it lives in by default, the prefix of its record ids and the fields
``pmos ledger show`` tabulates. Everything else that is specific to a kind
(who may write it, which rules it obeys) belongs to the writer of that kind;
the store treats every kind alike.
"""

from __future__ import annotations

from typing import NamedTuple

from pmos.errors import BadInput


class LedgerKind(NamedTuple):
    """One kind of ledger: its config key, the schema of its records, its default
    location, the prefix of its record ids and the fields ``pmos ledger show`` tabulates."""

    name: str
    schema: str
    default_path: str
    id_prefix: str
    columns: tuple[str, ...] = ()
    #: A kind added after kits were made: a kit without its folder simply has no
    #: such record yet (its first writer creates the folder), where a missing
    #: folder of any other kind is a loss to report.
    late: bool = False


LEDGER_KINDS: dict[str, LedgerKind] = {
    k.name: k
    for k in (
        LedgerKind(
            "runs", "run", "state/runs", "run", ("run_id", "initiative_id", "builder_model")
        ),
        LedgerKind(
            "evals",
            "verdict",
            "state/evals",
            "ev",
            ("run_id", "verdict", "score", "evaluator_model", "flags"),
        ),
        LedgerKind(
            "acceptances",
            "acceptance",
            "state/acceptances",
            "acc",
            ("run_id", "label", "by", "gate_verdict"),
        ),
        LedgerKind(
            "assessments",
            "assessment",
            "state/assessments",
            "as",
            ("task_id", "run_id", "trigger", "attempt", "passed"),
        ),
        LedgerKind(
            "task-evals",
            "task-eval",
            "state/task-evals",
            "te",
            ("task_id", "run_id", "overallScore", "band"),
        ),
        LedgerKind(
            "followups",
            "followup",
            "state/followups",
            "fu",
            ("run_id", "title", "severity", "state", "suppressedReason"),
        ),
        LedgerKind("tasks", "task", "state/tasks", "tk", ("task_id", "event", "state", "title")),
        LedgerKind("policy", "policy-approval", "state/policy", "pa", ("by", "note"), late=True),
    )
}

#: The schema names of ledger records; only the store validates records against them.
RECORD_SCHEMAS = frozenset(k.schema for k in LEDGER_KINDS.values())


def kind_of(name: str) -> LedgerKind:
    try:
        return LEDGER_KINDS[name]
    except KeyError:
        raise BadInput(f"unknown ledger kind {name!r}; known: {', '.join(LEDGER_KINDS)}") from None
