"""Append-only against history: every record once recorded must still be there.

Digests alone cannot show a record deleted, nor records rewritten with their
digests and names recomputed. A git repository can: once shared, its history cannot be
rewritten unseen. ``pmos ledger verify --since REV`` reads the ledgers as they
were at REV straight from git's object store (no checkout, no filters) and
reports every record present then that is missing now or no longer matches its
content digest, loose or packed. Packing, re-packing and adding records keep
every digest, so history that only grew passes.

``--since`` takes a git revision only (resolved with ``git rev-parse --verify
REV^{commit}``); a file of that name is never taken for one. For a kit outside
git, or to keep the evidence outside the repository, ``pmos ledger checkpoint
--out FILE`` writes the sorted record digests of every kind and one digest over
them; ``verify --checkpoint FILE`` checks against it the same way.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from pmos import atomic
from pmos._util.git import Repository
from pmos.errors import BadInput, LedgerCorrupt
from pmos.store import lines
from pmos.store.digest import record_digest
from pmos.store.layout import LOOSE, PACK, Store
from pmos.store.registry import LEDGER_KINDS
from pmos.store.verify import summary_digest, verify_store
from pmos.timestamps import now_rfc3339

CHECKPOINT_FORMAT = 1
#: kind -> {content digest: record id}
Digests = dict[str, dict[str, str]]


class Missing(NamedTuple):
    """A record of the reference that the ledger no longer holds as it was."""

    kind: str
    record_id: str
    digest: str
    changed: bool

    def as_dict(self) -> dict[str, Any]:
        return self._asdict()

    def __str__(self) -> str:
        how = "was changed" if self.changed else "is missing"
        who = self.record_id or f"with digest {self.digest[:16]}..."
        return f"{self.kind} record {who} {how} (digest {self.digest[:16]}...)"


def current_digests(store: Store) -> Digests:
    """Every kind's record digests now, after a full verification (a broken ledger raises)."""
    out: Digests = {}
    for report in verify_store(store):
        if not report.ok:
            first = report.problems[0]
            raise LedgerCorrupt(
                first.file, first.line, f"{first.problem} (the ledger must verify first)"
            )
        out[report.kind] = report.digests
    return out


def summary(digests: Digests) -> str:
    """One digest over every kind's record digests."""
    return summary_digest(f"{kind}:{d}" for kind, found in digests.items() for d in found)


