"""``pmos sync``: copy a kit's records into the database, once each, all or nothing.

The whole sync is one transaction:

1. the database must be at this pmos's schema version, and the kit's ledgers
   must pass verification (:func:`pmos.store.verify.verify_store`, run in a
   forked child while the copy proceeds): a kit that fails is refused and
   the transaction rolled back, so nothing of it is ever committed. A pack
   this pmos version verified in an earlier sync of the kit is only hashed
   against its name: a pack of that name has the bytes that passed;
2. the kit gets its row in ``kits`` (by its stable id, :mod:`pmos.db.identity`)
   and the transaction takes an advisory lock on it, so two syncs of one kit
   (two clones, two CI jobs) run one after the other while syncs of other kits
   run side by side;
3. per ledger kind, the packs the kit's earlier syncs copied whole
   (``synced_packs``) are not read at all: a pack's name is the hash of its
   bytes, so it still holds exactly those records. The other records are
   read from the store (digest and canonical JSON text, checked, neither
   recomputed), typed by :mod:`pmos.db.columns` and COPYed straight into the
   kind's table, a chunk at a time. A kit the database already has first
   asks, per chunk, which of the chunk's digests its table holds (an index
   lookup on the primary key, under the kit's advisory lock) and leaves
   those out; a new kit has none to ask about;
4. once verification has passed, the packs it checked line by line are
   recorded in ``synced_packs`` with this pmos's version (their records are
   now in the database), a row in ``syncs`` records what was copied and the
   kit's settings, and the transaction commits.

COPY has no ``ON CONFLICT``: under the kit's lock nothing but this
transaction adds the kit's records, a new kit has none, and what the table
holds was left out of the chunk first, so a conflict would be a bug, and the
unique key refuses it rather than hiding it.

A sync killed at any point (a crash, SIGKILL mid-COPY, a lost connection)
commits nothing: the server rolls the transaction back, and the next sync
copies everything that is missing. Records come from the store, checked
(:func:`pmos.store.read.stored_lines`); this module never reads a ledger
file itself.

While the database takes in one chunk, a producer thread already reads and
encodes the next one from the kit, so reading the kit and writing the
database overlap (psycopg releases the GIL while it waits on the server).
The server parses each record's JSON once, into its jsonb column, and
extracts nothing from it: the typed columns arrive typed.
"""

from __future__ import annotations

import contextlib
import os
import queue
import sys
import threading
from collections.abc import Collection, Iterable, Iterator
from importlib.metadata import PackageNotFoundError, version
from operator import itemgetter
from typing import Any, NamedTuple

import orjson

from pmos import __version__
from pmos._util.forked import ForkedCall
from pmos.calibration.metrics import report_and_pairs
from pmos.calibration.pairs import ScoredPair
from pmos.calibration.queue import compute_queue
from pmos.db.columns import RowEncoder, UnstorableStamp, encoder, storable_json
from pmos.db.connect import LOCK_CLASS, connection
from pmos.db.errors import KitNotYours, KitRefused, SchemaMismatch
from pmos.db.identity import KitIdentity, kit_identity
from pmos.db.migrate import require_current
from pmos.db.settings import settings_of
from pmos.db.tables import table_of
from pmos.errors import BadInput, LedgerCorrupt
from pmos.gate.rubric import load_rubric
from pmos.gate.screen import KitScreen
from pmos.kit import Kit
from pmos.store.read import StoredLine, stored_lines
from pmos.store.registry import LEDGER_KINDS
from pmos.store.verify import verify_store

