"""Signed PM labels: only a PM can write a PM label.

A PM label is the ground truth the gate is calibrated against, so anyone able
to write one (the evaluator agent included) could grade the gate's homework.
A kit can therefore require each label to carry the PM's SSH signature, made
the way git signs commits::

    # pmos.yaml
    kit_id: kit-3f0c...                        # written by 'pmos init' ('pmos kit-id --create')
    signing:
      allowed_signers: .pmos/allowed_signers   # OpenSSH format, relative to the kit root
      required_since: 3f9c2e...                # a commit id; or required: true (every label)

``pmos accept RUN --label pass --by ana@example.com --sign-key ~/.ssh/id_ed25519``
signs the label in OpenSSH's SSHSIG format under the namespace ``pmos-label``;
the signature verifies with ``ssh-keygen -Y verify -n pmos-label -I
ana@example.com -f allowed_signers`` over :func:`signed_payload`. A label is
accepted when the allowed-signers file lists the signing key for the label's
``by`` (the principal) and the namespace. Agents never hold a PM's key: they
cannot sign, so where signatures are required they cannot write a label.

What a label (``schema_version`` 2) signs binds it to its place: the kit's
``kit_id``, the digest of the verdict it judges (:func:`verdict_sha256`) and
the label's own content fields, ``recorded_at`` among them. A label copied to
another kit, or set onto another verdict (even a forged one carrying the same
record id), no longer verifies. A label of ``schema_version`` 1 signed its
content only, and is checked so.

A label is signed only when its writer is told to (``--sign-key``): never from
git's ``user.signingkey``, which any process running as the PM (an agent on
the PM's laptop) would use without the PM knowing.

Switching signatures on in a kit that already holds unsigned labels:
``required_since`` names the commit of the default branch at which signatures
became required (``git rev-parse HEAD`` when the PM switches). An unsigned
label counts only when that exact record (its content digest) is in the kit's
label ledger in that commit's tree: it was recorded before the switch, as git
history shows. It stays valid and counted, marked unsigned
(:meth:`LabelSignatures.unsigned_before_switch`). Every other unsigned label is
reported. Not a date: a date could only be compared with the label's own
``recorded_at``, which whoever writes the label chooses (a back-dated unsigned
label would count). Outside git, or when the commit cannot be read (a shallow
clone), no unsigned label counts, and the reason says why.

The seed labels of the kit's own known-bad runs (``fail`` by ``seeded``) are
answer keys shipped with the kit, not a person's judgment; they need no
signature.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from pmos._util.git import Repository
from pmos.errors import BadInput, ConfigError, GitError
from pmos.gate import allowed_signers, sshsig
from pmos.gate.clock import checking_time
from pmos.gate.seeded import LABELLER, is_seeded
from pmos.kit import Config
from pmos.paths import resolve_inside
from pmos.schemas import load_schema
from pmos.store.digest import record_digest
from pmos.store.history import digests_at_commit
from pmos.store.layout import Store
from pmos.timestamps import seconds_rfc3339

NAMESPACE = "pmos-label"
#: Fields of a stored label that are not its content: the chain's and the signature's.
UNSIGNED_FIELDS = frozenset({"prev_hash", "hash", "signature"})
#: Fields of a stored record that are the store's, not what the record says.
_STORE_FIELDS = frozenset({"prev_hash", "hash", "digest"})
#: The label layout the writer produces: 2 since a signature binds the kit and verdict.
#: What a label needs in place of a signature, told to whoever tried to write one.
HAND_OVER = (
    "labels are the PM's to give: an agent stops here and hands the run over to the PM, "
    "who records the label themselves"
)
#: The documented way to give an older kit its identity.
KIT_ID_COMMAND = "pmos kit-id --create"
#: ``signing.required_since``: a full commit id (SHA-1 or SHA-256 object format).
COMMIT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
#: Whether an unsigned label was in the kit at the switch commit: None when it was,
#: else why it does not count (see :class:`LabelSignatures`).
SwitchCheck = Callable[[dict[str, Any]], str | None]


class Settings(NamedTuple):
    """pmos.yaml's ``signing`` section; ``allowed_signers`` is None when it has none.

    ``required_since`` is the commit at which signatures became required (None:
    ``required`` says for every label or none)."""

    allowed_signers: str | None
    required: bool
    required_since: str | None = None


def settings(config: Config) -> Settings:
    section = config.raw.get("signing") or {}
    since = section.get("required_since")
    required = section.get("required")
    if since is None:
        return Settings(section.get("allowed_signers"), bool(required))
    if required is False:
        raise ConfigError(
            "pmos.yaml: signing.required is false but signing.required_since is set; "
            "remove one of them"
        )
    if not (isinstance(since, str) and COMMIT_ID.fullmatch(since)):
        raise ConfigError(
            f"pmos.yaml: signing.required_since {str(since)!r} is not a commit id: it names "
            "the full id of the commit of the default branch at which signatures became "
            "required ('git rev-parse HEAD' when switching; docs/how-to/record-pm-labels.md). "
            "A date cannot serve: it could only be compared with a label's own recorded_at, "
            "which whoever writes the label chooses"
        )
    return Settings(section.get("allowed_signers"), True, since)


def kit_id(config: Config) -> str | None:
    """The kit's identity (pmos.yaml ``kit_id``), or None in a kit made before it."""
    found = config.raw.get("kit_id")
    return found if isinstance(found, str) and found else None


