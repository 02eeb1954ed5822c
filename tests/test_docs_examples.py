"""Every shell example in the documents runs, or says it is illustrative.

The documents are README.md, docs/ (the tutorial has its own test in
tests/test_docs.py), the skills and both AGENTS.md files. Each document's shell
blocks run in order, each in a fresh shell, against its own throw-away product
repository (real git, a bare ``origin`` with ``main``, the kit vendored at
``pmos/``, a contract, a verdict and an SSH key of a PM's): a block that exits
non-zero fails the test, naming the document and line. A block that cannot run
there (placeholders such as RUN_ID, a database, a network install, usage
notation) is marked ``<!-- docs-test: illustrative (why) -->`` on the line
before it; ``pmos skill check`` still checks its commands and options against
the CLI (tests/test_skill_check.py runs it on the repository). A block marked
``<!-- docs-test: in-kit -->`` runs in the kit root instead of the product's.

A document starts from the state its prose assumes, named by a line
``<!-- docs-test: given STATE -->`` anywhere in it (:data:`STATES`; ``kit``
when it names none).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

from conftest import good_verdict
from test_docs import pmos_env

REPO = Path(__file__).resolve().parents[1]
ILLUSTRATIVE = "<!-- docs-test: illustrative"
IN_KIT = "<!-- docs-test: in-kit -->"
_GIVEN = re.compile(r"(?m)^<!-- docs-test: given ([a-z-]+) -->$")
#: What each state adds to the product repository (a fresh one has git and origin
#: only), run from its root and committed: the setup a document's prose assumes.
STATES = {
    "fresh": "",
    "kit": "pmos init pmos > /dev/null",
    # run-7 with the contract, run-8 without one.
    "registered": (
        "pmos init pmos > /dev/null\n"
        "pmos run register --run-id run-7 --initiative-id checkout "
        "--builder-model claude-sonnet-4 --contract contract.yaml > /dev/null\n"
        "pmos run register --run-id run-8 --initiative-id checkout "
        "--builder-model claude-sonnet-4 > /dev/null"
    ),
}
STATES["judged"] = (
    "pmos init pmos > /dev/null\n"
    "pmos run register --run-id run-7 --initiative-id checkout "
    "--builder-model claude-sonnet-4 --contract contract.yaml > /dev/null\n"
    "pmos eval record --file verdict.json > /dev/null"
)
SHELL = ("sh", "bash", "shell", "console", "")
_BLOCK = re.compile(r"(?ms)^```(\w*)\n(.*?)^```")
CONTRACT = """\
done_criteria:
  - id: c1
    text: The API answers 404 for an unknown order.
    test_method: tests/test_api.py::test_404 passes
  - id: c2
    text: The flag is documented.
    test_method: read README.md
"""


def documents() -> list[Path]:
    found = [REPO / "README.md", REPO / "AGENTS.md", REPO / "kit" / "AGENTS.md"]
    found += sorted(p for p in (REPO / "docs").rglob("*.md") if p.name != "tutorial.md")
    found += sorted((REPO / "skills").rglob("*.md"))
    return found


class Block(NamedTuple):
    line: int
    text: str
    marks: str


def shell_blocks(text: str) -> list[Block]:
    blocks = []
    for match in _BLOCK.finditer(text):
        if match.group(1) not in SHELL:
            continue
        before = text[: match.start()].rstrip().splitlines()
        mark = before[-1] if before and before[-1].startswith("<!-- docs-test:") else ""
        blocks.append(Block(text[: match.start()].count("\n") + 1, match.group(2), mark))
    return blocks


def run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


class Product(NamedTuple):
    root: Path
    env: dict[str, str]


@pytest.fixture(scope="module")
def product_template(tmp_path_factory: pytest.TempPathFactory) -> Product:
    """A fresh product repository: git with main pushed to a bare origin, a
    contract and a full verdict for run-7 beside the code they cite, and a PM's
    SSH key in ``~/.ssh``. No kit yet: each state adds what it assumes."""
    base = tmp_path_factory.mktemp("docs-product")
    env = pmos_env(base)
    env["HOME"] = str(base / "home")
    (base / "home" / ".ssh").mkdir(parents=True)
    shop = base / "shop"
    shop.mkdir()
    verdict = good_verdict(run_id="run-7", initiative_id="checkout")
    (shop / "contract.yaml").write_text(CONTRACT, encoding="utf-8")
    (shop / "verdict.json").write_text(json.dumps(verdict, indent=2) + "\n", encoding="utf-8")
    (shop / "tests").mkdir()
    (shop / "tests" / "test_api.py").write_text("def test_404():\n" + "    pass\n" * 20)
    (shop / "src").mkdir()
    (shop / "src" / "app.py").write_text("\n" * 20, encoding="utf-8")
    (shop / "README.md").write_text("# shop\n" + "\n" * 50, encoding="utf-8")
    setup = f"""