#: Records per chunk (one lookup of held digests, one COPY): large enough that a
#: chunk's fixed costs vanish, small enough that the producer encodes the next
#: chunk while the server takes in this one.
CHUNK_RECORDS = 20_000
#: Chunks the producer may run ahead of the database.
QUEUE_CHUNKS = 2
#: Rows per write to COPY.
_ROWS_PER_WRITE = 2_000
#: The interpreter's switch interval while a kind is copied (its default is 5 ms).
#: The thread that talks to the server wakes up many times per chunk (each time
#: the socket will take more of a COPY, each time the server answers), and each
#: time it waits for the producer thread, busy encoding rows, to hand over the
#: interpreter's lock: at the default, the server sat idle for a third of a sync.
HANDOVER_S = 0.0005
#: How much lower the children's priority (verification, report, queue) is than the
#: copy's: the copy is the sync's critical path; the children have until it ends, and
#: on two cores they fit in what the server and the producer leave idle.
CHILDREN_NICENESS = 10
_END = object()


class KindResult(NamedTuple):
    kind: str
    records: int
    added: int


class SyncReport(NamedTuple):
    identity: KitIdentity
    new_kit: bool
    kinds: list[KindResult]
    #: Where the kit's settings came from (``refs/heads/main:pmos/pmos.yaml``).
    policy: str

    @property
    def added(self) -> int:
        return sum(k.added for k in self.kinds)

    @property
    def records(self) -> int:
        return sum(k.records for k in self.kinds)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kit_id": self.identity.kit_id,
            "repository": self.identity.repository,
            "path": self.identity.path,
            "new_kit": self.new_kit,
            "policy": self.policy,
            "records": self.records,
            "added": self.added,
            "kinds": {k.kind: {"records": k.records, "added": k.added} for k in self.kinds},
        }


def sync_kit(
    kit: Kit, dsn: str, *, policy: Kit, source: str, kit_id: str | None = None
) -> SyncReport:
    """Copy every record of ``kit`` the database lacks (see the module docstring).

    ``policy`` is the kit under the policy the merge gate would accept (its trust
    files from the default branch, its ledgers the working tree's:
    :func:`pmos.merge.committed.committed_policy`, which the caller opens because
    this package sits beside the merge package, not above it), and ``source``
    says where that policy came from. Verification, the reports and the stored
    settings all use ``policy``; ``kit`` names the kit (:mod:`pmos.db.identity`).
    """
    identity = kit_identity(kit.root, kit_id)
    pmos = _pmos_version()
    verification: _Verification | None = None
    try:
        with connection(dsn, purpose="sync") as conn:
            require_current(conn)
            _require_tables(conn)
            kit_key, new_kit = _own_kit_key(conn, identity)
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, kit_key))
            if new_kit is None:  # a bound kit: new until one of its syncs commits (ask now)
                first = "SELECT NOT EXISTS (SELECT 1 FROM syncs WHERE kit = %s)"
                new_kit = conn.execute(first, (kit_key,)).fetchone()[0]
            synced = {} if new_kit else _synced_packs(conn, kit_key)
            verification = _Verification(
                policy, frozenset(pack for pack, by in synced.items() if pmos in by)
            )
            try:
                done = [
                    _sync_kind(conn, policy, kit_key, kind, new_kit, synced.keys())
                    for kind in LEDGER_KINDS
                ]
            except _ReadFailed as failed:
                verification.refuse_if_failed()  # its full report, when it saw the damage too
                raise KitRefused(_REFUSED.format(details=failed)) from None
            checked = verification.refuse_if_failed()
            results = [result for result, _ in done]
            copied = [pack for _, packs in done for pack in packs]
            _remember_packs(conn, kit_key, pmos, [pack for pack in copied if pack in checked])
            settings = _settings_with_rubric(policy)
            changed = any(r.added for r in results) or _reported_settings(conn, kit_key) != settings
            # Unchanged records and settings: the last report stands, its child is stopped.
            reports = None  # unchanged: the last report stands
            if changed:
                reports = verification.reports()
            else:
                verification.cancel()
            sync = conn.execute(
                "INSERT INTO syncs (kit, pmos_version, settings, records, added, metrics, queue) "
                "VALUES (%s, %s, %s::jsonb, %s::jsonb, %s::jsonb, %s::jsonb, %s::jsonb) "
                "RETURNING sync",
                (
                    kit_key,
                    pmos,
                    orjson.dumps(settings).decode(),
                    orjson.dumps({r.kind: r.records for r in results}).decode(),
                    orjson.dumps({r.kind: r.added for r in results}).decode(),
                    reports.metrics if reports else None,
                    reports.queue if reports else None,
                ),
            ).fetchone()[0]
            if reports is not None:
                _store_pairs(conn, sync, kit_key, reports.pairs)
            conn.commit()
    finally:
        if verification is not None:
            verification.cancel()
    return SyncReport(identity, new_kit, results, source)


