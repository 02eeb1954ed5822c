"""The store's monopoly is a rule, not a habit: these tests fail when it is broken.

Every record enters a ledger through the store's one
append path, which validates it; no other module writes ledger files,
validates records against a ledger schema by itself, or vouches for a record
as validated (a store Sealed record).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from pmos.store.registry import RECORD_SCHEMAS

SRC = Path(__file__).resolve().parents[1] / "src" / "pmos"
#: pmos's packages. Which may import which is import-linter's contracts in
#: pyproject.toml (tests/test_import_contracts.py); here only the store's own rules.
PACKAGES = (
    "store",
    "kit",
    "gate",
    "calibration",
    "assess",
    "tasks",
    "board",
    "db",
    "mcp",
    "merge",
    "cli",
)


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in PACKAGES:
        return parts[1]
    return "foundation"


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.append((".".join(parts), path))
    return out


@cache
def _tree(path: Path) -> ast.Module:
    """Each module is parsed once, though several tests read it."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every pmos module ``path`` imports, at any depth (function bodies included)."""
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("pmos")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "pmos":
                found += [(node.lineno, f"pmos.{a.name}") for a in node.names]
            elif node.module.startswith("pmos."):
                found.append((node.lineno, node.module))
    return found


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            yield name, node


#: Modules outside the store that create write-once files with pmos.atomic: the
#: module itself, and the override log (entries of the exemplar log, not records).
ATOMIC_WRITERS = {"pmos.atomic", "pmos.gate.exemplars"}


#: Calls only the store makes: writing ledger files, and vouching that a record
#: was validated (a Sealed record is written as it is, see pmos.store.append.seal).
STORE_ONLY_CALLS = (
    "LedgerWriter",
    "append_with",
    "write_record",
    "write_pack",
    "encode_line",
    "Sealed",
)


def _store_only_problems(
    module: str, tree: ast.Module, imports: list[tuple[int, str]]
) -> list[str]:
    problems = [
        f"line {line}: imports {target}"
        for line, target in imports
        if target.startswith("pmos.store.")
        and target.split(".")[2].startswith(("chain", "files", "packs", "lines"))
    ]
    for name, node in _calls(tree):
        first = node.args[0] if node.args else None
        if name == "validate" and isinstance(first, ast.Constant) and first.value in RECORD_SCHEMAS:
            problems.append(f"line {node.lineno}: validates a {node.args[0].value} record")
        if name in STORE_ONLY_CALLS:
            problems.append(f"line {node.lineno}: calls {name}")
        if name in ("write_once", "write_many") and module not in ATOMIC_WRITERS:
            problems.append(f"line {node.lineno}: calls {name}")
    return problems


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_only_the_store_writes_or_validates_records(module: str, path: Path):
    if _layer(module) == "store":
        return
    problems = _store_only_problems(module, _tree(path), _imports(path))
    assert not problems, f"{module} writes or validates records outside the store: {problems}"


def test_the_checks_above_can_fail(tmp_path: Path):
    """A module that validates a record by itself is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from pmos import schemas\nfrom pmos.cli import app\nschemas.validate('verdict', {})\n"
    )
    tree = ast.parse(bad.read_text())
    assert any(n == "validate" and c.args[0].value in RECORD_SCHEMAS for n, c in _calls(tree))
    assert _imports(bad) == [(1, "pmos.schemas"), (2, "pmos.cli")]
    forged = "from pmos.store.append import Sealed\nSealed('runs', {}, 'n.json', b'{}')\n"
    problems = _store_only_problems("pmos.gate.bad", ast.parse(forged), [])
    assert problems == ["line 2: calls Sealed"]