ssh-keygen -q -t ed25519 -N '' -C ana@example.com -f "$HOME/.ssh/id_ed25519"
git init -q --bare -b main {base / "origin.git"}
git init -q -b main
git remote add origin {base / "origin.git"}
git add -A && git commit -q -m "A product"
git push -q -u origin main
"""
    done = run(setup, shop, env)
    assert done.returncode == 0, done.stdout + done.stderr
    return Product(shop, env)


def given(text: str) -> str:
    names = _GIVEN.findall(text)
    assert len(names) <= 1, "one given state per document"
    name = names[0] if names else "kit"
    assert name in STATES, f"unknown state {name!r} (known: {', '.join(STATES)})"
    return name


def test_every_document_is_read():
    names = {p.relative_to(REPO).as_posix() for p in documents()}
    assert {"README.md", "AGENTS.md", "kit/AGENTS.md", "skills/evaluator/SKILL.md"} <= names
    assert "docs/how-to/gate-merges-in-ci.md" in names


@pytest.mark.parametrize("document", documents(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_the_examples_of_a_document_run(document: Path, product_template: Product, tmp_path):
    text = document.read_text(encoding="utf-8")
    blocks = shell_blocks(text)
    runnable = [b for b in blocks if not b.marks.startswith(ILLUSTRATIVE)]
    for block in blocks:
        if block.marks.startswith(ILLUSTRATIVE):
            assert "(" in block.marks, f"{document}:{block.line}: say why it is illustrative"
        else:
            assert block.marks in ("", IN_KIT), f"{document}:{block.line}: unknown {block.marks}"
    if not runnable:
        return
    shop = tmp_path / "shop"
    shutil.copytree(product_template.root, shop, symlinks=True)
    origin = product_template.root.parent / "origin.git"
    shutil.copytree(origin, tmp_path / "origin.git", symlinks=True)
    env = dict(product_template.env)
    assert run(f"git remote set-url origin {tmp_path / 'origin.git'}", shop, env).returncode == 0
    home = tmp_path / "home"
    shutil.copytree(env["HOME"], home)
    env["HOME"] = str(home)
    state = STATES[given(text)]
    if state:
        prepared = run(f"{state}\ngit add -A && git commit -q -m given && git push -q", shop, env)
        assert prepared.returncode == 0, prepared.stdout + prepared.stderr
    for block in runnable:
        cwd = shop / "pmos" if block.marks == IN_KIT else shop
        done = run(block.text, cwd, env)
        shown = document.relative_to(REPO)
        assert done.returncode == 0, (
            f"{shown}:{block.line} fails (exit {done.returncode}):\n{block.text}\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )


# ---------------------------------------------------------------- fields the skills name

#: Spans that name something other than a pmos field: files, and git's own settings.
_NOT_FIELDS = re.compile(r"\.(ya?ml|md|json|toml|sh)$|^user\.signingkey$|^gpg\.")
_FIELD_SPAN = re.compile(r"`([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)`")
FIELD_DOCUMENTS = ["skills/evaluator/SKILL.md", "skills/acceptance/SKILL.md", "kit/AGENTS.md"]


def known_fields() -> set[str]:
    """Every key a record, an input, pmos.yaml or a --json output has: the schemas,
    the meanings of the --json keys (docs/reference/json-keys.yaml, which
    scripts/gen-reference.py checks against what the commands print) and pmos.yaml."""
    import yaml

    names: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if isinstance(key, str):
                    names.update(p for p in re.split(r"[.*\[\]]+", key) if p)
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    for schema in (REPO / "schemas").glob("*.json"):
        walk(json.loads(schema.read_text(encoding="utf-8")))
    walk(yaml.safe_load((REPO / "docs/reference/json-keys.yaml").read_text(encoding="utf-8")))
    walk(yaml.safe_load((REPO / "pmos.yaml").read_text(encoding="utf-8")))
    return names


def unknown_fields(text: str, names: set[str]) -> list[str]:
    """The field-like code spans (snake_case or dotted) of ``text`` pmos has no key for."""
    found = []
    for span in sorted(set(_FIELD_SPAN.findall(text))):
        field_like = ("_" in span or "." in span) and not _NOT_FIELDS.search(span)
        if field_like and not all(part in names for part in span.split(".")):
            found.append(span)
    return found


def test_every_field_the_skills_and_the_kit_agents_md_name_exists():
    names = known_fields()
    for rel in FIELD_DOCUMENTS:
        text = (REPO / rel).read_text(encoding="utf-8")
        assert unknown_fields(text, names) == [], rel
    # The check fails on a field pmos does not have, and passes the real ones.
    assert unknown_fields("set `spot_check_mark` and read `calibration_reason`", names) == [
        "spot_check_mark"
    ]
    assert unknown_fields("`signing.required` and `signing.nope`", names) == ["signing.nope"]
