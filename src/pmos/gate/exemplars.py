"""The exemplar log and the calibration anchors an evaluator scores against.

The exemplar log (``planning/evals/exemplars.yaml`` by default) is data: a YAML
mapping whose ``entries`` list holds the calibration cases written by hand, in
the shape of ``schemas/exemplar-log.schema.json`` (each entry
``schemas/exemplar.schema.json``)::

    entries:
      - case_id: run-42-override-20261130T081500Z
        run_id: run-42
        gate_verdict: PASS
        pm_label: fail
        override: true
        lesson: The retry loop swallowed the timeout; the gate read the green test as proof.
        recorded_at: '2026-11-30T08:15:00Z'

People read it rendered as Markdown (:func:`render_markdown`, ``pmos exemplars
--log``). A malformed log is refused as a whole, with every problem and its
line, because anchors read from a half-parsed log would silently drop the very
cases (overrides) that keep the gate honest.

Override entries are written by the library only: ``pmos accept`` calls
:func:`prepare_override` when a PM label disagrees with the gate, and the entry goes
into a file of its own beside the log (``planning/evals/overrides/<case>.yaml``,
one entry mapping,
the ``override_dir`` of pmos.yaml), written once and never appended to: two
branches that each log an override then change different paths and merge
cleanly, and logging costs the same however long the log has grown. The log
is the hand-written entries plus every file of that folder. Anchors are
picked from the paired ledgers (each run's latest PM label and the verdict it
judges, by calibration's pairing rule, :func:`pmos.gate.latest.judged_by`) and
from the log, balanced across the PM's pass and fail labels.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from pmos import schemas
from pmos.atomic import discard, publish, write_temp
from pmos.errors import BadInput, SinkRefused
from pmos.gate.latest import judged_by, per_run, verdicts_per_run
from pmos.gate.screen import KitScreen
from pmos.gate.vocabulary import PASS_SIDE, SKIPPED, is_judged
from pmos.inputs import read_input_text
from pmos.kit import Kit
from pmos.paths import is_below, resolve_inside
from pmos.store import lookup
from pmos.store.read import records
from pmos.store.rows import row_type
from pmos.store.screening import Excluded
from pmos.text import neutralise
from pmos.timestamps import compact, parse_instant
from pmos.yamlio import load_yaml

DEFAULT_LOG = "planning/evals/exemplars.yaml"
#: The suffix of an override entry file in the override folder.
ENTRY_SUFFIX = ".yaml"
DEFAULT_OVERRIDE_DIR = "planning/evals/overrides"
MIN_ANCHORS, MAX_ANCHORS = 2, 4

_UNSAFE_ID = re.compile(r"[^A-Za-z0-9._-]+")
#: Characters that break a line for YAML besides \n: written only as escapes, so
#: an entry keeps its lines (see render_entry).
_ESCAPED_BREAKS = re.compile("[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


class ExemplarLogError(BadInput):
    """The exemplar log cannot be used; ``problems`` lists (line, message) pairs."""

    def __init__(self, path: str, problems: list[tuple[int, str]]) -> None:
        self.path = path
        self.problems = problems
        lines = "\n".join(f"  - {path}:{line}: {msg}" for line, msg in problems)
        super().__init__(
            f"{path} is not a valid exemplar log ({len(problems)} problem(s)); "
            f"fix it by hand, nothing was changed:\n{lines}"
        )


def _yaml_loader() -> type[yaml.SafeLoader]:
    """A safe loader that keeps timestamps as strings (the schema wants RFC 3339 text)."""

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {
        first: [r for r in resolvers if r[0] != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return Loader


def is_override(gate_verdict: str, pm_label: str) -> bool:
    """A PM label overrides the gate when it lands on the other side of pass/fail."""
    return (gate_verdict in PASS_SIDE) != (pm_label == "pass")


# ---------------------------------------------------------------- parsing


def _load(text: str, source: str) -> tuple[Any, Any]:
    """The YAML document of ``text`` and its node tree (for lines); a
    :class:`ExemplarLogError` when it is not YAML (repeated keys included)."""
    loader = _yaml_loader()
    try:
        data = load_yaml(text, loader)
        node = yaml.compose(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark else 1
        raise ExemplarLogError(source, [(line, f"not valid YAML: {exc}")]) from None
    return data, node


def _item_lines(node: Any) -> list[int]:
    """The line of each item of the log's ``entries`` list (1-based)."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == "entries" and isinstance(value, yaml.SequenceNode):
                return [item.start_mark.line + 1 for item in value.value]
    return []