def write_checkpoint(store: Store, out: Path) -> dict[str, Any]:
    """Write the checkpoint file; returns its summary (what ``checkpoint`` prints)."""
    digests = current_digests(store)
    data = {
        "pmos_checkpoint": CHECKPOINT_FORMAT,
        "created_at": now_rfc3339(),
        "records": sum(len(found) for found in digests.values()),
        "digest": summary(digests),
        "kinds": {kind: dict(sorted(found.items())) for kind, found in digests.items()},
    }
    _check_checkpoint_target(store, out)
    try:
        atomic.replace_file(out, orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    except OSError as exc:
        raise BadInput(f"cannot write the checkpoint {out}: {exc.strerror}") from None
    return {k: data[k] for k in ("created_at", "records", "digest")} | {"path": str(out)}


def _check_checkpoint_target(store: Store, out: Path) -> None:
    """A checkpoint goes outside the kit (kept beside the kit, it proves nothing a
    rewrite of the kit could not rewrite too), and replaces only an earlier
    checkpoint: never pmos.yaml, a ledger file or any other file of the user's."""
    real = Path(os.path.realpath(out))
    root = Path(os.path.realpath(store.root))
    if real == root or root in real.parents:
        raise BadInput(
            f"{out} is inside the kit {root}: keep the checkpoint outside the kit (and the "
            "repository), where a change to the kit cannot change it too"
        )
    if real.exists() or out.is_symlink():
        try:
            earlier = orjson.loads(real.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            earlier = None
        if not (isinstance(earlier, dict) and "pmos_checkpoint" in earlier):
            raise BadInput(
                f"{out} exists and is not a pmos checkpoint: pmos ledger checkpoint replaces "
                "only an earlier checkpoint; choose another --out"
            )


def read_checkpoint(path: Path) -> Digests:
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise BadInput(f"{path} is not a pmos checkpoint: {exc}") from None
    kinds = data.get("kinds") if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or data.get("pmos_checkpoint") != CHECKPOINT_FORMAT
        or not isinstance(kinds, dict)
        or not all(
            isinstance(found, dict) and all(isinstance(v, str) for v in found.values())
            for found in kinds.values()
        )
    ):
        raise BadInput(f"{path} is not a pmos checkpoint (made by 'pmos ledger checkpoint')")
    if summary(kinds) != data.get("digest"):
        raise BadInput(f"{path}: its digest does not match its records; it was edited")
    return kinds


def since(store: Store, reference: str) -> tuple[str, Digests, list[Missing]]:
    """Compare the ledgers with the git revision ``reference``.

    Returns ``"git"``, the digests now, and every record of the revision that
    is missing or changed now.
    """
    return "git", *_compare(store, digests_at_revision(store, reference))


def since_checkpoint(store: Store, path: Path) -> tuple[str, Digests, list[Missing]]:
    """Compare the ledgers with a checkpoint file (``pmos ledger checkpoint``)."""
    return "checkpoint", *_compare(store, read_checkpoint(path))


def _compare(store: Store, then: Digests) -> tuple[Digests, list[Missing]]:
    now = current_digests(store)
    missing: list[Missing] = []
    for kind, found in then.items():
        present = now.get(kind, {})
        ids_now = set(present.values())
        for digest, record_id in sorted(found.items(), key=lambda item: item[1]):
            if digest not in present:
                missing.append(
                    Missing(kind, record_id, digest, bool(record_id) and record_id in ids_now)
                )
    return now, missing


# ---------------------------------------------------------------- git


def digests_at_revision(store: Store, revision: str) -> Digests:
    """Every kind's record digests as committed at ``revision``, read from git objects
    (every file under each ledger folder, recursively; no checkout, no filters)."""
    if revision.startswith("-") or not revision.strip():
        raise BadInput(f"--since: {revision!r} is not a git revision")
    repo = Repository(store.root)  # pmos's one git runner: no hooks, filters or network
    try:
        commit = repo.run("rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    except BadInput:
        raise BadInput(
            f"--since: {revision!r} is not a revision of the git repository that holds the "
            "kit (a checkpoint file is given with --checkpoint FILE)"
        ) from None
    return digests_at_commit(
        store,
        repo,
        commit.decode().strip(),
        LEDGER_KINDS,
        instead="; fetch it, or compare with a checkpoint file (--checkpoint FILE)",
    )


def digests_at_commit(
    store: Store, repo: Repository, commit_id: str, kinds: Iterable[str], *, instead: str = ""
) -> Digests:
    """The record digests of each of ``kinds`` as committed at ``commit_id`` (a full
    commit id of ``repo``, the repository holding the kit). A blob the repository
    lacks is a :class:`BadInput` naming it; ``instead`` is added to say what to do."""
    prefix = repo.relative(store.root)
    prefix = f"{prefix}/" if prefix else ""
    out: Digests = {}
    for kind in kinds:
        folder = prefix + store.display(kind).rstrip("/")
        listing = repo.run("ls-tree", "-r", "-z", "--full-tree", commit_id, "--", folder)
        found: dict[str, str] = {}
        blobs: list[tuple[str, str]] = []
        for item in filter(None, listing.split(b"\0")):
            meta, _, name = item.partition(b"\t")
            _, kind_of_object, sha = meta.decode().split()
            path = name.decode("utf-8", "surrogateescape")
            base = path.rsplit("/", 1)[-1]
            if kind_of_object == "blob" and (LOOSE.match(base) or PACK.match(base)):
                blobs.append((sha, path))
        for path, content in _blob_contents(repo, blobs, instead):
            base = path.rsplit("/", 1)[-1]
            for record in _line_records(content, skip_header=bool(PACK.match(base))):
                found.setdefault(record_digest(record), str(record.get("record_id", "")))
        out[kind] = found
    return out


def _blob_contents(
    repo: Repository, blobs: list[tuple[str, str]], instead: str
) -> Iterator[tuple[str, bytes]]:
    """Each blob's content; a blob the repository lacks (a shallow or partial clone,
    a damaged object store) is a clean error naming it, never a crash."""
    if not blobs:
        return
    data = repo.run("cat-file", "--batch", data="".join(f"{sha}\n" for sha, _ in blobs).encode())
    pos = 0
    for sha, path in blobs:
        end = data.find(b"\n", pos)
        header = data[pos:end].split() if end >= 0 else []
        if len(header) != 3 or header[1] != b"blob":
            raise BadInput(
                f"git cannot read {path} (object {sha}) at that revision: it is missing "
                f"from this repository (a shallow or partial clone?){instead}"
            )
        size = int(header[2])
        yield path, data[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1


def _line_records(content: bytes, *, skip_header: bool) -> Iterator[dict[str, Any]]:
    rows = content.split(b"\n")
    for raw in rows[1:] if skip_header else rows:
        if not raw:
            continue
        try:
            record = orjson.loads(lines.split(raw)[0])
        except (lines.LineError, orjson.JSONDecodeError):
            continue
        if isinstance(record, dict):
            yield record
