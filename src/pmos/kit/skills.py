"""``pmos skill check``: the kit's documents say only what is true.

Agents learn what to run from the skills and planning documents. A document
that names a command the CLI does not have, an option it does not take, or a
file that is not there teaches a wrong procedure, and the agent following it
fails (or worse, improvises). Three checks:

* every ``SKILL.md`` has valid level-1 frontmatter (``schemas/skill.schema.json``,
  the Agent Skills convention) whose ``name`` equals its folder, and a body
  of at most :data:`MAX_BODY_LINES` lines;
* every ``pmos ...`` command written in code (inline spans, shell blocks),
  including the kit script ``scripts/pmos-log.sh``, exists in the real command
  tree with the options used: the tree is read from the Typer app itself, so
  a renamed command fails here the day it is renamed;
* every relative link resolves to a file (and, for ``#anchors`` into Markdown,
  to a heading). Root-absolute links are refused: they break once the kit is
  vendored under ``product/pmos``;
* every MCP tool a document cites, written as the code span ``mcp: TOOL``,
  is a tool of ``pmos mcp``: the caller passes the server's tool names, read
  from its registry (no server is started).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote

import typer

from pmos import markdown, schemas
from pmos.assets import kit_source
from pmos.errors import BadInput
from pmos.inputs import read_input_text
from pmos.kit.init import SHIPPED_AS
from pmos.markdown import split_frontmatter
from pmos.schemas import load_schema

#: What ``pmos skill check`` reads when given no path (those present in the kit root).
DEFAULT_TARGETS = (
    "skills",
    "planning",
    "AGENTS.md",
    "CLAUDE.md",
    "DECISIONS.md",
    "README.md",
    "docs",
    # The pmos repository's template of the kit's AGENTS.md (pmos.kit.init.SHIPPED_AS).
    "kit",
)
MAX_BODY_LINES = 500
SHELL_LANGUAGES = frozenset({"", "sh", "bash", "shell", "console", "zsh", "shell-session"})
KIT_SCRIPT = "scripts/pmos-log.sh"

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_OPERATORS = re.compile(r"\s(?:&&|\|\||;|\|)\s")
_SCRIPT_CASE = re.compile(
    r'^\s*([a-z][a-z-]*)\)\s*exec\s+"\$\{pmos\[@\]\}"\s+--root\s+"\$kit_root"\s+(.+?)\s+"\$@"'
)
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
#: How a document cites a tool of the MCP server: the code span ``mcp: pmos_queue``.
_MCP_TOOL = re.compile(r"^mcp:\s*(\S+)$")
_PLACEHOLDERS = frozenset({"...", "…"})


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: [{self.rule}] {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "rule": self.rule, "message": self.message}


@dataclass
class Report:
    files: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    commands: int = 0
    links: int = 0
    tools: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "files": self.files,
            "skills": self.skills,
            "commands_checked": self.commands,
            "links_checked": self.links,
            "tools_checked": self.tools,
            "problems": [p.as_dict() for p in self.problems],
        }


# ---------------------------------------------------------------- the command tree


class CommandTree:
    """The real CLI's commands and options, and the kit script's subcommands."""

    def __init__(self, root: Any, script: dict[str, list[str]] | None) -> None:
        self.root = root
        self.script = script

    @classmethod
    def from_app(cls, app: Any, script_path: Path | None) -> CommandTree:
        return cls(typer.main.get_command(app), _script_table(script_path))

    def check(self, args: list[str]) -> str | None:
        """Why ``pmos ARGS`` is not a valid invocation, or None when it is."""
        current, path, i = self.root, ["pmos"], 0
        while _is_group(current):
            ctx = current.context_class(current)
            while i < len(args) and _is_option(args[i]):
                if _find_option(current, args[i].split("=", 1)[0]) is None:
                    break
                i, _ = _options(current, path, args, i, leading=False)
            if i >= len(args):
                return None  # names a command group, e.g. `pmos ledger`
            word = args[i]
            names = word.split("|")
            if all(current.get_command(ctx, n) is not None for n in names):
                if len(names) > 1:
                    return None  # `schema show|list`: each alternative exists
                current = current.get_command(ctx, word)
                if not getattr(current, "hidden", False):
                    path.append(word)
                i += 1
                continue
            routed = _default_route(current, args[i:])
            if routed is not None:
                args = [*args[:i], *routed]
                continue
            if _is_option(word):
                return f"`{' '.join(path)}` has no option {word.split('=', 1)[0]}"
            missing = next(n for n in names if current.get_command(ctx, n) is None)
            known = ", ".join(sorted(current.list_commands(ctx)))
            return f"`{' '.join(path)} {missing}` is not a command (known: {known})"
        positional = 0
        while i < len(args):
            if _is_option(args[i]):
                i, problem = _options(current, path, args, i, leading=False)
                if problem:
                    return problem
                continue
            positional += 1
            i += 1
        arguments = [p for p in current.params if p.param_type_name == "argument"]
        limit = sum(a.nargs if a.nargs > 0 else 10**6 for a in arguments)
        if positional > limit:
            return (
                f"`{' '.join(path)}` takes {limit or 'no'} positional argument(s), "
                f"{positional} given"
            )
        return None

    def check_script(self, args: list[str]) -> str | None:
        if self.script is None:
            return f"{KIT_SCRIPT} was not found, so its subcommands cannot be checked"
        if not args or args[0] in ("--help", "-h"):
            return None  # the script's own usage
        sub = args[0]
        if sub not in self.script:
            known = ", ".join(sorted(self.script))
            return f"`{KIT_SCRIPT} {sub}` is not a subcommand of the kit script (known: {known})"
        problem = self.check([*self.script[sub], *args[1:]])
        return (
            f"`{KIT_SCRIPT} {sub}` runs `pmos {' '.join(self.script[sub])}`: {problem}"
            if (problem)
            else None
        )


def _default_route(group: Any, rest: list[str]) -> list[str] | None:
    """How the group's own parser routes ``rest`` when it sends it to a default command.

    A group may route a first argument that is not a command name to a default
    subcommand (``pmos assess SPEC`` runs the hidden ``assess run``). Asking the
    group's parser, rather than knowing each group, keeps this check honest.
    """
    # Whichever click typer uses (its own copy or the package), its ClickException.
    click_error = cast(
        "type[Exception]",
        next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"),
    )
    ctx = group.context_class(group, info_name="pmos", resilient_parsing=True)
    try:
        group.parse_args(ctx, list(rest))
    except click_error:  # a usage error: the group does not route these arguments
        return None
    protected = list(getattr(ctx, "_protected_args", None) or [])
    routed = [*protected, *ctx.args]
    if routed and routed != list(rest) and group.get_command(ctx, routed[0]) is not None:
        return routed
    return None


def _is_option(token: str) -> bool:
    return token.startswith("-") and token != "-" and not re.match(r"^-\d", token)


def _is_group(command: Any) -> bool:
    # Duck-typed: typer may bring its own copy of click, so isinstance is unreliable.
    return callable(getattr(command, "list_commands", None))


def _find_option(command: Any, name: str) -> Any:
    if name in command.get_help_option_names(command.context_class(command)):
        return True
    for param in command.params:
        if param.param_type_name == "option" and name in (*param.opts, *param.secondary_opts):
            return param
    return None


def _options(
    command: Any, path: list[str], args: list[str], i: int, *, leading: bool
) -> tuple[int, str | None]:
    """Consume option tokens at ``args[i:]``; a leaf consumes one option per call."""
    while i < len(args) and _is_option(args[i]):
        token = args[i]
        name = token.split("=", 1)[0]
        param = _find_option(command, name)
        if param is None:
            return i, f"`{' '.join(path)}` has no option {name}"
        i += 1
        takes_value = param is not True and not param.is_flag and param.nargs != 0
        if takes_value and "=" not in token:
            i += 1
        if not leading:
            break
    return i, None


def _script_table(script_path: Path | None) -> dict[str, list[str]] | None:
    """Subcommand -> pmos arguments, read from the script's own ``case`` lines."""
    if script_path is None or not script_path.is_file():
        return None
    table: dict[str, list[str]] = {}
    for line in script_path.read_text(encoding="utf-8").splitlines():
        match = _SCRIPT_CASE.match(line)
        if match:
            table[match.group(1)] = match.group(2).split()
    return table


