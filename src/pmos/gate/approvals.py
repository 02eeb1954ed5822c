"""Signed policy approvals: a PM's word that a kit's trust files may change.

The files that decide what counts (pmos.yaml, the allowed-signers file,
rubrics, known-bad cases, the exemplar log and its override anchors) are the
kit's policy. A change that edits them could make its own records count, so
``pmos gate`` fails it unless a PM approved the new policy:
``pmos policy approve --by NAME --sign-key KEY`` records the SHA-256 of every
trust file as it now is, signed with the PM's SSH key in the namespace
``pmos-policy`` (distinct from labels' ``pmos-label``, so neither signature
can stand for the other). The gate then checks the signature against the
*base* revision's allowed-signers file, at the time of checking.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from pmos.errors import BadInput, RecordRejected, Violation
from pmos.gate import allowed_signers, sshsig
from pmos.gate.signing import allowed_signers_path, settings
from pmos.kit import Config, Kit
from pmos.store.append import Draft, append, record_meta

KIND = "policy"
NAMESPACE = "pmos-policy"


def signed_payload(record: dict[str, Any]) -> bytes:
    """What an approval's signature covers: every field but the signature itself,
    as canonical JSON (keys sorted, compact, UTF-8)."""
    content = {k: v for k, v in record.items() if k != "signature"}
    return orjson.dumps(content, option=orjson.OPT_SORT_KEYS)


def signature_problem(
    config: Config, root: Path, record: dict[str, Any], *, at: datetime | None = None
) -> str | None:
    """What is wrong with an approval's signature under ``config`` (a kit's
    pmos.yaml at ``root``), or None. Validity windows are checked at ``at``, the
    time of checking (now by default), never at the record's own date."""
    path = allowed_signers_path(config, root)
    if path is None:
        return (
            "the policy names no allowed-signers file (pmos.yaml signing.allowed_signers), "
            "so no PM can approve a policy change"
        )
    signature = record.get("signature")
    if not isinstance(signature, dict) or not isinstance(signature.get("sshsig"), str):
        return "the approval is not signed"
    try:
        verified = sshsig.verify(signature["sshsig"], signed_payload(record), NAMESPACE)
    except sshsig.SignatureInvalid as exc:
        return f"invalid signature: {exc}"
    if signature.get("key") != verified.fingerprint:
        return f"signature key field {signature.get('key')!r} is not the signing key"
    by = str(record.get("by", ""))
    when = at or datetime.now(UTC)
    try:
        signers = allowed_signers.load(path)
    except BadInput as exc:
        return str(exc)
    if not any(s.allows(by, NAMESPACE, verified.key_blob, when) for s in signers):
        return (
            f"signed by key {verified.fingerprint}, which {settings(config).allowed_signers} "
            f"does not allow to sign as {by!r} (namespace {NAMESPACE})"
        )
    return None


def approval_problems(kit: Kit, record: dict[str, Any]) -> list[Violation]:
    """The writer's rule for a stored approval: a signature the kit allows."""
    problem = signature_problem(kit.config, kit.root, record)
    return [] if problem is None else [Violation("policy-signature", "signature", problem)]


def record_approval(
    kit: Kit, *, by: str, files: list[dict[str, Any]], signing_key: Any, note: str | None = None
) -> dict[str, Any]:
    """Sign and store an approval of ``files`` (each ``{"path", "sha256"}``)."""
    record: dict[str, Any] = {**record_meta(KIND), "by": by, "files": files}
    if note is not None:
        record["note"] = note
    key = sshsig.signing_key(signing_key)
    record["signature"] = {
        "namespace": NAMESPACE,
        "key": key.fingerprint,
        "sshsig": key.sign(signed_payload(record), NAMESPACE),
    }
    problem = signature_problem(kit.config, kit.root, record)
    if problem is not None:
        raise RecordRejected(
            "policy-approval", [Violation("policy-signature", "signature", problem)]
        )
    return append(kit.store, KIND, lambda: Draft([record])).record