def _canonical(value: Any) -> bytes:
    """Canonical JSON (keys sorted, no spaces, UTF-8 as itself); see :func:`signed_payload`."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
            "utf-8", "surrogatepass"
        )


@cache
def _content_fields() -> frozenset[str]:
    return frozenset(load_schema("acceptance")["properties"]) - UNSIGNED_FIELDS


def _integral(value: Any) -> Any:
    """A number as one spelling whichever reader decoded it (1.0 and 1 alike)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def verdict_sha256(verdict: Mapping[str, Any] | None) -> str | None:
    """The digest a label's signature binds of the verdict it judges: SHA-256 of the
    verdict's fields (the store's own excepted) as canonical JSON, numbers spelled
    alike however a reader decoded them. None for no verdict."""
    if verdict is None:
        return None
    content = {k: _integral(v) for k, v in verdict.items() if k not in _STORE_FIELDS}
    return hashlib.sha256(_canonical(content)).hexdigest()


def signed_payload(
    record: dict[str, Any], *, kit: str | None = None, verdict: str | None = None
) -> bytes:
    """The bytes a label's signature covers.

    ``schema_version`` 1: its content fields (every field of the acceptance schema
    but the chain's and the signature itself), as canonical JSON (keys sorted, no
    spaces, UTF-8, non-ASCII characters as themselves). ``record_id`` and
    ``recorded_at`` are among them, so a signature cannot be moved to another label.

    ``schema_version`` 2 (what pmos writes): the canonical JSON of
    ``{"kit_id": KIT, "label": CONTENT, "verdict_sha256": DIGEST}``, where KIT is
    the kit's ``kit_id`` and DIGEST the :func:`verdict_sha256` of the verdict named
    by ``gate_record_id`` (null when it names none), so a label copied to another
    kit or set onto another verdict does not verify.

    orjson writes exactly what ``json.dumps(sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)`` writes for a label's values (strings, integers, lists,
    null: the schema has no floats, which the two would spell differently), ten
    times faster; a value orjson refuses (an integer beyond 64 bits in a forged
    record) falls back to the standard library."""
    fields = _content_fields()
    content = {k: v for k, v in record.items() if k in fields}
    if record.get("schema_version", 1) == 1:
        return _canonical(content)
    return _canonical({"kit_id": kit, "label": content, "verdict_sha256": verdict})