# ---------------------------------------------------------------- finding commands


def _invocations(text: str) -> list[tuple[str, list[str]]]:
    """The pmos invocations in a piece of shell text: ("pmos"|"script", args)."""
    found = []
    for segment in _OPERATORS.split(text):
        try:
            words = shlex.split(segment, comments=True)
        except ValueError:
            words = segment.split()
        while words and (words[0] in ("$", "exec") or _ENV_ASSIGNMENT.match(words[0])):
            words = words[1:]
        if not words:
            continue
        head, rest = words[0], words[1:]
        if head in ("python", "python3") and rest[:2] == ["-m", "pmos"]:
            head, rest = "pmos", rest[2:]
        args = [_unbracket(w) for w in rest]
        args = [a for a in args if a and a not in _PLACEHOLDERS]
        if head == "pmos":
            found.append(("pmos", args))
        elif head == KIT_SCRIPT or head.endswith("/" + KIT_SCRIPT):
            found.append(("script", args))
    return found


def _unbracket(word: str) -> str:
    """``[--json]`` -> ``--json``; ``[PATH...]`` -> ``PATH``: usage notation, not syntax."""
    word = word.lstrip("[(").rstrip("]),")
    return word[:-3] if word.endswith("...") and len(word) > 3 else word


def _shell_lines(block: markdown.CodeBlock) -> Iterable[tuple[int, str]]:
    """Logical lines of a shell block (backslash continuations joined, prompts dropped)."""
    pending, start = "", 0
    for number, line in block.lines:
        if not pending:
            start = number
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        yield start, re.sub(r"^\s*\$\s+", "", pending + stripped)
        pending = ""
    if pending:
        yield start, pending