def _own_kit_key(conn: Any, identity: KitIdentity) -> tuple[int, bool | None]:
    """The kit's key, and whether the database has nothing of it yet (None for a kit
    bound to the role: the caller asks once it holds the kit's lock).

    A role bound to a kit (``pmos db grant --kit ID``) syncs that kit only: a
    repository cannot become another kit by copying its remote URL or passing
    its id, because the role, not the id, decides. Any other role (the
    database's owner) names the kit by its id, adding it when it is new.
    """
    bound = conn.execute("SELECT kit, kit_id FROM kits WHERE role = current_user").fetchone()
    if bound is None:
        return _kit_key(conn, identity)
    key, bound_id = bound
    if bound_id != identity.kit_id:
        role = conn.execute("SELECT current_user").fetchone()[0]
        raise KitNotYours(
            f"the database role {role!r} writes kit {bound_id!r} only, and this kit is "
            f"{identity.kit_id!r} (from --kit-id or the git remote): nothing was written. "
            f"Sync each kit with the credentials 'pmos db grant --kit ID' made for it"
        )
    return key, None


def _reported_settings(conn: Any, kit_key: int) -> Any:
    """The settings of the kit's latest sync that stored a report (None: none did)."""
    row = conn.execute(
        "SELECT settings FROM syncs WHERE kit = %s AND metrics IS NOT NULL "
        "ORDER BY sync DESC LIMIT 1",
        (kit_key,),
    ).fetchone()
    return row[0] if row else None


def _store_pairs(conn: Any, sync: int, kit_key: int, pairs: PairColumns) -> None:
    """The report's pairs, in one statement (row-level security refuses COPY to a kit's
    role; an INSERT from arrays costs one round trip). The arrays go in binary
    (``%b``): for the 200,000 pairs of a 1M + 1M kit, text took twice the client's
    time to write and the server's to read."""
    if not pairs.run_id:
        return
    conn.execute(
        "INSERT INTO calibration_pairs "
        "(sync, kit, run_id, evaluator_model, gate_pass, pm_pass, form, score) "
        "SELECT %s, %s, * FROM unnest(%b::text[], %b::text[], %b::boolean[], %b::boolean[], "
        "%b::text[], %b::double precision[])",
        (sync, kit_key, *pairs),
    )


_REFUSED = (
    "the kit's ledgers fail verification, so nothing was copied ({details}); "
    "see 'pmos ledger verify'"
)


class PairColumns(NamedTuple):
    """The pairs a report counts, a list per column, in the order of the
    ``calibration_pairs`` insert (a child sends six lists, not an object a pair)."""

    run_id: list[str]
    evaluator_model: list[str]
    gate_pass: list[bool]
    pm_pass: list[bool]
    form: list[str]
    score: list[float | None]

    @classmethod
    def of(cls, pairs: list[ScoredPair]) -> PairColumns:
        return cls(
            [p.run_id for p in pairs],
            [p.evaluator_model for p in pairs],
            [p.gate_pass for p in pairs],
            [p.pm_pass for p in pairs],
            [p.form for p in pairs],
            [p.score for p in pairs],
        )


