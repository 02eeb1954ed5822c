"""Signed PM labels: only a PM can write a PM label.

A PM label is the ground truth the gate is calibrated against, so anyone able
to write one (the evaluator agent included) could grade the gate's homework.
A kit can therefore require each label to carry the PM's SSH signature, made
the way git signs commits::

    # pmos.yaml
    signing:
      allowed_signers: .pmos/allowed_signers   # OpenSSH format, relative to the kit root
      required: true

``pmos accept RUN --label pass --by ana@example.com --sign-key ~/.ssh/id_ed25519``
signs the label's content fields (:func:`signed_payload`) in OpenSSH's SSHSIG
format under the namespace ``pmos-label``; the signature verifies with
``ssh-keygen -Y verify -n pmos-label -I ana@example.com -f allowed_signers``.
A label is accepted when the allowed-signers file lists the signing key for the
label's ``by`` (the principal) and the namespace. Agents never hold a PM's key:
they cannot sign, so with ``required: true`` they cannot write a label.

The seed labels of the kit's own known-bad runs (``fail`` by ``seeded``) are
answer keys shipped with the kit, not a person's judgment; they need no
signature.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from pmos.errors import BadInput, ConfigError
from pmos.gate import allowed_signers, sshsig
from pmos.gate.clock import checking_time
from pmos.gate.seeded import LABELLER, is_seeded
from pmos.kit import Config
from pmos.paths import resolve_inside
from pmos.timestamps import seconds_rfc3339

NAMESPACE = "pmos-label"
#: Fields of a stored label that are not its content: the chain's and the signature's.
UNSIGNED_FIELDS = frozenset({"prev_hash", "hash", "signature"})


class Settings(NamedTuple):
    """pmos.yaml's ``signing`` section; ``allowed_signers`` is None when it has none."""

    allowed_signers: str | None
    required: bool


def settings(config: Config) -> Settings:
    section = config.raw.get("signing") or {}
    return Settings(section.get("allowed_signers"), bool(section.get("required", False)))


@cache
def _content_fields() -> frozenset[str]:
    from pmos.schemas import load_schema

    return frozenset(load_schema("acceptance")["properties"]) - UNSIGNED_FIELDS


def signed_payload(record: dict[str, Any]) -> bytes:
    """The bytes a label's signature covers: its content fields (every field of the
    acceptance schema but the chain's and the signature itself), as canonical JSON
    (keys sorted, no spaces, UTF-8, non-ASCII characters as themselves). ``record_id``
    and ``recorded_at`` are among them, so a signature cannot be moved to another label.

    orjson writes exactly what ``json.dumps(sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)`` writes for a label's values (strings, integers, lists,
    null: the schema has no floats, which the two would spell differently), ten
    times faster; a value orjson refuses (an integer beyond 64 bits in a forged
    record) falls back to the standard library."""
    fields = _content_fields()
    content = {k: v for k, v in record.items() if k in fields}
    try:
        return orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return json.dumps(
            content, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode("utf-8", "surrogatepass")


def sign_label(record: dict[str, Any], private_key: Any) -> dict[str, Any]:
    """The ``signature`` field for a label record whose content fields are final.

    ``private_key`` is a ``cryptography`` private key or, to sign many labels, a
    :class:`~pmos.gate.sshsig.SigningKey` made from it once."""
    key = sshsig.signing_key(private_key)
    return {
        "namespace": NAMESPACE,
        "key": key.fingerprint,
        "sshsig": key.sign(signed_payload(record), NAMESPACE),
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
    config: Config, root: Path, record: dict[str, Any], *, now: datetime | None = None
) -> str | None:
    """What is wrong with a stored (or about to be stored) label's signature at
    ``now`` (default: the time of checking), or None (see :class:`LabelSignatures`,
    which checks many labels at less cost)."""
    return LabelSignatures(config, root, now=now).problem(record)


class LabelSignatures:
    """The signature rule of one kit, for checking many labels in one pass.

    What every label's check reads from the kit (the signing settings, the
    allowed-signers file) is read once, on the first signed label, and kept for
    the pass; make a new one for a new pass (a reader, ``pmos ledger pack``,
    ``pmos ledger verify``), so an edited file is read again.

    ``now`` is the time of checking (:func:`pmos.gate.clock.checking_time` when
    not given), read once for the pass: a signer's validity window is checked at
    that time, never at the label's own ``recorded_at``, which whoever made the
    label wrote (see :mod:`pmos.gate.clock`).
    """

    def __init__(self, config: Config, root: Path, *, now: datetime | None = None) -> None:
        self.now = checking_time() if now is None else now
        self.rules = settings(config)
        self.path = allowed_signers_path(config, root)
        self._signers: list[allowed_signers.Signer] | None = None
        #: Signatures checked ahead by :meth:`warm`, each taken once by :meth:`problem`.
        self._checked: dict[tuple[str, bytes], Any] = {}

    def signers(self) -> list[allowed_signers.Signer]:
        """The allowed signers (:attr:`path` is not None), read on first use."""
        if self._signers is None:
            self._signers = [] if self.path is None else allowed_signers.load(self.path)
        return self._signers

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
                    key = (signature["sshsig"], signed_payload(record))
                except Exception:
                    continue
                self._checked[key] = self._verify(*key)

    @staticmethod
    def _verify(armored: str, payload: bytes) -> Any:
        """The verified signature, or the reason it does not verify."""
        try:
            return sshsig.verify(armored, payload, NAMESPACE)
        except sshsig.SignatureInvalid as exc:
            return exc

    def problem(self, record: dict[str, Any]) -> str | None:
        """What is wrong with a label's signature, or None:

        * signing not configured: None, whatever the record holds (nothing to check
          against);
        * ``required`` and the label is unsigned (seed labels excepted): a problem;
        * a signature is present: it must verify over :func:`signed_payload` in the
          ``pmos-label`` namespace, and the allowed-signers file must list its key
          for the label's ``by`` at the time of checking (:attr:`now`).
        """
        signature = record.get("signature")
        if signature is None:
            if self.rules.required and not exempt(record):
                return (
                    "unsigned label: pmos.yaml signing.required is true, so a PM label needs "
                    "the PM's signature (pmos accept --sign-key PATH)"
                )
            return None
        if self.path is None:
            return None
        if not isinstance(signature, dict) or not isinstance(signature.get("sshsig"), str):
            return "malformed signature field"
        key = (signature["sshsig"], signed_payload(record))
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


# ---------------------------------------------------------------- which key


def git_signing_key(cwd: Path | None = None) -> Path | None:
    """git's ``user.signingkey`` when git signs with SSH (``gpg.format ssh``), as the
    private key file to sign with; None when git is not set up so."""

    def config(name: str) -> str | None:
        try:
            proc = subprocess.run(
                ["git", "config", "--get", name],
                capture_output=True,
                text=True,
                cwd=cwd,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        value = proc.stdout.strip()
        return value if proc.returncode == 0 and value else None

    if (config("gpg.format") or "").lower() != "ssh":
        return None
    key = config("user.signingkey")
    if key is None:
        return None
    if key.startswith("key::") or key.startswith("ssh-"):
        raise BadInput(
            "git's user.signingkey is a literal public key (signed through ssh-agent), which "
            "pmos cannot use; give the private key file with --sign-key PATH"
        )
    path = Path(os.path.expanduser(key))
    if path.suffix == ".pub" and path.with_suffix("").exists():
        path = path.with_suffix("")  # git accepts the .pub path; the private key sits beside it
    return path