# ---------------------------------------------------------------- checking


def _skill_problems(path: Path, shown: str, text: str, names: dict[str, str]) -> list[Problem]:
    try:
        meta, body = split_frontmatter(text)
    except ValueError as exc:
        return [Problem(shown, 1, "frontmatter", str(exc))]
    if not isinstance(meta, dict):
        return [Problem(shown, 1, "frontmatter", "the frontmatter must be a YAML mapping")]
    problems = [
        Problem(shown, 1, "frontmatter", _frontmatter_message(meta, v))
        for v in schemas.validate("skill", meta)
    ]
    name = meta.get("name")
    if isinstance(name, str):
        folder = path.parent.name
        if name != folder:
            problems.append(
                Problem(shown, 1, "frontmatter", f"name {name!r} must equal its folder {folder!r}")
            )
        if name in names:
            problems.append(
                Problem(shown, 1, "frontmatter", f"name {name!r} is also used by {names[name]}")
            )
        names.setdefault(name, shown)
    length = len(body.splitlines())
    if length > MAX_BODY_LINES:
        problems.append(
            Problem(
                shown,
                1,
                "skill-size",
                f"the body has {length} lines; keep it under {MAX_BODY_LINES} and move "
                "detail into linked files",
            )
        )
    return problems


def _frontmatter_message(meta: dict[str, Any], violation: Any) -> str:
    """The schema's message, without echoing a 2,000-character value back."""
    value = meta.get(violation.field)
    if isinstance(value, str) and violation.rule in ("schema:maxLength", "schema:minLength"):
        rule = load_schema("skill")["properties"][violation.field]["description"]
        return f"{violation.field} has {len(value)} characters: {rule}"
    return f"{violation.field}: {violation.message}"