class Reports(NamedTuple):
    """What ``pmos metrics --json`` and ``pmos queue --json`` say of the kit, as the
    JSON text the database stores (:func:`pmos.db.columns.storable_json`), and the
    pairs the report counts: computed by the file-mode code in the children, which
    also write the text (a 1M + 1M kit's queue is 32 MB of it), stored by the sync."""

    metrics: str
    queue: str
    pairs: PairColumns


class _Verification:
    """``pmos ledger verify`` of the kit, and its reports, each in a forked child while
    the copy proceeds.

    Verifying reads every record, as copying does; running it in a child while
    this process copies takes it off the sync's critical path. The sync asks
    for the outcome before it writes its ``syncs`` row and commits, so a kit
    that fails is refused with nothing committed, exactly as if it had been
    checked first. Packs this pmos version verified in an earlier sync of the
    kit (``verified``) are only hashed against their names
    (:func:`pmos.store.verify.verify_kind`). A second child computes the kit's
    calibration report and pairs, and a third its queue (:class:`Reports`),
    with :mod:`pmos.calibration`, exactly as ``pmos metrics`` and ``pmos
    queue`` compute them (the database's views only select from these). The
    queue is most of that work (a profile of a 200,000-record sync: half of
    pmos's CPU time), so it runs beside the report rather than after it. A
    sync that added nothing and whose settings are those of the last report
    stops them instead of waiting, and so does a kit that fails.
    """

    def __init__(self, kit: Kit, verified: frozenset[str]) -> None:
        self._kit, self._verified = kit, verified
        forks = hasattr(os, "fork")
        nice = CHILDREN_NICENESS
        self._call = ForkedCall(_verify, kit, verified, nice=nice) if forks else None
        self._report = ForkedCall(_report, kit, nice=nice) if forks else None
        self._queue = ForkedCall(_queue, kit, nice=nice) if forks else None
        self._outcome: Any = None

    def refuse_if_failed(self) -> frozenset[str]:
        """Raise :class:`KitRefused` if the kit fails; else the packs checked line by line."""
        if self._outcome is None:
            call, self._call = self._call, None
            self._outcome = (
                call.result() if call is not None else _verify(self._kit, self._verified)
            )
        checked: frozenset[str]
        failing, checked = self._outcome
        if failing:
            self.cancel()
            details = "; ".join(
                f"{kind}: {count} problem(s), first at line {line}: {problem}"
                for kind, count, line, problem in failing
            )
            raise KitRefused(_REFUSED.format(details=details))
        return checked

    def reports(self) -> Reports:
        """The kit's reports (after :meth:`refuse_if_failed` passed)."""
        report, queue = self._report, self._queue  # cancel() stops both until taken
        metrics, pairs = report.result() if report is not None else _report(self._kit)
        self._report = None
        found = queue.result() if queue is not None else _queue(self._kit)
        self._queue = None
        return Reports(metrics, found, pairs)

    def cancel(self) -> None:
        """Stop the children that still run."""
        for call in (self._call, self._report, self._queue):
            if call is not None:
                call.cancel()
        self._call = self._report = self._queue = None


def _verify(
    kit: Kit, verified: frozenset[str]
) -> tuple[list[tuple[str, int, int | None, str]], frozenset[str]]:
    """(kind, problems, first line, first problem) of each ledger that fails
    verification, and the packs verified line by line."""
    # The writers' rules too: a record that breaks one is never copied, so the
    # database's figures equal file mode's, which leaves such records out.
    # Only the problems and the packs checked are wanted: no digest -> id table is kept.
    reports = verify_store(kit.store, verified_packs=verified, screen=KitScreen(kit), ids=False)
    failing = [
        (r.kind, len(r.problems), r.problems[0].line, r.problems[0].problem)
        for r in reports
        if not r.ok
    ]
    return failing, frozenset(pack for r in reports for pack in r.checked_packs)


def _report(kit: Kit) -> tuple[str, PairColumns]:
    metrics, pairs = report_and_pairs(kit)
    return storable_json(metrics), PairColumns.of(pairs)