def sign_label(
    record: dict[str, Any],
    private_key: Any,
    *,
    kit: str | None = None,
    verdict: str | None = None,
) -> dict[str, Any]:
    """The ``signature`` field for a label record whose content fields are final
    (``kit`` and ``verdict``: see :func:`signed_payload`).

    ``private_key`` is a ``cryptography`` private key or, to sign many labels, a
    :class:`~pmos.gate.sshsig.SigningKey` made from it once."""
    if record.get("schema_version", 1) != 1 and kit is None:
        raise BadInput(
            f"this kit has no kit_id in pmos.yaml (it was made before kits had one), so a "
            f"signature cannot name it: run '{KIT_ID_COMMAND}' once and commit pmos.yaml"
        )
    key = sshsig.signing_key(private_key)
    return {
        "namespace": NAMESPACE,
        "key": key.fingerprint,
        "sshsig": key.sign(signed_payload(record, kit=kit, verdict=verdict), NAMESPACE),
    }


def allowed_signers_path(config: Config, root: Path) -> Path | None:
    configured = settings(config).allowed_signers
    if configured is None:
        return None
    return _resolved(str(root), configured)


@lru_cache(maxsize=64)
def _resolved(root: str, configured: str) -> Path:
    """Resolved once per process: a reader checks many labels against one file."""
    try:
        return resolve_inside(
            Path(root), configured, what="signing.allowed_signers", for_writing=False
        )
    except BadInput as exc:
        raise ConfigError(str(exc)) from None


def exempt(record: dict[str, Any]) -> bool:
    """A seed label of the kit's own known-bad runs (see the module docstring)."""
    return (
        record.get("by") == LABELLER
        and record.get("label") == "fail"
        and is_seeded(str(record.get("run_id", "")), record.get("initiative_id"))
    )


def label_signature_problem(
    config: Config,
    root: Path,
    record: dict[str, Any],
    verdicts: Callable[[str], str | None] | None = None,
    *,
    now: datetime | None = None,
) -> str | None:
    """What is wrong with a stored (or about to be stored) label's signature at
    ``now`` (default: the time of checking), or None (see :class:`LabelSignatures`,
    which checks many labels at less cost)."""
    return LabelSignatures(config, root, verdicts, now=now).problem(record)


class SwitchCommit:
    """The :data:`SwitchCheck` of a reader: whether an unsigned label, exactly as
    stored (its content digest), was in the kit's label ledger at the
    ``required_since`` commit, read from git's objects once, on the first
    unsigned label asked about (no per-record git work).

    The commit must be in the history of the repository's HEAD: a commit
    elsewhere (another branch, a missing object of a shallow clone) shows
    nothing about the history being read. When git cannot answer, no unsigned
    label counts, and the reason says why."""

    def __init__(self, store: Store, commit: str) -> None:
        self.store, self.commit = store, commit
        self._labels: set[str] | None = None
        self._unreadable: str | None = None

    def _load(self) -> None:
        short = self.commit[:12]
        try:
            repo = Repository(self.store.root)
        except GitError as exc:
            self._unreadable = (
                f"the kit is not in a git repository ({exc}), so nothing shows the label was "
                f"committed before {short}: outside git, unsigned labels do not count"
            )
            return
        try:
            if repo.merge_base(self.commit, "HEAD") != self.commit:
                self._unreadable = (
                    f"commit {short} is not in the history of this repository's HEAD (not "
                    "fetched, a shallow clone, or another branch's), so nothing shows the "
                    "label predates it; fetch the full history (in CI: fetch-depth 0)"
                )
                return
            found = digests_at_commit(self.store, repo, self.commit, ["acceptances"])
        except BadInput as exc:  # GitError included
            self._unreadable = (
                f"the kit's labels at commit {short} cannot be read ({exc}), so nothing shows "
                "the label predates it"
            )
            return
        self._labels = set(found["acceptances"])

    def __call__(self, record: dict[str, Any]) -> str | None:
        if self._labels is None and self._unreadable is None:
            self._load()
        if self._unreadable is not None:
            return self._unreadable
        try:
            digest = record_digest(record)
        except BadInput as exc:
            return f"its content cannot be encoded ({exc})"
        if digest in self._labels:  # type: ignore[operator]
            return None
        return (
            "it is not in the kit's labels at that commit (recorded after the switch, or "
            "changed since; its own recorded_at does not count)"
        )


