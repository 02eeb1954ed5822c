"""Shared by the board tests: a kit with known numbers, hostile text, and page parsing.

Records enter the kit through the library writers only (what the CLI calls).
The page is parsed with the standard library's HTML parser into a small tree,
so tests read what a browser would build (elements, attributes, text), never
grep the markup.
"""

from __future__ import annotations

import re
from collections import namedtuple
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from conftest import Snapshot, good_verdict
from pmos.gate import writers
from pmos.kit import Kit, init_kit, open_kit

RUBRIC = "planning/evals/agent-run-eval-rubric.md"

#: The known kit: (run, evaluator model, gate passes?, PM accepts?).
#: Overall tp 4, fn 1, fp 1, tn 4: kappa = (0.8 - 0.5) / (1 - 0.5) = 0.6,
#: TPR = 4/5 = 0.8, TNR = 4/5 = 0.8. Each model has both label classes, so
#: both have a defined kappa (gpt-5: tp 2, fn 1, tn 2; claude-opus-4: tp 2, fp 1, tn 2).
KNOWN_PAIRS = [
    ("known-tp-1", "gpt-5", True, True),
    ("known-tp-2", "gpt-5", True, True),
    ("known-fn-1", "gpt-5", False, True),
    ("known-tn-1", "gpt-5", False, False),
    ("known-tn-2", "gpt-5", False, False),
    ("known-tp-3", "claude-opus-4", True, True),
    ("known-tp-4", "claude-opus-4", True, True),
    ("known-fp-1", "claude-opus-4", True, False),
    ("known-tn-3", "claude-opus-4", False, False),
    ("known-tn-4", "claude-opus-4", False, False),
]
KNOWN_CONFUSION = {"tp": 4, "fn": 1, "fp": 1, "tn": 4}
#: Registered, never judged (verification queue, no-verdict), registered and
#: skipped (verification queue, skipped), judged and never labelled (acceptance queue).
QUEUE_WAITING = "queue-waiting-1"
QUEUE_SKIPPED = "queue-skipped-1"
QUEUE_OWED = "queue-owed-1"

#: Text an attacker controls, in every place a ledger carries text to the board.
#: Each payload would set window.__pwned if it ever ran.
# Identifiers refuse bidi and invisible characters at write time (issue 16), so the
# right-to-left override rides in a note instead.
HOSTILE_RUN = "run-<script>window.__pwned=1</script>-evil"
HOSTILE_INITIATIVE = '"><img src=x onerror="window.__pwned=2">'
HOSTILE_MODEL = "</svg><script>__pwned=3</script>$x$"
HOSTILE_NOTE = (
    "</td></tr></table><script>window.__pwned=4</script> note \u2066isolated\u2069 \u202eevil"
)
HOSTILE_EVIDENCE = "<svg onload=\"window.__pwned=5\"></svg> evidence ' onmouseover='x src/a.py:1"
HOSTILE_LESSON = '<iframe src="https://example.invalid/"></iframe> lesson'
HOSTILE_SKIP = "<style>body{display:none}</style> skipped \u200bzero-width"
HOSTILE_TEXTS = (
    HOSTILE_RUN,
    HOSTILE_INITIATIVE,
    HOSTILE_MODEL,
    HOSTILE_NOTE,
    HOSTILE_EVIDENCE,
    HOSTILE_LESSON,
    HOSTILE_SKIP,
)

#: The documented shape of pmos.calibration.metrics.scored_pairs' items.
ScoredPair = namedtuple("ScoredPair", "run_id evaluator_model score gate_pass pm_pass form")


def judge(kit: Kit, run: str, passing: bool, model: str, initiative: str = "init-a") -> None:
    writers.record_short_verdict(
        kit,
        run_id=run,
        initiative_id=initiative,
        verdict="PASS" if passing else "FAIL",
        score=0.9 if passing else 0.3,
        rubric_path=RUBRIC,
        evaluator_model=model,
        spec="pass" if passing else "fail",
        standards="pass" if passing else "fail",
    )