def _queue(kit: Kit) -> str:
    return storable_json(compute_queue(kit).as_dict())


def _require_tables(conn: Any) -> None:
    for kind in LEDGER_KINDS:
        table = table_of(kind)
        if not conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()[0]:
            raise SchemaMismatch(
                f"the database has no table {table} for the {kind} ledger: its schema is "
                "older than this pmos's ledgers; run 'pmos db migrate'"
            )


def _kit_key(conn: Any, identity: KitIdentity) -> tuple[int, bool]:
    """The kit's key, adding its row when it is new. A concurrent first sync of the
    same kit waits here on the unique kit id until the other transaction ends."""
    row = conn.execute(
        "INSERT INTO kits (kit_id, repository, path) VALUES (%s, %s, %s) "
        "ON CONFLICT (kit_id) DO NOTHING RETURNING kit",
        identity,
    ).fetchone()
    if row is not None:
        return row[0], True
    found = conn.execute("SELECT kit FROM kits WHERE kit_id = %s", (identity.kit_id,)).fetchone()
    return found[0], False


def _synced_packs(conn: Any, kit_key: int) -> dict[str, set[str]]:
    """The packs (by the hex SHA-256 that names them) whose records the database has,
    each with the pmos versions that verified it."""
    found: dict[str, set[str]] = {}
    for pack, by in conn.execute(
        "SELECT encode(pack, 'hex'), verified_by FROM synced_packs WHERE kit = %s", (kit_key,)
    ):
        found.setdefault(pack, set()).add(by)
    return found


def _remember_packs(conn: Any, kit_key: int, pmos: str, packs: list[str]) -> None:
    """Record packs whose records are now in the database and that ``pmos`` verified."""
    if packs:
        conn.execute(
            "INSERT INTO synced_packs (kit, pack, verified_by) "
            "SELECT %s, decode(name, 'hex'), %s FROM unnest(%s::text[]) AS name "
            "ON CONFLICT DO NOTHING",
            (kit_key, pmos, packs),
        )


def _sync_kind(
    conn: Any,
    kit: Kit,
    kit_key: int,
    kind: str,
    new_kit: bool,
    have: Collection[str],
) -> tuple[KindResult, list[str]]:
    """Copy what the database lacks of one kind; the result, and the packs whose
    records the database now has (read whole, or left out as ``have``).

    A kit's role COPYs straight into the table too: the record tables state the
    rule that a kit's role adds only its kit's rows in a statement-level trigger
    (migration 0002), which holds for COPY, where row-level security would
    refuse COPY altogether.
    """
    table = table_of(kind)
    try:
        stored = stored_lines(kit.store, kind, have=have)  # lists the files, reads loose ones
    except LedgerCorrupt as exc:
        raise _ReadFailed(str(exc)) from None
    rows = encoder(kind)
    copy_in = f"COPY {table} ({', '.join(rows.columns)}) FROM STDIN"
    # A new kit has no records yet: nothing to look up.
    held_of = None if new_kit else f"SELECT digest FROM {table} WHERE kit = %s AND digest = ANY(%s)"
    added = 0
    with (
        _quick_handover(),
        _Producer(stored, rows, kit_key, digests=held_of is not None) as producer,
    ):
        if held_of is None:  # one COPY for the kind: the server never waits between chunks
            added = _copy(conn, copy_in, (lines for _, lines in producer.chunks()))
        else:  # per chunk, what the table lacks of it
            for digests, lines in producer.chunks():
                held = {bytes(d) for (d,) in conn.execute(held_of, (kit_key, digests))}
                if held:
                    lines = [line for d, line in zip(digests, lines, strict=True) if d not in held]
                if lines:
                    added += _copy(conn, copy_in, [lines])
        read = producer.read
    return KindResult(kind, stored.have_records + read, added), [*stored.packs, *stored.held]


