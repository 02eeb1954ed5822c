"""Imports sit at the top of their module, except those of costly or optional libraries.

A function-level import hides an edge of the import graph from whoever reads the
module's head, so pmos keeps one only where loading at start-up would cost every
command, or where the library is an optional extra: a library in
:data:`ALLOWED` (each with its reason), or a pmos module that loads one of them
as it is imported (found by following the module-level imports of pmos's own
sources, so deferring the module defers that library). Each such import says why
in a comment on its line, or on the line above its group of imports.

The sources are parsed with :mod:`ast`; nothing is imported.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

#: Libraries a function may import, and why they are not imported at start-up.
ALLOWED = {
    "numpy": "about 0.2 s to import; the statistics need it, readers such as 'pmos queue' never",
    "sklearn": "scikit-learn brings scipy: about a second, for the calibration metrics alone",
    "jsonschema": "the Python validator (about 0.2 s) only words what jsonschema-rs refused",
    "referencing": "jsonschema's registry of schemas, loaded with the Python validator",
    "markdown_it": "about 0.1 s, for the few commands that parse a Markdown body",
    "cryptography": "about 50 ms, for signing and checking signatures alone",
    "sshsig": "the allowed-signers parser, which loads cryptography as it is imported",
    "msgspec": "about 30 ms, on the first typed read: writers and 'ledger show' never need it",
    "matplotlib": "the optional 'board' extra, and heavy",
    "jinja2": "the optional 'board' extra",
    "markupsafe": "the optional 'board' extra (Jinja2's escaping)",
    "psycopg": "the optional 'postgres' extra",
    "mcp": "the optional 'mcp' extra (the MCP SDK)",
    "anyio": "the MCP SDK's event loop, installed with the 'mcp' extra",
    "playwright": "the browser driver of the board's test, never needed by pmos itself",
}

#: pmos modules that load none of the above but are deferred all the same, by a
#: requirement a test holds: (importing module, imported module) -> why.
DEFERRED = {
    ("pmos.mcp.tools", "pmos.tasks.evidence"): (
        "the MCP server starts without the evidence readers (tests/test_mcp.py)"
    ),
}


@dataclass(frozen=True)
class Found:
    """One function-level import: where it is, what it imports, and what is wrong."""

    path: str
    line: int
    module: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.module}: {self.problem}"


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(node: ast.Import | ast.ImportFrom, known: set[str]) -> list[str]:
    """The modules an import statement loads: each named module, its parents, and
    for ``from M import N`` the module ``M.N`` where pmos has one."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        targets = [base] + [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]
    for target in targets:
        parts = target.split(".")
        names += [".".join(parts[: i + 1]) for i in range(len(parts))]
    return names