def seed_known(kit: Kit) -> None:
    """The known kit: ten labelled pairs and one run in each queue state."""
    for run, model, gate_pass, pm_pass in KNOWN_PAIRS:
        judge(kit, run, gate_pass, model)
        writers.record_acceptance(kit, run_id=run, label="pass" if pm_pass else "fail", by="pm")
    for run in (QUEUE_WAITING, QUEUE_SKIPPED):
        writers.register_run(
            kit, run_id=run, initiative_id="init-a", builder_model="claude-sonnet-4", contract=None
        )
    writers.record_short_verdict(
        kit,
        run_id=QUEUE_SKIPPED,
        initiative_id="init-a",
        verdict="SKIPPED",
        skipped_reason="the branch was never pushed",
        evaluator_model="gpt-5",
    )
    judge(kit, QUEUE_OWED, True, "gpt-5", initiative="init-b")


@pytest.fixture(scope="session")
def known_template(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    """A kit holding the known records, written once per session (per worker)."""
    root = tmp_path_factory.mktemp("known") / "kit"
    init_kit(root)
    seed_known(open_kit(root))
    return Snapshot(root)


@pytest.fixture
def known(kit_root: Path, known_template: Snapshot) -> None:
    """The test's own kit holds the known records: a copy of them, as seed_known
    would write them (writing them is much of a short test's time)."""
    known_template.copy_to(kit_root, exist_ok=True)


def seed_hostile(kit: Kit) -> None:
    """Hostile text in run ids, initiatives, models, notes, evidence, lessons and skip reasons."""
    verdict = good_verdict(
        run_id=HOSTILE_RUN,
        initiative_id=HOSTILE_INITIATIVE,
        evaluator_model=HOSTILE_MODEL,
        note=HOSTILE_NOTE,
    )
    verdict["criteria"][0]["evidence"] = HOSTILE_EVIDENCE
    verdict["axes"]["spec"]["rationale"] = HOSTILE_NOTE
    writers.record_verdict(kit, verdict)
    # The PM rejects a PASS: an override, logged to the exemplar log with the note as lesson.
    writers.record_acceptance(kit, run_id=HOSTILE_RUN, label="fail", by="pm", note=HOSTILE_LESSON)
    writers.register_run(
        kit,
        run_id=HOSTILE_RUN + "-skipped",
        initiative_id=HOSTILE_INITIATIVE,
        builder_model=HOSTILE_MODEL,
        contract=None,
    )
    writers.record_short_verdict(
        kit,
        run_id=HOSTILE_RUN + "-skipped",
        initiative_id=HOSTILE_INITIATIVE,
        verdict="SKIPPED",
        skipped_reason=HOSTILE_SKIP,
        evaluator_model=HOSTILE_MODEL,
    )


def synthetic_periods() -> list[dict[str, Any]]:
    """Five weekly periods in the documented shape; the third has no defined kappa and
    the fifth no pass fraction: 4 kappa marks and 4 pass-fraction marks."""
    rows = []
    for week, kappa, ci, fraction in (
        (45, 0.42, [0.1, 0.7], 0.61),
        (46, 0.55, [0.3, 0.78], 0.66),
        (47, None, None, 0.7),
        (48, 0.71, [0.52, 0.86], 0.72),
        (49, 0.8, [0.64, 0.93], None),
    ):
        rows.append(
            {
                "period": f"2026-W{week}",
                "start": f"2026-11-{week - 44:02d}T00:00:00Z",
                "end": f"2026-11-{week - 43:02d}T00:00:00Z",
                "pairs": 25,
                "kappa": kappa,
                "kappa_ci95": ci,
                "tpr": 0.9,
                "tnr": 0.7,
                "pass_fraction": fraction,
            }
        )
    return rows


def synthetic_scored_pairs() -> list[ScoredPair]:
    """Scores in known bins (20 bins of 0.05): accepted 0.72, 0.74 (bin 14), 0.81 (bin 16),
    0.95 and 1.0 (bin 19); rejected 0.12 (bin 2), 0.31 (bin 6), 0.73 (bin 14); one short-form
    verdict without a score. Non-empty (label, bin) cells: 3 accepted + 3 rejected = 6."""
    accepted = [0.72, 0.74, 0.81, 0.95, 1.0]
    rejected = [0.12, 0.31, 0.73]
    pairs = [
        ScoredPair(f"a{i}", "gpt-5", s, s >= 0.7, True, "full") for i, s in enumerate(accepted)
    ]
    pairs += [
        ScoredPair(f"r{i}", "gpt-5", s, s >= 0.7, False, "full") for i, s in enumerate(rejected)
    ]
    pairs.append(ScoredPair("short", "gpt-5", None, True, True, "short"))
    return pairs


# ---------------------------------------------------------------- parsing the page

VOID = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Any] = field(default_factory=list)  # Node or str
    parent: Node | None = None

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.iter()

    def find_all(self, tag: str | None = None, **attrs: str) -> list[Node]:
        return [
            n
            for n in self.iter()
            if (tag is None or n.tag == tag) and all(n.attrs.get(k) == v for k, v in attrs.items())
        ]

    def by_id(self, ident: str) -> Node:
        found = self.find_all(id=ident)
        assert len(found) == 1, f"{len(found)} elements with id {ident!r}"
        return found[0]

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.current = self.root
        self.comments: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, parent=self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Node(tag, {k: v or "" for k, v in attrs}, parent=self.current))

    def handle_endtag(self, tag: str) -> None:
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None and node.parent is not None, f"stray </{tag}>"
        self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def parse_page(html: str) -> Node:
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    assert builder.current is builder.root, f"unclosed <{builder.current.tag}>"
    return builder.root


