"""Rubrics: Markdown files whose YAML frontmatter states the scoring contract.

The frontmatter shape is checked by ``schemas/rubric.schema.json``; the rules a
schema cannot state (weights summing to 1, both axes present, unique names)
are checked here. A rubric is always read from inside the kit root, so a
verdict cannot point at a private, unreviewed rubric elsewhere on disk.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, NamedTuple

from pmos import schemas
from pmos.errors import BadInput, Violation
from pmos.markdown import split_frontmatter
from pmos.paths import resolve_inside

WEIGHT_TOLERANCE = 1e-6


class Dimension(NamedTuple):
    name: str
    weight: float
    axis: str
    description: str


class Rubric(NamedTuple):
    path: str  # relative to the kit root, as verdicts record it
    title: str | None
    threshold: float
    dimensions: tuple[Dimension, ...]
    body: str

    def dimension_map(self) -> dict[str, Dimension]:
        return {d.name: d for d in self.dimensions}

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "title": self.title,
            "threshold": self.threshold,
            "dimensions": [
                {"name": d.name, "weight": d.weight, "axis": d.axis, "description": d.description}
                for d in self.dimensions
            ],
            "body": self.body,
        }


class RubricError(BadInput):
    """The rubric cannot be used; ``violations`` lists every reason."""

    def __init__(self, path: str, violations: list[Violation]) -> None:
        self.violations = violations
        lines = "\n".join(f"  - {v}" for v in violations)
        super().__init__(f"rubric {path} is not valid:\n{lines}")


def resolve_rubric_path(root: Path, rubric_path: str) -> Path:
    """The rubric file ``rubric_path`` names, which must be a file inside ``root``."""
    real = resolve_inside(root, rubric_path, what="rubric", for_writing=False)
    if not real.is_file():
        found = ", ".join(list_rubrics(root)) or "none"
        raise BadInput(
            f"rubric {rubric_path!r} does not exist in the kit root {root} (rubric paths are "
            f"relative to the kit root, not to the working directory); rubrics found: {found}"
        )
    return real


def list_rubrics(root: Path) -> list[str]:
    """Kit-relative paths of the Markdown files with rubric frontmatter under ``planning/``.

    Named in the error for a rubric path that does not exist, so the fix is a copy away.
    """
    found = []
    for path in sorted((Path(root) / "planning").rglob("*.md")):
        if path.is_symlink() or not path.is_file():
            continue
        try:
            with path.open(encoding="utf-8") as handle:
                head = handle.read(4096)
        except (OSError, UnicodeDecodeError):
            continue
        if head.startswith("---") and "\ndimensions:" in head and "\nthreshold:" in head:
            found.append(path.relative_to(root).as_posix())
    return found


def load_rubric(root: Path, rubric_path: str) -> Rubric:
    real = resolve_rubric_path(root, rubric_path)
    rel = real.relative_to(Path(os.path.realpath(root))).as_posix()
    try:
        meta, body = split_frontmatter(real.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read rubric {rel}: {exc}") from None
    except ValueError as exc:
        raise RubricError(rel, [Violation("rubric-format", "(file)", str(exc))]) from None
    problems = schemas.validate("rubric", meta)
    if not problems:
        problems = _rules(meta)
    if problems:
        raise RubricError(rel, problems)
    dims = tuple(
        Dimension(d["name"], float(d["weight"]), d["axis"], d["description"])
        for d in meta["dimensions"]
    )
    return Rubric(rel, meta.get("title"), float(meta["threshold"]), dims, body)


def _rules(meta: dict[str, Any]) -> list[Violation]:
    dims = meta["dimensions"]
    problems: list[Violation] = []
    total = math.fsum(d["weight"] for d in dims)
    if abs(total - 1.0) > WEIGHT_TOLERANCE:
        problems.append(
            Violation("rubric-weights", "dimensions", f"weights sum to {total:.6g}, not 1")
        )
    axes = {d["axis"] for d in dims}
    for axis in ("spec", "standards"):
        if axis not in axes:
            problems.append(
                Violation("rubric-axes", "dimensions", f"no dimension on the {axis} axis")
            )
    names = [d["name"] for d in dims]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(Violation("rubric-names", "dimensions", f"dimension {name!r} repeats"))
    return problems
