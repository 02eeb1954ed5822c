"""The server's resources: the evaluator skill and the documents it links.

A host shows these to its model without giving it file access. The list is not
written here: it is the skill file and every file its prose links to, read
with the same link reading ``pmos skill check`` applies (:func:`pmos.kit.skills.links`),
so a link added to the skill is served the day it is added. Only those files
are served, and only when they resolve inside the kit folder they belong to.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from pmos.assets import kit_source
from pmos.errors import BadInput
from pmos.inputs import read_input_text
from pmos.kit.skills import links

SKILL = "skills/evaluator/SKILL.md"
SCHEME = "pmos://kit/"
_EXTERNAL = ("http:", "https:", "mailto:")


@dataclass(frozen=True)
class Document:
    """One served file: its URI, its path relative to the kit folder, and the file."""

    uri: str
    name: str
    path: Path

    @property
    def mime_type(self) -> str:
        return "text/markdown" if self.path.suffix.lower() == ".md" else "text/plain"


def skill_base(kit_root: Path) -> Path:
    """The folder the skill is read from: the kit root's own copy (a vendored kit
    may have adapted it), else the skill bundled with pmos."""
    return kit_root if (kit_root / SKILL).is_file() else kit_source()


def documents(kit_root: Path) -> list[Document]:
    """The skill, then each file it links, in the order first linked, once each."""
    base = Path(os.path.realpath(skill_base(kit_root)))
    skill = base / SKILL
    found: dict[Path, Document] = {skill: _document(base, skill)}
    text = read_input_text(skill, what="skill", stdin_ok=False)
    for _, target in links(text):
        file_part = target.partition("#")[0]
        if not file_part or file_part.startswith(("/", *_EXTERNAL)) or ":" in file_part:
            continue
        path = Path(os.path.realpath(skill.parent / unquote(file_part)))
        if path in found or base not in path.parents or not path.is_file():
            continue
        found[path] = _document(base, path)
    return list(found.values())


def _document(base: Path, path: Path) -> Document:
    name = path.relative_to(base).as_posix()
    return Document(SCHEME + name, name, path)


def read(kit_root: Path, uri: str) -> tuple[Document, str]:
    """The document served as ``uri`` and its text; any other URI is bad input."""
    for document in documents(kit_root):
        if document.uri == uri:
            return document, read_input_text(document.path, what="document", stdin_ok=False)
    raise BadInput(f"no such resource: {uri!r} (list them with resources/list)")