def _load_time_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is imported: not those in a
    function body, nor those under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def walk(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.append(node)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            elif isinstance(node, ast.If) and _is_type_checking(node):
                walk(node.orelse)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(node, field, None)
                    if isinstance(inner, list):
                        walk([n for n in inner if isinstance(n, ast.stmt | ast.ExceptHandler)])
                if isinstance(node, ast.ExceptHandler):
                    walk(node.body)

    walk(tree.body)
    return found


class Sources:
    """pmos's modules, parsed, and what each loads as it is imported."""

    def __init__(self, files: dict[str, str], paths: dict[str, str] | None = None) -> None:
        self.files = files  # module name -> source text
        self.trees = {name: ast.parse(text) for name, text in files.items()}
        #: module name -> its file, relative to the source root
        self.paths = paths or {name: name.replace(".", "/") + ".py" for name in files}

    @classmethod
    def of(cls, src: Path) -> Sources:
        found = sorted((src / "pmos").rglob("*.py"))
        files = {_module_name(p, src): p.read_text(encoding="utf-8") for p in found}
        paths = {_module_name(p, src): p.relative_to(src).as_posix() for p in found}
        return cls(files, paths)

    @cache  # noqa: B019 (one Sources per test run)
    def loads(self, module: str) -> frozenset[str]:
        """Every module importing ``module`` loads: pmos's own followed through their
        load-time imports, other libraries by their top-level name only."""
        seen: set[str] = set()
        libraries: set[str] = set()
        todo = [module]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            if name not in self.trees:
                if not name.startswith("pmos"):
                    libraries.add(name.split(".")[0])
                continue
            parts = name.split(".")
            todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # its packages
            for node in _load_time_imports(self.trees[name]):
                todo += _imported(node, set(self.trees))
        return frozenset(libraries)

    def problems(self) -> list[Found]:
        out: list[Found] = []
        for name, tree in self.trees.items():
            comments = _comment_lines(self.files[name])
            for function in ast.walk(tree):
                if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for node in ast.walk(function):
                    if isinstance(node, ast.Import | ast.ImportFrom):
                        out += self._check(name, function, node, comments)
        return sorted(set(out), key=lambda f: (f.path, f.line, f.module))

    def _check(
        self,
        name: str,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        node: ast.Import | ast.ImportFrom,
        comments: set[int],
    ) -> list[Found]:
        out: list[Found] = []
        module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
        module = module or ""
        if module.split(".")[0] in ALLOWED or (name, module) in DEFERRED:
            heavy = True
        elif module.startswith("pmos"):
            heavy = any(self.loads(m) & ALLOWED.keys() for m in _imported(node, set(self.trees)))
        else:
            heavy = False
        path = self.paths[name]
        if not heavy:
            out.append(Found(path, node.lineno, module, "import it at the top of the module"))
        elif not _explained(function, node, comments):
            out.append(Found(path, node.lineno, module, "say why it is imported here"))
        return out


def _comment_lines(text: str) -> set[int]:
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return {t.start[0] for t in tokens if t.type == tokenize.COMMENT}


def _explained(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    node: ast.Import | ast.ImportFrom,
    comments: set[int],
) -> bool:
    """A comment on the import's lines, or on the line above its group: the import
    statements of the function on consecutive lines."""
    starts = {
        n.lineno: n.end_lineno or n.lineno
        for n in ast.walk(function)
        if isinstance(n, ast.Import | ast.ImportFrom)
    }
    ends = {end: start for start, end in starts.items()}
    first = node.lineno
    lines = set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    while first - 1 in ends:  # the group's earlier imports
        first = ends[first - 1]
        lines |= set(range(first, starts[first] + 1))
    return bool(lines & comments) or first - 1 in comments


@pytest.fixture(scope="module")
def sources() -> Sources:
    return Sources.of(SRC)


def test_every_function_level_import_is_of_a_costly_or_optional_library(sources: Sources):
    found = sources.problems()
    assert not found, "\n".join(map(str, found))


def _sources(**modules: str) -> Sources:
    return Sources({"pmos": "", **{f"pmos.{k}": v for k, v in modules.items()}})


def test_a_function_level_import_of_a_light_module_is_refused():
    found = _sources(
        a="def f():\n    import json  # a reason does not make it costly\n",
        b="def g():\n    from pmos import c  # c loads nothing costly\n",
        c="import os\n",
    ).problems()
    assert [(f.path, f.module, f.problem) for f in found] == [
        ("pmos/a.py", "json", "import it at the top of the module"),
        ("pmos/b.py", "pmos", "import it at the top of the module"),
    ]


def test_a_costly_library_imported_in_a_function_must_say_why():
    found = _sources(
        a="def f():\n    import numpy as np\n\n    return np\n",
        b="def g():\n    # the statistics alone need it\n    import numpy\n    import sklearn\n",
        c="def h():\n    import numpy  # 0.2 s\n",
    ).problems()
    assert [(f.path, f.problem) for f in found] == [("pmos/a.py", "say why it is imported here")]


def test_a_pmos_module_that_loads_a_costly_library_may_be_imported_late():
    found = _sources(
        stats="import numpy as np\n",
        metrics="from pmos import stats\n",
        light="import os\n\nif TYPE_CHECKING:\n    import numpy\n",
        cli="def f():\n    from pmos.metrics import x  # numpy, through stats\n"
        "def g():\n    from pmos import light  # deferred for nothing\n",
    ).problems()
    assert [(f.path, f.module) for f in found] == [("pmos/cli.py", "pmos")]