def _copy(conn: Any, statement: str, chunks: Iterable[list[bytes]]) -> int:
    """Every row of ``chunks`` in one COPY ``statement``; the rows it added."""
    with conn.cursor() as cursor:
        with cursor.copy(statement) as copy:
            for lines in chunks:
                for start in range(0, len(lines), _ROWS_PER_WRITE):
                    copy.write(b"".join(lines[start : start + _ROWS_PER_WRITE]))
        return int(cursor.rowcount)


@contextlib.contextmanager
def _quick_handover() -> Iterator[None]:
    """The interpreter's switch interval at :data:`HANDOVER_S` for the block (see there),
    then back to what it was."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(HANDOVER_S)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


class _Producer:
    """Reads a kind's stored lines in a thread, handing chunks of COPY rows to the caller.

    ``chunks()`` yields (digests, rows) of up to :data:`CHUNK_RECORDS`
    records (the digests as bytes, or None unless ``digests`` asks for them),
    sorted by digest (the database then adds them to the primary
    key's index in key order, page after page, instead of all over it), and
    stops at the end; ``read`` then counts the records read. The store
    hands on each record once (its rule: one digest a month, one record id a
    ledger), so none is looked for twice here: a second copy would be a bug
    the table's unique key refuses. An error in the thread (a ledger that
    changed under the sync) is raised in the caller; leaving the ``with``
    block early stops the thread.
    """

    def __init__(
        self, stored: Iterable[list[StoredLine]], rows: RowEncoder, kit_key: int, *, digests: bool
    ) -> None:
        self._stored = stored
        self._digests = digests
        self._rows = rows
        self._kit_key = kit_key
        self.read = 0
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=QUEUE_CHUNKS)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pmos-sync-reader", daemon=True)

    def __enter__(self) -> _Producer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get_nowait()
            except queue.Empty:
                self._thread.join(0.05)

    def chunks(self) -> Iterable[tuple[Any, list[bytes]]]:
        while True:
            item = self._queue.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def _put(self, item: Any) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue
        raise _Stopped

    def _run(self) -> None:
        try:
            chunk: list[StoredLine] = []
            for batch in self._stored:
                self.read += len(batch)
                chunk += batch
                while len(chunk) >= CHUNK_RECORDS:
                    self._send(chunk[:CHUNK_RECORDS])
                    chunk = chunk[CHUNK_RECORDS:]
            if chunk:
                self._send(chunk)
            self._put(_END)
        except _Stopped:
            return
        except (LedgerCorrupt, UnstorableStamp) as exc:
            self._hand_over(_ReadFailed(str(exc)))
        except BaseException as exc:  # handed to the caller, who raises it
            self._hand_over(exc)

    def _send(self, chunk: list[StoredLine]) -> None:
        chunk.sort(key=itemgetter(0))
        row, kit_key = self._rows.row, self._kit_key
        digests = [bytes.fromhex(digest) for digest, _ in chunk] if self._digests else None
        self._put((digests, [row(kit_key, digest, body) for digest, body in chunk]))

    def _hand_over(self, exc: BaseException) -> None:
        with contextlib.suppress(_Stopped):
            self._put(exc)


class _ReadFailed(Exception):
    """A ledger did not verify as it was read for copying."""


class _Stopped(Exception):
    """The consumer left; the producer thread ends quietly."""


def _pmos_version() -> str:
    try:
        return version("pmos")
    except PackageNotFoundError:  # a source checkout that was never installed
        return __version__


def _settings_with_rubric(kit: Kit) -> dict[str, Any]:
    """The kit's settings, with its default rubric's pass threshold: the database
    holds no rubric file, and the score statistics compare against it."""
    settings = settings_of(kit.config)
    try:
        settings["rubric_threshold"] = load_rubric(kit.root, kit.config.default_rubric).threshold
    except BadInput:
        settings["rubric_threshold"] = None
    return settings