def parse_log(text: str, source: str = "the text") -> list[dict[str, Any]]:
    """Every entry of a log's text, validated; raises :class:`ExemplarLogError`."""
    data, node = _load(text, source)
    if data is None:
        data = {"entries": []}  # an empty file holds no entry
    found = schemas.validate("exemplar-log", data)
    if found:
        at = _item_lines(node)

        def line_of(field: str) -> int:
            parts = field.split("/")
            if len(parts) > 1 and parts[0] == "entries" and parts[1].isdigit():
                index = int(parts[1])
                return at[index] if index < len(at) else 1
            return 1

        problems = [(line_of(v.field), f"{v.field}: {v.message}") for v in found]
        raise ExemplarLogError(source, problems)
    lines = _item_lines(node)
    return _checked(list(zip(lines, data["entries"], strict=True)), source)


def parse_entry(text: str, source: str = "the text") -> dict[str, Any]:
    """The one entry of an override entry file, validated."""
    data, _ = _load(text, source)
    if not isinstance(data, dict):
        raise ExemplarLogError(source, [(1, "an override entry is one YAML mapping")])
    found = schemas.validate("exemplar", data)
    if found:
        raise ExemplarLogError(source, [(1, f"{v.field}: {v.message}") for v in found])
    return _checked([(1, data)], source)[0]


def _checked(entries: list[tuple[int, dict[str, Any]]], source: str) -> list[dict[str, Any]]:
    """The rules the schema cannot state: override matches the two labels, case
    ids are unique."""
    problems: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    for number, data in entries:
        case = data["case_id"]
        problems += [(number, f"entry {case!r}: {msg}") for msg in _entry_rules(data)]
        if case in seen:
            problems.append((number, f"case_id {case!r} repeats (first used on line {seen[case]})"))
        seen.setdefault(case, number)
    if problems:
        raise ExemplarLogError(source, problems)
    return [data for _, data in entries]


def _entry_rules(data: dict[str, Any]) -> list[str]:
    problems = []
    expected = is_override(data["gate_verdict"], data["pm_label"])
    if data["override"] != expected:
        problems.append(
            f"override is {str(data['override']).lower()}, but gate_verdict "
            f"{data['gate_verdict']} and pm_label {data['pm_label']} give "
            f"{str(expected).lower()}"
        )
    return problems


# ---------------------------------------------------------------- the log file


def log_path(kit: Kit) -> Path:
    """The configured exemplar log: a plain file path inside the kit root."""
    configured = kit.config.raw.get("exemplar_log", DEFAULT_LOG)
    return resolve_inside(kit.root, configured, what="exemplar_log", for_writing=True)


def _display(kit: Kit, path: Path) -> str:
    try:
        return path.relative_to(Path(os.path.realpath(kit.root))).as_posix()
    except ValueError:
        return str(path)


def read_log(kit: Kit, *, main_only: bool = False) -> list[dict[str, Any]]:
    """The log's entries: the log file's, then each override file's (by name).

    A missing log or folder has none. A case id used twice is refused.
    """
    path = log_path(kit)
    entries: list[dict[str, Any]] = []
    if path.exists() or path.is_symlink():
        text = read_input_text(path, what="the exemplar log", stdin_ok=False)
        entries = parse_log(text, _display(kit, path))
    if main_only:
        return entries
    seen = {e["case_id"] for e in entries}
    for file in _override_files(kit):
        text = read_input_text(file, what="an override entry", stdin_ok=False)
        entry = parse_entry(text, _display(kit, file))
        if entry["case_id"] in seen:
            raise ExemplarLogError(
                _display(kit, file), [(1, f"case {entry['case_id']!r} is logged twice")]
            )
        seen.add(entry["case_id"])
        entries.append(entry)
    return entries