def switch_check(config: Config, store: Store) -> SwitchCheck | None:
    """A reader's :class:`SwitchCommit` for the kit (None: no ``required_since``)."""
    since = settings(config).required_since
    return None if since is None else SwitchCommit(store, since)


def recorded_after_switch(record: dict[str, Any]) -> str | None:
    """The :data:`SwitchCheck` of a label being written, or added by a change: it is
    not in the kit at the switch commit, whatever it says of its own time."""
    return "it is recorded after the switch"


class LabelSignatures:
    """The signature rule of one kit, for checking many labels in one pass.

    What every label's check reads from the kit (the signing settings, the
    allowed-signers file) is read once, on the first signed label, and kept for
    the pass; make a new one for a new pass (a reader, ``pmos ledger pack``,
    ``pmos ledger verify``), so an edited file is read again. ``verdicts`` gives
    the :func:`verdict_sha256` of a verdict by record id (None: not in the kit),
    for the labels whose signature binds the verdict they judge.

    ``now`` is the time of checking (:func:`pmos.gate.clock.checking_time` when
    not given), read once for the pass: a signer's validity window is checked at
    that time, never at the label's own ``recorded_at``, which whoever made the
    label wrote (see :mod:`pmos.gate.clock`).

    ``at_switch`` tells whether an unsigned label was in the kit at the
    ``required_since`` commit (see the module docstring); asked only of
    unsigned labels when ``required_since`` is set. Without it every unsigned
    label is taken to be recorded after the switch (a writer's new label).
    """

    def __init__(
        self,
        config: Config,
        root: Path,
        verdicts: Callable[[str], str | None] | None = None,
        *,
        now: datetime | None = None,
        at_switch: SwitchCheck | None = None,
    ) -> None:
        self.now = checking_time() if now is None else now
        self.at_switch = at_switch or recorded_after_switch
        self.rules = settings(config)
        self.kit = kit_id(config)
        self.path = allowed_signers_path(config, root)
        self.verdicts = verdicts
        self._signers: list[allowed_signers.Signer] | None = None
        #: Signatures checked ahead by :meth:`warm`, each taken once by :meth:`problem`.
        self._checked: dict[tuple[str, bytes], Any] = {}

    def signers(self) -> list[allowed_signers.Signer]:
        """The allowed signers (:attr:`path` is not None), read on first use."""
        if self._signers is None:
            self._signers = [] if self.path is None else allowed_signers.load(self.path)
        return self._signers

    def payload(self, record: dict[str, Any]) -> bytes:
        """What ``record``'s signature must cover in this kit (:func:`signed_payload`)."""
        if record.get("schema_version", 1) == 1:
            return signed_payload(record)
        named = record.get("gate_record_id")
        digest = None
        if isinstance(named, str) and self.verdicts is not None:
            digest = self.verdicts(named)
        return signed_payload(record, kit=self.kit, verdict=digest)

    def warm(self, records: list[Any]) -> None:
        """Check the signatures of ``records`` now, so that :meth:`problem` of each
        later costs no cryptography: a reader does this for the loose labels
        before it reads the packs, while it would otherwise wait for another
        process's part (``pmos metrics``)."""
        if self.path is None:
            return
        for record in records:
            signature = record.get("signature") if isinstance(record, dict) else None
            if isinstance(signature, dict) and isinstance(signature.get("sshsig"), str):
                try:
                    key = (signature["sshsig"], self.payload(record))
                except Exception:
                    continue
                self._checked[key] = self._verify(*key)

    @staticmethod
    def _verify(armored: str, payload: bytes) -> Any:
        """The verified signature, or the reason it does not verify (never raises:
        a signature the library cannot handle is a reported record, not a crash)."""
        try:
            return sshsig.verify(armored, payload, NAMESPACE)
        except sshsig.SignatureInvalid as exc:
            return exc
        except Exception as exc:  # a library error sshsig did not foresee
            return sshsig.SignatureInvalid(f"{type(exc).__name__}: {exc}")

    def unsigned_before_switch(self, record: dict[str, Any]) -> bool:
        """An unsigned label in the kit at the ``required_since`` commit: valid,
        counted, and marked unsigned wherever labels are counted."""
        return (
            record.get("signature") is None
            and self.rules.required_since is not None
            and not exempt(record)
            and self.at_switch(record) is None
        )

    def _unsigned_problem(self, record: dict[str, Any]) -> str | None:
        """Why an unsigned label does not count, or None when it needs no signature."""
        if not self.rules.required or exempt(record):
            return None
        since = self.rules.required_since
        if since is None:
            return (
                "unsigned label: this kit requires the PM's signature on every PM label "
                f"(pmos.yaml signing); {HAND_OVER}"
            )
        why = self.at_switch(record)
        if why is None:
            return None
        return (
            "unsigned label: this kit requires the PM's signature on every PM label not "
            f"already in the kit at commit {since[:12]} (pmos.yaml signing.required_since), "
            f"and {why}; {HAND_OVER}"
        )

    def problem(self, record: dict[str, Any]) -> str | None:
        """What is wrong with a label's signature, or None:

        * signing not configured: None, whatever the record holds (nothing to check
          against);
        * required (``required: true``, or ``required_since`` and the label is not
          in the kit at that commit) and the label is unsigned (seed labels
          excepted): a problem;
        * a signature is present: it must verify over :meth:`payload` in the
          ``pmos-label`` namespace, and the allowed-signers file must list its key
          for the label's ``by`` at the time of checking (:attr:`now`).
        """
        signature = record.get("signature")
        if signature is None:
            return self._unsigned_problem(record)
        if self.path is None:
            return None
        if not isinstance(signature, dict) or not isinstance(signature.get("sshsig"), str):
            return "malformed signature field"
        if record.get("schema_version", 1) != 1 and self.kit is None:
            return (
                "the label's signature names its kit, but pmos.yaml has no kit_id "
                f"(run '{KIT_ID_COMMAND}' once and commit pmos.yaml)"
            )
        try:
            key = (signature["sshsig"], self.payload(record))
        except Exception as exc:  # a forged record whose content cannot be encoded
            return f"invalid signature: the label's content cannot be encoded ({exc})"
        verified = self._checked.pop(key, None) or self._verify(*key)
        if isinstance(verified, sshsig.SignatureInvalid):
            return f"invalid signature: {verified}"
        if signature.get("key") != verified.fingerprint:
            return (
                f"signature key field {signature.get('key')!r} is not the signing key "
                f"{verified.fingerprint}"
            )
        by = str(record.get("by", ""))
        signers = self.signers()
        if any(s.allows(by, NAMESPACE, verified.key_blob, self.now) for s in signers):
            return None
        at = seconds_rfc3339(self.now)
        window = [s for s in signers if s.allows_at_some_time(by, NAMESPACE, verified.key_blob)]
        if window:
            return (
                f"signed by key {verified.fingerprint}, which {self.rules.allowed_signers} "
                f"allows to sign as {by!r} only {window[0].window()} (line {window[0].line}): "
                f"not at the time of checking, {at}; the label's own date "
                f"({record.get('recorded_at')}) does not count"
            )
        return (
            f"signed by key {verified.fingerprint}, which {self.rules.allowed_signers} does "
            f"not allow to sign as {by!r} (namespace {NAMESPACE}) at the time of checking, {at}"
        )

    def changes_after(self) -> datetime | None:
        """The first instant after :attr:`now` at which a validity window of the
        allowed-signers file opens or closes (None: none does), so an outcome
        checked at :attr:`now` may differ from then on (a pack's recorded
        screening holds until then; :mod:`pmos.gate.screen`)."""
        if self.path is None:
            return None
        bounds = [
            bound
            for s in self.signers()
            for bound in (s.valid_after, s.valid_before)
            if bound is not None and bound > self.now
        ]
        return min(bounds, default=None)
