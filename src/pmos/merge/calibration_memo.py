"""This machine's memo of whether the review gate was calibrated at a base revision.

``pmos gate`` decides each run's mode (calibrated or advisory) from the
calibration at the base: every verdict and PM label the base holds, paired and
measured under the base's own policy (:func:`pmos.merge.decision.calibration_at_base`).
On a kit in use that is most of a gate run's work, and it is the same answer
every time the same base is judged (each push to a pull request, each pull
request cut from the same commit): the answer is a function of the base
commit's objects and of the code that computes it, and of nothing else (no
clock, no working tree, no head).

So it is remembered, keyed by exactly those: the base commit's id, the kit's
folder in it, and a digest of this pmos's own source files and the versions of
Python and the libraries its statistics run on (any change to the code, a
statistic's or a rule's, is a miss). The memo lives in the cache folder
of :mod:`pmos.store.screencache` (``$PMOS_CACHE_DIR``, ``$XDG_CACHE_HOME/pmos``
or ``~/.cache/pmos``; never inside the repository's work tree): nothing a
change commits can fill it. A missing, unreadable or malformed entry is a miss,
and the calibration is computed again. Entries are written atomically; a memo
lost in a crash is only computed again.
"""

from __future__ import annotations

import hashlib
import sys
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import orjson

from pmos.atomic import replace_file
from pmos.store.screencache import cache_folder

#: Bumped when what an entry holds changes shape.
FORMAT = 1
#: The source of this pmos: every module's bytes go into the code digest.
_PACKAGE = Path(__file__).resolve().parents[1]

Calibration = tuple[dict[str, dict[str, Any]], int]


#: The libraries the statistics run on (module, distribution): another version may
#: draw or round otherwise.
_LIBRARIES = (("numpy", "numpy"), ("scipy", "scipy"), ("sklearn", "scikit_learn"))


@cache
def code_digest() -> str:
    """SHA-256 over every Python source file of this pmos (path and bytes), the
    Python and the statistics libraries' installed versions, so that an entry made
    by other code, however slightly other, is never taken."""
    digest = hashlib.sha256(sys.version.encode() + b"\0")
    for name in _installed(_LIBRARIES):
        digest.update(name.encode() + b"\0")
    for path in sorted(_PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _installed(libraries: tuple[tuple[str, str], ...]) -> list[str]:
    """The installed distributions of ``libraries`` by their metadata folders' names
    (``numpy-2.4.6.dist-info``), found beside each package without importing it
    (importlib.metadata takes a fifth of a second to load and scan)."""
    found = []
    for module, distribution in libraries:
        spec = find_spec(module)
        places = (spec.submodule_search_locations or []) if spec is not None else []
        for place in places:
            found += sorted(p.name for p in Path(place).parent.glob(f"{distribution}-*-info"))
        found.append(f"{module}:{len(places)}")
    return found


def _entry(top: Path, base_commit: str, kit_dir: str) -> Path | None:
    folder = cache_folder(top)
    if folder is None:
        return None
    key = hashlib.sha256(orjson.dumps([FORMAT, code_digest(), base_commit, kit_dir])).hexdigest()
    return folder / "gate-calibration" / f"{key}.json"


def load(top: Path, base_commit: str, kit_dir: str) -> Calibration | None:
    """The calibration remembered for the kit at ``kit_dir`` of ``base_commit`` in
    the repository at ``top``, or None (a miss)."""
    path = _entry(top, base_commit, kit_dir)
    if path is None:
        return None
    try:
        entry = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not (
        isinstance(entry, dict)
        and entry.get("format") == FORMAT
        and entry.get("base_commit") == base_commit
        and entry.get("kit") == kit_dir
        and isinstance(entry.get("by_model"), dict)
        and all(
            isinstance(v, dict) and isinstance(v.get("calibrated"), bool)
            for v in entry["by_model"].values()
        )
        and type(entry.get("seeded_labels_excluded")) is int
    ):
        return None
    return entry["by_model"], entry["seeded_labels_excluded"]


def save(top: Path, base_commit: str, kit_dir: str, calibration: Calibration) -> None:
    """Remember ``calibration`` (best effort: a memo that cannot be written is not one)."""
    path = _entry(top, base_commit, kit_dir)
    if path is None:
        return
    by_model, seeded = calibration
    data = orjson.dumps(
        {
            "format": FORMAT,
            "base_commit": base_commit,
            "kit": kit_dir,
            "by_model": by_model,
            "seeded_labels_excluded": seeded,
        }
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, data)
    except OSError:
        return