def render_entry(entry: dict[str, Any]) -> str:
    """An entry as an override entry file's YAML; checked by parsing it back
    before anyone writes it."""

    class Dumper(yaml.SafeDumper):
        pass

    def text_style(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = "|" if "\n" in value else None
        if _ESCAPED_BREAKS.search(value):
            # A line or paragraph separator or NEL is a line break to YAML: double
            # quotes write them as escapes (\L, \P, \N), so the text reads back.
            style = '"'
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text_style)
    text = yaml.dump(entry, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=88)
    if parse_entry(text, "new entry") != entry:
        raise BadInput(f"entry {entry['case_id']!r} does not survive a round trip; not written")
    return text


def render_markdown(entries: list[dict[str, Any]], source: str) -> str:
    """The log for people: a heading per case, its fields, its lesson as a quote.
    Every value is shown as text, never as Markdown markup of its own."""
    out = [
        f"# Exemplar log ({len(entries)} case(s))",
        "",
        f"Read from {_md_text(source)} and its override entries, in that order.",
    ]
    for entry in entries:
        out += ["", f"## {_md_text(entry['case_id'])}", ""]
        for name, value in entry.items():
            if name in ("case_id", "lesson"):
                continue
            shown = str(value).lower() if isinstance(value, bool) else str(value)
            out.append(f"- {name}: {_md_text(shown)}")
        out += ["", *(f"> {_md_text(line)}" for line in str(entry["lesson"]).splitlines())]
    return "\n".join(out) + "\n"


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|~])")


def _md_text(text: str) -> str:
    """``text`` with every Markdown punctuation character escaped."""
    return _MD_SPECIAL.sub(r"\\\1", neutralise(text))


def _case_base(run_id: str | None) -> str:
    return _UNSAFE_ID.sub("-", run_id or "").strip("-._")[:150] or "run"


def case_id_for(run_id: str, stamp: datetime, label_record_id: str = "") -> str:
    """``<run>-override-<UTC second>[-<label id suffix>]``: unique across branches too,
    since the suffix is the random part of the label's record id."""
    suffix = label_record_id.rsplit("-", 1)[-1] if label_record_id else ""
    tail = f"-{_UNSAFE_ID.sub('', suffix)[:8]}" if suffix else ""
    return f"{_case_base(run_id)}-override-{compact(stamp)}{tail}"


