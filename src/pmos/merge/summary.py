"""The gate's report as Markdown: ``pmos gate --summary FILE`` and a CI job summary.

The same content as ``pmos gate --json``, for people: the decision, every
reason, the runs of the change, the policy changes and the integrity findings.
Text from records is escaped so that a run id cannot break the table or
inject a link.
"""

from __future__ import annotations

from typing import Any

_ESCAPE = str.maketrans({c: f"\\{c}" for c in "\\`*_{}[]<>#+!|"} | {"\n": " ", "\r": " "})


def _cell(value: Any) -> str:
    return "" if value is None else str(value).translate(_ESCAPE)


def markdown(report: dict[str, Any]) -> str:
    """The Markdown summary of a ``pmos gate --json`` report."""
    may = report["decision"] == "may-merge"
    base, head = report["base"], report["head"]
    lines = [
        f"## pmos gate: {'may merge' if may else 'may not merge'}",
        "",
        f"Base `{base['commit'][:12]}` ({_cell(base['revision'])}), head "
        f"`{head['commit'][:12]}` ({_cell(head['revision'])}), checked at {report['checked_at']}.",
        "",
    ]
    lines += [f"- {_cell(note)}" for note in report["notes"]]
    if report["reasons"]:
        lines += ["### Why it may not merge", ""]
        lines += [f"- {_cell(reason)}" for reason in report["reasons"]]
        lines.append("")
    if report["runs"]:
        lines += [
            "### Runs of the change",
            "",
            "| run | decision | mode | evaluator model | verdict | PM label |",
            "|---|---|---|---|---|---|",
        ]
        for run in report["runs"]:
            lines.append(
                "| "
                + " | ".join(
                    _cell(v) or "-"
                    for v in (
                        run["run_id"],
                        run["decision"],
                        run["mode"],
                        run["evaluator_model"],
                        run["verdict"],
                        run["label"],
                    )
                )
                + " |"
            )
        lines.append("")
    policy = report["policy_changes"]
    if policy["changed"]:
        state = "approved" if policy["approved"] else "not approved"
        lines += [f"### Policy changes ({state})", "", "| file | change |", "|---|---|"]
        lines += [f"| {_cell(c['path'])} | {c['change']} |" for c in policy["changed"]]
        lines.append("")
    if report["integrity"]:
        lines += ["### Integrity findings", ""]
        lines += [f"- {_cell(f['problem'])}" for f in report["integrity"]]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
