"""The kit's own documents as Markdown structure, read by markdown-it-py.

``pmos skill check`` needs to know what is inside a code fence and what is
prose: reading a link inside a fence as real would make a broken link out of a
code sample. markdown-it-py (a CommonMark parser, installed with Typer) does the
reading; this module only turns its tokens into what that reader uses:
code blocks with their lines, headings, and the code spans and link targets of
the prose, each with its 1-based line number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

import yaml

from pmos.yamlio import load_yaml

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

_LINK_SYNTAX = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_NOT_SLUG = re.compile(r"[^\w\- ]", re.UNICODE)


@cache
def _parser() -> MarkdownIt:
    # Imported here: 20 ms or more, and commands that import this module for
    # split_frontmatter (a rubric's) never parse Markdown.
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


@dataclass
class CodeBlock:
    """A fenced block: its info-string language and its lines with 1-based numbers."""

    language: str
    start: int
    lines: list[tuple[int, str]] = field(default_factory=list)
    closed: bool = False


@dataclass
class Heading:
    number: int
    level: int
    #: The heading's text as written (links and code spans included).
    text: str


@dataclass
class Block:
    """Any other block (a paragraph, a list, a quote, HTML, ...): where it starts."""

    number: int


@dataclass
class Prose:
    """The inline content of the prose: code spans and link targets, by line."""

    spans: list[tuple[int, str]] = field(default_factory=list)
    links: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class Document:
    """A document's top-level blocks in order, and its prose's inline content."""

    blocks: list[CodeBlock | Heading | Block]
    prose: Prose


def parse(text: str) -> Document:
    """``text`` as markdown-it reads it (CommonMark)."""
    env: dict[str, Any] = {}
    tokens = _parser().parse(text, env)
    blocks: list[CodeBlock | Heading | Block] = []
    prose = Prose()
    for i, token in enumerate(tokens):
        number = token.map[0] + 1 if token.map else 0
        if token.type == "fence" and token.map:
            blocks.append(_code_block(token))
        elif token.type == "heading_open":
            blocks.append(Heading(number, int(token.tag[1:]), tokens[i + 1].content))
        elif token.level == 0 and token.nesting != -1 and token.type != "inline":
            blocks.append(Block(number))
        if token.type == "inline" and token.map:
            _inline(token, prose)
    # Link reference definitions ([label]: target) leave no token: the parser
    # keeps them, with their place, in its environment.
    for reference in env.get("references", {}).values():
        where = reference.get("map") or [-1]
        prose.links.append((where[0] + 1, reference["href"]))
    return Document(blocks, prose)


def _code_block(token: Token) -> CodeBlock:
    """A fence token as a code block; an unclosed fence runs to the document's end."""
    start, end = token.map  # type: ignore[misc]
    info = token.info.strip()
    block = CodeBlock(info.split()[0].lower() if info else "", start + 1)
    content = token.content.split("\n") if token.content else []
    if content and content[-1] == "" and token.content.endswith("\n"):
        content.pop()
    block.lines = [(start + 2 + n, line) for n, line in enumerate(content)]
    # The fence's lines are its opening line, its content and, when there is
    # one, its closing line.
    block.closed = end - start - 1 - len(content) == 1
    return block


def _inline(token: Token, prose: Prose) -> None:
    """The code spans and link targets of one inline token, each with its line."""
    number = token.map[0] + 1  # type: ignore[index]
    for child in token.children or []:
        if child.type in ("softbreak", "hardbreak"):
            number += 1
        elif child.type == "code_inline":
            prose.spans.append((number, child.content.strip()))
        elif child.type == "link_open":
            prose.links.append((number, str(child.attrs.get("href", ""))))
        elif child.type == "image":
            prose.links.append((number, str(child.attrs.get("src", ""))))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = _LINK_SYNTAX.sub(r"\1", heading).replace("`", "")
    return _NOT_SLUG.sub("", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a document (repeated headings get -1, -2, ...)."""
    found: set[str] = set()
    counts: dict[str, int] = {}
    for block in parse(text).blocks:
        if isinstance(block, Heading):
            base = slug(block.text)
            n = counts.get(base, 0)
            counts[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def split_frontmatter(text: str) -> tuple[Any, str]:
    """Return (parsed YAML frontmatter, body). Raises ValueError when there is none."""
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