def overridden_verdict(
    kit: Kit, run_id: str, label: str, judged: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The verdict a new PM label would override, after checking the log can take it.

    ``judged`` is the verdict the label judges when the PM named one
    (``pmos accept --verdict``); by default it is the run's latest judged
    verdict. Runs before the label is stored, so a malformed log refuses the
    label (nothing written) instead of losing the override entry afterwards.
    """
    verdict = judged or lookup.latest_verdict(kit.store, run_id, where=is_judged)
    if verdict is None or not is_override(verdict["verdict"], label):
        return None
    read_log(kit, main_only=True)  # the hand-written part; override files are read per run
    return verdict


class PendingOverride:
    """An override entry written to a temporary file of the override folder, ready to
    be published once the label it belongs to is stored (:func:`prepare_override`)."""

    def __init__(
        self,
        kit: Kit,
        temp: Path | None,
        case: str | None,
        what: str,
        made: list[Path] | None = None,
    ) -> None:
        self.kit, self.temp, self.case, self.what = kit, temp, case, what
        #: Folders made for the entry, outermost first: removed again by discard.
        self._made = made or []

    def publish(self) -> str:
        """Give the entry its name; returns what happened, in words."""
        shown = _display(self.kit, log_path(self.kit))
        if self.temp is None or self.case is None:
            return f"{self.what}; the exemplar log {shown} already holds this override"
        try:
            final = publish(self.temp, f"{self.case}{ENTRY_SUFFIX}")
        except OSError as exc:  # the folder was writable a moment ago, under the lock
            return (
                f"{self.what}, but the override could NOT be logged: {exc}. Record the same "
                "label again to log it"
            )
        return (
            f"{self.what}: logged to {_display(self.kit, final)} (part of the exemplar log "
            f"{shown}) as case {self.case}; write its lesson there if it is pending"
        )

    def discard(self) -> None:
        """The label was not stored: leave the override folder as it was."""
        if self.temp is not None:
            discard(self.temp)
            self.temp = None
        for folder in reversed(self._made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        self._made = []


def prepare_override(
    kit: Kit, acceptance: dict[str, Any], verdict: dict[str, Any]
) -> PendingOverride:
    """The override entry of a PM label about to be stored, written to a temporary
    file in the override folder before the label is stored: a label and its
    override are recorded both or neither. A log that cannot take the entry (a
    malformed log, an override folder that is a symlink, leaves the kit, or cannot
    be written) raises :class:`BadInput`, and the label is refused with nothing
    written. Call :meth:`PendingOverride.publish` once the label is stored, and
    :meth:`PendingOverride.discard` if it is not."""
    run_id, label = acceptance["run_id"], acceptance["label"]
    what = f"the PM label {label} overrides the gate's {verdict['verdict']} on run {run_id!r}"
    try:
        folder = override_dir(kit)
        read_log(kit, main_only=True)  # a malformed log is reported, not buried under new files
        mine = []
        for file in _override_files(kit, run_id):
            text = read_input_text(file, what="an override entry", stdin_ok=False)
            mine.append(parse_entry(text, _display(kit, file)))
    except (BadInput, SinkRefused) as exc:
        raise BadInput(f"{what}, and its override cannot be logged: {exc}") from None
    for entry in mine:
        if (
            entry["run_id"] == run_id
            and entry.get("gate_record_id") == verdict["record_id"]
            and entry["pm_label"] == label
        ):
            return PendingOverride(kit, None, None, what)
    entry = _override_entry(acceptance, verdict, {e["case_id"] for e in mine})
    made = [p for p in (folder, *folder.parents) if not p.exists() and not p.is_symlink()]
    made = [p for p in made if is_below(p, Path(os.path.realpath(kit.root)))]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        temp = write_temp(folder, render_entry(entry).encode())
    except OSError as exc:
        for p in sorted(made, key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                p.rmdir()
        raise BadInput(
            f"{what}, and its override cannot be logged to {_display(kit, folder)}: "
            f"{exc.strerror or exc}; fix the folder (override_dir in pmos.yaml), then record "
            "the label again"
        ) from None
    return PendingOverride(
        kit, temp, entry["case_id"], what, sorted(made, key=lambda p: len(p.parts))
    )


def override_dir(kit: Kit) -> Path:
    """The folder of override entries, one write-once file each: a plain path in the kit."""
    configured = kit.config.raw.get("override_dir", DEFAULT_OVERRIDE_DIR)
    return resolve_inside(kit.root, configured, what="override_dir", for_writing=True)


def _override_files(kit: Kit, run_id: str | None = None) -> list[Path]:
    """The override entry files, optionally only those of one run (by their names)."""
    folder = override_dir(kit)
    if not folder.is_dir():
        return []
    prefix = f"{_case_base(run_id)}-override-" if run_id is not None else ""
    return sorted(
        p for p in folder.iterdir() if p.name.endswith(ENTRY_SUFFIX) and p.name.startswith(prefix)
    )


def _override_entry(
    acceptance: dict[str, Any], verdict: dict[str, Any], taken: set[str]
) -> dict[str, Any]:
    recorded = acceptance["recorded_at"]
    stamp = parse_instant(recorded)
    case = base = case_id_for(acceptance["run_id"], stamp, acceptance.get("record_id", ""))
    n = 2
    while case in taken:
        case, n = f"{base}-{n}", n + 1
    note = (acceptance.get("note") or "").strip()
    if note:
        lesson = note
    elif verdict["verdict"] in PASS_SIDE:
        lesson = (
            f"Pending: the gate said {verdict['verdict']} and the PM rejected the run; "
            "write down the defect the gate missed and the probe that would have found it."
        )
    else:
        lesson = (
            "Pending: the gate said FAIL and the PM accepted the run; write down what the "
            "gate over-weighted."
        )
    entry: dict[str, Any] = {
        "case_id": case,
        "run_id": acceptance["run_id"],
        "gate_verdict": verdict["verdict"],
        "pm_label": acceptance["label"],
        "override": True,
        "lesson": lesson,
        "recorded_at": recorded,
        "by": acceptance["by"],
        "gate_record_id": verdict["record_id"],
        "acceptance_record_id": acceptance["record_id"],
    }
    if verdict.get("evaluator_model"):
        entry["evaluator_model"] = verdict["evaluator_model"]
    return entry


# ---------------------------------------------------------------- anchors


@dataclass
class Anchor:
    """One calibration case: how the gate judged a run and how the PM finally did."""

    case_id: str
    run_id: str
    gate_verdict: str
    pm_label: str
    recorded_at: str
    source: str
    lesson: str | None = None

    @property
    def side(self) -> str:
        return self.pm_label

    @property
    def override(self) -> bool:
        return is_override(self.gate_verdict, self.pm_label)

    @property
    def kind(self) -> str:
        if self.override:
            return "override"
        return "confirmed-pass" if self.pm_label == "pass" else "confirmed-fail"

    def as_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "run_id": self.run_id,
            "side": self.side,
            "kind": self.kind,
            "gate_verdict": self.gate_verdict,
            "pm_label": self.pm_label,
            "override": self.override,
            "lesson": self.lesson,
            "recorded_at": self.recorded_at,
            "source": self.source,
        }


@dataclass
class Selection:
    requested: int
    anchors: list[Anchor]
    available: dict[str, int]
    disclosures: list[str] = field(default_factory=list)
    #: Ledger records left out of the pool because they break a writer rule.
    excluded_records: list[dict[str, Any]] = field(default_factory=list)
    #: Override entries left out because no valid PM label backs them.
    unbacked_overrides: list[dict[str, Any]] = field(default_factory=list)

    @property
    def balanced(self) -> bool:
        sides = [sum(a.side == s for a in self.anchors) for s in ("pass", "fail")]
        return min(sides) > 0 and abs(sides[0] - sides[1]) <= 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "requested": self.requested,
            "anchors": [a.as_dict() for a in self.anchors],
            "available": self.available,
            "balanced": self.balanced,
            "disclosures": self.disclosures,
            "excluded_records": self.excluded_records,
            "unbacked_overrides": self.unbacked_overrides,
        }


_VERDICT = ("run_id", "verdict", "record_id", "recorded_at")
_LABEL = ("run_id", "label", "record_id", "recorded_at", "gate_record_id")


def candidates(
    kit: Kit,
    exclude_runs: Iterable[str] = (),
    *,
    excluded: Excluded | None = None,
    unbacked: list[dict[str, Any]] | None = None,
) -> list[Anchor]:
    """Every usable case, newest first: ledger pairs (with their log lesson) and log-only
    cases. Ledger records that break a writer rule are left out (reported to ``excluded``),
    and so are override entries no valid label backs (reported to ``unbacked``)."""

    skipped_runs = set(exclude_runs)
    judged_by_id: dict[str, Any] = {}

    def remember(rows: Iterable[Any]) -> Iterator[Any]:
        for row in rows:
            if row.verdict != SKIPPED:
                judged_by_id[row.record_id] = row
            yield row

    store, screen = kit.store, KitScreen(kit)
    excluded = Excluded() if excluded is None else excluded

    def read(kind: str, fields: tuple[str, ...]) -> Iterator[Any]:
        row = row_type(kind, fields)
        return records(store, kind, row=row, screen=screen, excluded=excluded)

    #: (run, label, verdict judged) of every valid label: what an override entry must match.
    given: set[tuple[str, str, str | None]] = set()

    def note_labels(rows: Iterable[Any]) -> Iterator[Any]:
        for row in rows:
            given.add((row.run_id, row.label, row.gate_record_id))
            yield row

    verdicts = verdicts_per_run(remember(read("evals", _VERDICT)))
    labelled = per_run(note_labels(read("acceptances", _LABEL)))
    # The ledger pairs, by calibration's rule: each run's latest label and the verdict it judges.
    labels: dict[str, Any] = {}
    pairs: dict[str, Any] = {}
    for run_id, span in labelled.items():
        label = labels[run_id] = span.latest
        seen = verdicts.get(run_id)
        if seen is None or seen.judged is None:
            continue
        named = judged_by_id.get(label.gate_record_id)
        subject = judged_by(label, seen.judged, named if named and named.run_id == run_id else None)
        if subject is not None:
            pairs[run_id] = subject
    entries = read_log(kit)
    written_by_hand = len(read_log(kit, main_only=True))
    # Override entries (files of override_dir, after the hand-written log) are anchors
    # only when a valid PM label in the ledger backs them: a file planted by hand, for
    # a run nobody labelled, never reaches an evaluator.
    backed = entries[:written_by_hand]
    for entry in entries[written_by_hand:]:
        if (entry["run_id"], entry["pm_label"], entry.get("gate_record_id")) in given:
            backed.append(entry)
        elif unbacked is not None:
            unbacked.append(
                {
                    "case_id": entry["case_id"],
                    "run_id": entry["run_id"],
                    "pm_label": entry["pm_label"],
                    "gate_record_id": entry.get("gate_record_id"),
                    "problem": "no valid PM label in the ledger matches this override entry "
                    "(run, label and the verdict it judges): not served as an anchor",
                }
            )
    entries = backed
    by_run: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        by_run.setdefault(entry["run_id"], []).append(entry)

    found: list[Anchor] = []
    for run_id, verdict in pairs.items():
        label = labels[run_id]
        if run_id in skipped_runs:
            continue
        matching = [e for e in by_run.get(run_id, []) if e["pm_label"] == label.label]
        newest = max(matching, key=lambda e: parse_instant(e["recorded_at"]), default=None)
        found.append(
            Anchor(
                case_id=newest["case_id"] if newest else run_id,
                run_id=run_id,
                gate_verdict=verdict.verdict,
                pm_label=label.label,
                recorded_at=label.recorded_at,
                source="ledgers+log" if newest else "ledgers",
                lesson=newest["lesson"] if newest else None,
            )
        )
    paired = {a.run_id for a in found}
    for entry in entries:
        run_id = entry["run_id"]
        # A run the ledgers pair is judged by its current label; a log entry that
        # disagrees with it is history the PM has since revised.
        if run_id in skipped_runs or run_id in paired or run_id in labels:
            continue
        found.append(
            Anchor(
                case_id=entry["case_id"],
                run_id=run_id,
                gate_verdict=entry["gate_verdict"],
                pm_label=entry["pm_label"],
                recorded_at=entry["recorded_at"],
                source="log",
                lesson=entry["lesson"],
            )
        )
    found.sort(key=lambda a: (parse_instant(a.recorded_at), a.case_id), reverse=True)
    return found


def select_anchors(kit: Kit, n: int = MAX_ANCHORS, exclude_runs: Iterable[str] = ()) -> Selection:
    """Pick ``n`` anchors, most recent first, half from each side of the PM's labels.

    The fail side gets the odd one (leniency is the failure this guards
    against). A short side is never filled from the other one: an unbalanced
    set is disclosed, not padded.
    """
    if not MIN_ANCHORS <= n <= MAX_ANCHORS:
        raise BadInput(f"--n must be from {MIN_ANCHORS} to {MAX_ANCHORS}, got {n}")
    excluded = Excluded()
    unbacked: list[dict[str, Any]] = []
    pool = candidates(kit, exclude_runs, excluded=excluded, unbacked=unbacked)
    sides = {s: [a for a in pool if a.side == s] for s in ("pass", "fail")}
    quota = {"fail": math.ceil(n / 2), "pass": n // 2}
    picked = sides["fail"][: quota["fail"]] + sides["pass"][: quota["pass"]]
    picked.sort(key=lambda a: (parse_instant(a.recorded_at), a.case_id), reverse=True)
    selection = Selection(n, picked, {s: len(v) for s, v in sides.items()})
    selection.disclosures = _disclose(selection, quota)
    selection.excluded_records = excluded.as_list()
    selection.unbacked_overrides = unbacked
    return selection


def _disclose(selection: Selection, quota: dict[str, int]) -> list[str]:
    have = selection.available
    if not have["pass"] and not have["fail"]:
        return [
            "No calibration case exists yet: no run has both a gate verdict and a PM label, "
            "and the exemplar log has no entry. Judge without anchors and say so in the "
            "verdict; an absent exemplar set is a leniency risk, not a licence."
        ]
    notes = []
    for side, other in (("fail", "pass"), ("pass", "fail")):
        if not have[side]:
            notes.append(
                f"No {side}-side case exists (no run the PM labelled {side}): every anchor "
                f"is a {other}. Say so in the verdict; a one-sided exemplar set is a "
                "leniency risk, never a reason to assume balance."
            )
        elif have[side] < quota[side]:
            notes.append(
                f"Only {have[side]} {side}-side case(s) exist, fewer than the "
                f"{quota[side]} wanted; the set was not padded from the {other} side."
            )
    return notes
