"""Verified means checkable: evidence behind ``verified: true`` points at something
pmos can resolve.

A criterion or dimension marked ``verified: true`` says the evaluator checked it;
its ``evidence`` must then cite at least one pointer of a form pmos resolves, and
every pointer it cites must resolve. The forms (docs/reference/writers.md,
"Evidence pointers"):

* a file path, with an optional line or line range or test name:
  ``src/api/items.py``, ``src/api/items.py:41``, ``src/api/items.py:35-48``,
  ``tests/test_api.py::test_404``. When the run names its local repository and
  head revision (``pmos run register --repo . --head REV``), the file must exist
  at that revision and hold those lines; otherwise the path is taken by its form.
* an assessment check of the run: ``check:ASSESSMENT_RECORD_ID#INDEX`` (one
  check, its recorded command output among its fields), ``check:ASSESSMENT_RECORD_ID``
  (an assessment of the run) or ``check:CRITERION_ID`` (a check of one of the
  run's assessments that graded that criterion).

Evidence is prose around the pointers; words alone ("tested, works") are no
pointer. The writer resolves every pointer when a verdict is written. A stored
verdict (``schema_version`` 2) is checked again by the same rule
(:func:`evidence_problems`): every reader checks that each verified item cites a
pointer of a documented form (:data:`BY_FORM`, no git or file work, so the
readers stay fast); ``pmos ledger verify`` also resolves the pointers and the
exemplar names, as the writer does (:mod:`pmos.gate.stored_evidence`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pmos._util.git import Repository
from pmos.errors import GitError, Violation

#: How long reading one file of the run's head may take.
GIT_TIMEOUT_S = 60

RULE = "verified-evidence"
_PATH = r"(?:\./)?(?:[\w.@+-]+/)*[\w@+-][\w.@+-]*\.[A-Za-z][A-Za-z0-9]{0,11}"
_PATH_POINTER = re.compile(rf"(?P<path>{_PATH})(?:::\S+|:(?P<start>\d+)(?:-(?P<end>\d+))?)?")
_CHECK_POINTER = re.compile(r"check:(?P<id>[A-Za-z0-9][A-Za-z0-9._-]*)(?:#(?P<index>\d+))?")
_EDGES = "'\"`,;()[]<>{}"
FORMS = (
    "a file path (path, path:LINE, path:FIRST-LAST or path::test) or an assessment check "
    "of the run (check:ASSESSMENT_ID#INDEX, check:ASSESSMENT_ID or check:CRITERION_ID)"
)


@dataclass(frozen=True)
class Pointer:
    text: str
    path: str | None = None
    start: int | None = None
    end: int | None = None
    check: str | None = None
    index: int | None = None


def pointers(evidence: str) -> list[Pointer]:
    """Every pointer the evidence text cites, in order."""
    found = []
    for word in evidence.split():
        token = word.strip(_EDGES)
        if token.endswith(".") and not _PATH_POINTER.fullmatch(token):
            token = token[:-1]
        check = _CHECK_POINTER.fullmatch(token)
        if check:
            index = check.group("index")
            found.append(Pointer(token, check=check.group("id"), index=_int(index)))
            continue
        path = _PATH_POINTER.fullmatch(token)
        if path and not token.startswith(("http:", "https:")):
            start = _int(path.group("start"))
            end = _int(path.group("end")) or start
            found.append(Pointer(token, path=path.group("path"), start=start, end=end))
    return found


def _int(text: str | None) -> int | None:
    return int(text) if text is not None else None


def _items(verdict: dict[str, Any]) -> Iterable[tuple[str, dict[str, Any]]]:
    dimensions = verdict.get("dimensions")
    if isinstance(dimensions, dict):
        for name, item in dimensions.items():
            if isinstance(item, dict):
                yield f"dimensions/{name}/evidence", item
    criteria = verdict.get("criteria")
    if isinstance(criteria, list):
        for i, item in enumerate(criteria):
            if isinstance(item, dict):
                yield f"criteria/{i}/evidence", item


class Resolver:
    """Resolves pointers against one run: its repository at its head, its assessments."""

    def __init__(
        self,
        repository: Path | None,
        head: str | None,
        assessments: Callable[[], list[dict[str, Any]]],
    ) -> None:
        self.repository, self.head = repository, head
        self._assessments = assessments
        self._loaded: list[dict[str, Any]] | None = None
        self._lines: dict[str, int | None] = {}
        self._repository: Repository | None = None

    def assessments(self) -> list[dict[str, Any]]:
        if self._loaded is None:
            self._loaded = self._assessments()
        return self._loaded

    def problem(self, pointer: Pointer) -> str | None:
        if pointer.check is not None:
            return self._check_problem(pointer)
        if self.repository is None or self.head is None or pointer.path is None:
            return None  # the run names no local repository: the path is taken by its form
        lines = self._line_count(pointer.path)
        if lines is None:
            return f"{pointer.path} is not a file at the run's head {self.head[:12]}"
        start, end = pointer.start, pointer.end
        if start is not None and end is not None and not 1 <= start <= end <= lines:
            return (
                f"{pointer.text}: lines {start}-{end} are not in {pointer.path} "
                f"({lines} lines at the run's head {self.head[:12]})"
            )
        return None

    def _line_count(self, path: str) -> int | None:
        """Lines of ``path`` at the run's head, read through the one hardened git
        runner; None when it is no file there or the repository cannot be read."""
        if path not in self._lines:
            try:
                data: bytes | None = self._repo().run(
                    "cat-file", "blob", f"{self.head}:{path.removeprefix('./')}"
                )
            except GitError:
                data = None
            if data is None:
                self._lines[path] = None
            else:
                self._lines[path] = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        return self._lines[path]

    def _repo(self) -> Repository:
        if self._repository is None:
            assert self.repository is not None  # problem() checked
            self._repository = Repository(self.repository, timeout=GIT_TIMEOUT_S)
        return self._repository

    def _check_problem(self, pointer: Pointer) -> str | None:
        found = self.assessments()
        if pointer.index is not None:
            for record in found:
                if record.get("record_id") == pointer.check:
                    indexes = [c.get("index", i) for i, c in enumerate(record.get("checks", []))]
                    if pointer.index in indexes:
                        return None
                    return (
                        f"{pointer.text}: assessment {pointer.check} has no check {pointer.index}"
                    )
            return f"{pointer.text}: the run has no assessment {pointer.check}"
        for record in found:
            if record.get("record_id") == pointer.check:
                return None
            if any(c.get("criterion_id") == pointer.check for c in record.get("checks", [])):
                return None
        return (
            f"{pointer.text}: no assessment of the run is {pointer.check}, nor has a check of "
            "that criterion ('pmos assess history' lists them)"
        )


class _ByForm:
    """A resolver that takes every pointer by its form (what every reader checks)."""

    def problem(self, pointer: Pointer) -> str | None:
        return None


#: Checks that verified evidence cites pointers of a documented form, resolving none.
BY_FORM: Any = _ByForm()


def evidence_problems(verdict: dict[str, Any], resolver: Resolver) -> list[Violation]:
    """Every ``verified: true`` criterion or dimension whose evidence cites no pointer,
    or a pointer that does not resolve."""
    problems = []
    for where, item in _items(verdict):
        if item.get("verified") is not True:
            continue
        evidence = item.get("evidence")
        cited = pointers(evidence) if isinstance(evidence, str) else []
        if not cited:
            problems.append(
                Violation(
                    RULE,
                    where,
                    f"verified: true cites no evidence pmos can check: give {FORMS}, or set "
                    "verified: false",
                )
            )
            continue
        for pointer in cited:
            problem = resolver.problem(pointer)
            if problem is not None:
                problems.append(Violation(RULE, where, f"{problem}: the pointer does not resolve"))
    return problems


def exemplar_problems(verdict: dict[str, Any], known: Callable[[], set[str]]) -> list[Violation]:
    """Exemplar names a verdict anchored on must be calibration cases the kit has."""
    names = verdict.get("exemplars")
    if not isinstance(names, list) or not names:
        return []
    have = known()
    return [
        Violation(
            "exemplar-unknown",
            f"exemplars/{i}",
            f"{name!r} is no calibration case of this kit ('pmos exemplars' lists them)",
        )
        for i, name in enumerate(names)
        if name not in have
    ]
