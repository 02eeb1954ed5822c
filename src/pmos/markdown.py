"""Just enough Markdown structure for the kit's own documents.

The exemplar log and ``pmos skill check`` both need to know what is inside a
code fence and what is prose; reading a heading or a link inside a fence as
real would make a log entry out of an example, or a broken link out of a
code sample. Fences follow CommonMark: three or more backticks or tildes,
indented at most three spaces, closed by a run of the same character at least
as long.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*([^`]*)$")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_LINK_SYNTAX = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_NOT_SLUG = re.compile(r"[^\w\- ]", re.UNICODE)


def closes(line: str, marker: str) -> bool:
    """Whether ``line`` closes a fence opened with ``marker``."""
    stripped = line.strip()
    return (
        len(line) - len(line.lstrip(" ")) <= 3
        and len(stripped) >= len(marker)
        and set(stripped) == {marker[0]}
    )


@dataclass
class CodeBlock:
    """A fenced block: its info-string language and its lines with 1-based numbers."""

    language: str
    start: int
    lines: list[tuple[int, str]] = field(default_factory=list)
    closed: bool = False


@dataclass
class Prose:
    number: int
    text: str


def segments(text: str) -> Iterator[Prose | CodeBlock]:
    """The document as prose lines and fenced code blocks, in order."""
    block: CodeBlock | None = None
    marker = ""
    for number, line in enumerate(text.splitlines(), start=1):
        if block is not None:
            if closes(line, marker):
                block.closed = True
                yield block
                block = None
            else:
                block.lines.append((number, line))
            continue
        opened = FENCE.match(line)
        if opened:
            marker = opened.group(1)
            info = opened.group(2).strip()
            block = CodeBlock(info.split()[0].lower() if info else "", number)
            continue
        yield Prose(number, line)
    if block is not None:
        yield block


def code_spans(line: str) -> list[str]:
    """The inline code spans of a prose line."""
    return [m.group(2).strip() for m in _CODE_SPAN.finditer(line)]


def without_code_spans(line: str) -> str:
    return _CODE_SPAN.sub("", line)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = _LINK_SYNTAX.sub(r"\1", heading).replace("`", "")
    return _NOT_SLUG.sub("", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a document (repeated headings get -1, -2, ...)."""
    found: set[str] = set()
    counts: dict[str, int] = {}
    for part in segments(text):
        if isinstance(part, Prose):
            match = HEADING.match(part.text)
            if match:
                base = slug(match.group(2))
                n = counts.get(base, 0)
                counts[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
    return found


def split_frontmatter(text: str) -> tuple[Any, str]:
    """Return (parsed YAML frontmatter, body). Raises ValueError when there is none."""
    import yaml

    from pmos.yamlio import load_yaml

    if not text.startswith("---"):
        raise ValueError("does not start with a '---' YAML frontmatter block")
    lines = text.splitlines(keepends=True)
    if lines[0].strip() != "---":
        raise ValueError("the first line must be exactly '---'")
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            try:
                meta = load_yaml("".join(lines[1:i]))
            except yaml.YAMLError as exc:
                raise ValueError(f"frontmatter is not valid YAML: {exc}") from None
            return meta, "".join(lines[i + 1 :])
    raise ValueError("frontmatter is not closed by a '---' line")