def words(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------- external references

#: Attributes whose value the browser fetches or navigates to.
URL_ATTRIBUTES = frozenset(
    [
        "href",
        "xlink:href",
        "src",
        "srcset",
        "action",
        "formaction",
        "poster",
        "data",
        "background",
        "cite",
        "codebase",
        "longdesc",
        "usemap",
        "manifest",
        "ping",
        "lowsrc",
        "dynsrc",
        "icon",
        "profile",
        "archive",
        "classid",
    ]
)
#: Elements that load something by existing.
LOADING_ELEMENTS = frozenset(
    [
        "script",
        "link",
        "iframe",
        "frame",
        "frameset",
        "object",
        "embed",
        "img",
        "image",
        "audio",
        "video",
        "source",
        "track",
        "base",
        "form",
        "applet",
        "portal",
        "picture",
        "feimage",
        "use",
    ]
)
NETWORK_SCHEMES = frozenset({"http", "https", "ftp", "ws", "wss", "file", "data", "javascript"})
_CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]*)", re.IGNORECASE)
_CSS_IMPORT = re.compile(r"@import", re.IGNORECASE)


def _css_problems(css: str, where: str) -> list[str]:
    found = [f"{where}: @import" for _ in _CSS_IMPORT.finditer(css)]
    for target in _CSS_URL.findall(css):
        if not target.strip().startswith("#"):
            found.append(f"{where}: url({target})")
    return found


def external_references(html: str) -> list[str]:
    """Every way ``html`` could reach outside itself, or an empty list.

    Walks every element of the parsed page, inline SVG included: URL-bearing
    attributes must be empty or point at an element of the page (``#id``),
    loading elements are refused unless they only reference the page
    (``<use href="#...">``), CSS (style attributes and sheets) may use
    ``url(#id)`` only and no ``@import``, a meta refresh is refused, and no
    attribute anywhere may hold an absolute URL with a network or script scheme
    (which also catches namespace declarations such as ``xmlns``).
    """
    problems: list[str] = []
    for node in parse_page(html).iter():
        where = f"<{node.tag}>"
        if node.tag in LOADING_ELEMENTS:
            refs = [node.attrs.get(a, "") for a in ("href", "xlink:href")]
            if not (node.tag == "use" and all(r == "" or r.startswith("#") for r in refs)):
                problems.append(f"{where}: an element that loads something")
        if node.tag == "meta" and node.attrs.get("http-equiv", "").lower() == "refresh":
            problems.append(f"{where}: meta refresh")
        if node.tag == "style":
            problems += _css_problems(node.text(), where)
        for name, value in node.attrs.items():
            if name in URL_ATTRIBUTES and value and not value.startswith("#"):
                problems.append(f"{where} {name}={value!r}")
            if name == "style":
                problems += _css_problems(value, f"{where} style")
            elif "url(" in value.lower():
                problems += _css_problems(value, f"{where} {name}")
            parts = urlsplit(value.strip())
            if parts.scheme.lower() in NETWORK_SCHEMES or (
                value.strip().startswith("//") and name in URL_ATTRIBUTES
            ):
                problems.append(f"{where} {name}={value!r}: an absolute URL")
    return problems
