"""matplotlib's SVG made fit to sit inline in the board's HTML.

A standalone SVG file from matplotlib carries an XML prolog, a DOCTYPE and
namespace declarations (all URLs, none of them fetched, but the board promises
a file with no external reference at all), an RDF metadata block, and ids such
as ``patch_1`` that every chart repeats. This module parses the SVG with the
XML parser and writes it back as HTML-embeddable markup: local names only,
every id prefixed with the chart's name (and every ``url(#id)`` / ``href``
reference rewritten to match), every text and attribute escaped again, and
elements tagged by the chart code (``gid="mark-..."``) given a class, so a
reader or a test can count a chart's marks.

Anything that would reach outside the page (an ``href`` or ``url()`` that is
not a reference to an element of the same chart) or a raster image is refused:
the charts are vector drawings made here, so either means a bug.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from html import escape

#: gid prefixes the chart code uses, turned into classes ("mark", "threshold"...).
ROLE_CLASSES = ("mark", "threshold", "band", "interval")
_LOCAL_REF = re.compile(r"url\(\s*#([^)\s]+)\s*\)")
_ANY_URL = re.compile(r"url\s*\(", re.IGNORECASE)
#: Elements left out: RDF metadata says who drew the chart, and nothing uses it.
DROPPED = frozenset({"metadata"})


class UnsafeSvg(ValueError):
    """The SVG reaches outside the page or embeds a raster image (a bug in the chart code)."""


@dataclass(frozen=True)
class InlineSvg:
    markup: str
    marks: int


def _local(name: str) -> str:
    return name.rsplit("}", 1)[-1]


def inline_svg(source: str, prefix: str, title: str) -> InlineSvg:
    """``source`` (a standalone SVG document) as inline markup with ids under ``prefix``."""
    root = ET.fromstring(source.encode("utf-8"))
    ids = {el.get("id") for el in root.iter() if el.get("id")}

    def local_ref(match: re.Match[str]) -> str:
        target = match.group(1)
        if target not in ids:
            raise UnsafeSvg(f"chart {prefix}: url(#{target}) names no element of the chart")
        return f"url(#{prefix}-{target})"

    def attribute(name: str, value: str) -> str:
        if name == "id":
            return f"{prefix}-{value}"
        if name == "href":
            if not value.startswith("#") or value[1:] not in ids:
                raise UnsafeSvg(f"chart {prefix}: href {value!r} is not a reference inside it")
            return f"#{prefix}-{value[1:]}"
        rewritten = _LOCAL_REF.sub(local_ref, value)
        if _ANY_URL.search(_LOCAL_REF.sub("", value)):
            raise UnsafeSvg(f"chart {prefix}: attribute {name} refers outside the chart")
        if name == "d":
            rewritten = " ".join(rewritten.split())
        return rewritten

    marks = 0
    out: list[str] = []

    def write(el: ET.Element, top: bool = False) -> None:
        nonlocal marks
        tag = _local(el.tag)
        if tag in DROPPED:
            return
        if tag in ("image", "foreignObject", "script"):
            raise UnsafeSvg(f"chart {prefix}: a <{tag}> element has no place in a board chart")
        attrs: dict[str, str] = {}
        for key, value in el.attrib.items():
            name = _local(key)
            if top and name in ("width", "height", "version"):
                continue
            attrs[name] = attribute(name, value)
        role = (el.get("id") or "").split("-", 1)[0]
        if role in ROLE_CLASSES and "-" in (el.get("id") or ""):
            attrs["class"] = role
            marks += role == "mark"
        if top:
            attrs.update(role="img", preserveAspectRatio="xMidYMid meet")
        out.append(f"<{tag}")
        out.extend(f' {name}="{escape(value, quote=True)}"' for name, value in attrs.items())
        out.append(">")
        if top:
            out.append(f"<title>{escape(title, quote=False)}</title>")
        if el.text and el.text.strip():
            if tag == "style" and _ANY_URL.search(el.text):
                raise UnsafeSvg(f"chart {prefix}: a style sheet refers outside the chart")
            out.append(escape(el.text, quote=False))
        for child in el:
            write(child)
            if child.tail and child.tail.strip():
                out.append(escape(child.tail, quote=False))
        out.append(f"</{tag}>")

    write(root, top=True)
    return InlineSvg("".join(out), marks)