def _shorten(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _link_problem(path: Path, target: str, cache: dict[Path, set[str]]) -> str | None:
    if not target or _SCHEME.match(target):
        return None
    if target.startswith("/"):
        return f"{target} is root-absolute; use a relative link (it breaks when vendored)"
    file_part, _, fragment = target.partition("#")
    try:
        destination = (path.parent / unquote(file_part)).resolve() if file_part else path.resolve()
        if not destination.exists():
            return f"{target} does not resolve ({destination} is missing)"
        anchored = fragment and destination.is_file() and destination.suffix.lower() == ".md"
        if anchored and destination not in cache:
            cache[destination] = markdown.anchors(destination.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # too long, a NUL byte, unreadable, not UTF-8
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return f"{_shorten(target)} cannot be checked: {reason}"
    if anchored and unquote(fragment).lower() not in cache[destination]:
        return f"{target}: no heading with the anchor #{fragment} in {destination.name}"
    return None


def links(text: str) -> Iterator[tuple[int, str]]:
    """Every link target written in a document's prose, with its line number.

    Links inside code (fenced blocks, inline spans) are examples, not links. The
    MCP server lists the documents a skill links with this same reading.
    """
    yield from markdown.parse(text).prose.links


def _check_file(
    path: Path,
    shown: str,
    tree: CommandTree,
    report: Report,
    names: dict[str, str],
    cache: dict[Path, set[str]],
    tools: Collection[str] | None = None,
    shipped: Path | None = None,
) -> None:
    """``shipped``: where the file lands in a kit when it is shipped under another
    name; its links are checked from there, where they are read."""
    try:
        text = read_input_text(path, what="document", stdin_ok=False)
    except BadInput as exc:
        report.problems.append(Problem(shown, 0, "read", f"cannot read: {exc}"))
        return
    report.files.append(shown)
    if path.name == "SKILL.md":
        report.skills.append(shown)
        report.problems += _skill_problems(path, shown, text, names)

    def command_problems(number: int, snippet: str) -> list[Problem]:
        found = []
        for kind, args in _invocations(snippet):
            report.commands += 1
            problem = tree.check(args) if kind == "pmos" else tree.check_script(args)
            if problem:
                found.append(Problem(shown, number, "command", problem))
        return found

    def tool_problems(number: int, span: str) -> list[Problem]:
        cited = _MCP_TOOL.match(span)
        if cited is None:
            return []
        report.tools += 1
        if tools is None:
            message = "MCP tools cannot be checked: no tool list was given"
        elif cited.group(1) in tools:
            return []
        else:
            known = ", ".join(sorted(tools))
            message = f"`{cited.group(1)}` is not a tool of `pmos mcp` (known: {known})"
        return [Problem(shown, number, "mcp-tool", message)]

    found: list[Problem] = []
    document = markdown.parse(text)
    for block in document.blocks:
        if isinstance(block, markdown.CodeBlock) and block.language in SHELL_LANGUAGES:
            for number, line in _shell_lines(block):
                found += command_problems(number, line)
    for number, span in document.prose.spans:
        found += command_problems(number, span)
        found += tool_problems(number, span)
    for number, target in document.prose.links:
        report.links += 1
        problem = _link_problem(shipped or path, target, cache)
        if problem:
            found.append(Problem(shown, number, "link", problem))
    report.problems += sorted(found, key=lambda p: p.line)


def _markdown_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.md") if p.is_file())
        else:
            files.append(path)
    return files


def check(
    paths: Iterable[Path],
    tree: CommandTree,
    *,
    root: Path | None = None,
    tools: Collection[str] | None = None,
) -> Report:
    """Check the Markdown files under ``paths``; every problem is in the report.

    ``tools``: the MCP server's tool names, which ``mcp: TOOL`` spans must name.
    """
    given = list(paths)
    missing = [str(p) for p in given if not p.exists()]
    if missing:
        raise BadInput(f"no such file or folder: {', '.join(missing)}")
    report = Report()
    names: dict[str, str] = {}
    cache: dict[Path, set[str]] = {}
    base = Path(os.path.realpath(root)) if root else None
    for path in _markdown_files(given):
        real = Path(os.path.realpath(path))
        shown = str(path)
        if base is not None and base in real.parents:
            shown = real.relative_to(base).as_posix()
        shipped = None
        if base is not None and shown in SHIPPED_AS:
            shipped = base / SHIPPED_AS[shown]
        _check_file(path, shown, tree, report, names, cache, tools, shipped)
    return report


def default_targets(root: Path) -> list[Path]:
    """The documents of a kit root that exist (a vendored kit has no README.md)."""
    return [root / name for name in DEFAULT_TARGETS if (root / name).exists()]


def script_path(root: Path | None) -> Path | None:
    """The kit script the documents name: the kit root's own, else the bundled one."""
    for base in (*([root] if root else []), kit_source()):
        candidate = base / KIT_SCRIPT
        if candidate.is_file():
            return candidate
    return None
