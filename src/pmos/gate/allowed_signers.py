"""OpenSSH ``allowed_signers`` files: which key may sign as which principal.

The same file ``git`` uses for ``gpg.ssh.allowedSignersFile`` and
``ssh-keygen -Y verify -f`` reads (ssh-keygen(1), "ALLOWED SIGNERS")::

    # principals        [options]                   keytype      key
    ana@example.com     namespaces="pmos-label"     ssh-ed25519  AAAAC3Nz...
    "bo@example.com,ci" valid-after="20260101"      ssh-rsa      AAAAB3Nz...

Principals and namespaces are pattern lists, matched as OpenSSH's
``match_pattern_list`` matches them: comma-separated patterns where ``*``
matches any run of characters, ``?`` any one character, and a pattern led by
``!`` is a negation (a match of it refuses, whatever else matched). Every other
character is itself: ``[`` and ``]`` are no character classes (``bot[x]``
matches only "bot[x]", unlike :mod:`fnmatch`), and case matters;
``valid-after``/``valid-before`` bound when a signature counts (here: the
time of checking, never the label's own ``recorded_at``; see
:mod:`pmos.gate.clock`). ``cert-authority`` lines name certificate
authorities, which pmos does not support: they never match a plain key.

The line syntax is read by the ``sshsig`` package (:class:`sshsig.allowed_signers.
AllowedSigner`, written to follow ssh-keygen's own parser: option values must be
double-quoted, as ssh-keygen requires, so a file pmos accepts is one ssh-keygen
reads the same way). What a line *means* is ours: ``sshsig`` compares keys only
(it supports a principal of ``*`` and the ``git`` namespace, no validity
dates), while a PM label needs the principal, namespace and validity rules
above, and keys of every type ssh-keygen signs with (see DECISIONS.md, D16).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache, lru_cache
from pathlib import Path

from pmos.errors import BadInput
from pmos.gate.sshsig import KEY_TYPES
from pmos.timestamps import seconds_rfc3339


@dataclass(frozen=True)
class Signer:
    principals: tuple[str, ...]
    key_blob: bytes
    namespaces: tuple[str, ...] | None = None
    valid_after: datetime | None = None
    valid_before: datetime | None = None
    cert_authority: bool = False
    line: int = 0

    def allows(self, principal: str, namespace: str, key_blob: bytes, at: datetime) -> bool:
        """Whether this line lets ``key_blob`` sign as ``principal`` in ``namespace``
        at ``at`` (the time of checking)."""
        if not self.allows_at_some_time(principal, namespace, key_blob):
            return False
        if self.valid_after is not None and at < self.valid_after:
            return False
        return self.valid_before is None or at <= self.valid_before

    def allows_at_some_time(self, principal: str, namespace: str, key_blob: bytes) -> bool:
        """Whether this line would allow the signature inside its validity window."""
        if self.cert_authority or key_blob != self.key_blob:
            return False
        if not match_pattern_list(principal, self.principals):
            return False
        return self.namespaces is None or match_pattern_list(namespace, self.namespaces)

    def window(self) -> str:
        """The validity window in words, for a message."""
        parts = []
        if self.valid_after is not None:
            parts.append(f"from {seconds_rfc3339(self.valid_after)}")
        if self.valid_before is not None:
            parts.append(f"until {seconds_rfc3339(self.valid_before)}")
        return " ".join(parts) or "at any time"


def match_pattern_list(value: str, patterns: tuple[str, ...]) -> bool:
    """OpenSSH's match_pattern_list: some pattern matches and no negated one does."""
    matched = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        if _compiled(pattern[1:] if negated else pattern).fullmatch(value.encode("utf-8")):
            if negated:
                return False
            matched = True
    return matched


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[bytes]:
    """A pattern (``*`` and ``?`` wild, everything else literal, as in OpenSSH's
    match.c), compiled once per process: every label checked asks the same few.
    OpenSSH matches bytes (``?`` is one byte of UTF-8), so this does too."""
    wild = {"*": b".*", "?": b"."}
    parts = (wild.get(c) or re.escape(c.encode("utf-8")) for c in pattern)
    return re.compile(b"".join(parts), re.DOTALL)


def _instant(text: str) -> datetime:
    utc = text.endswith(("Z", "z"))
    digits = text[:-1] if utc else text
    formats = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}
    if not digits.isdigit() or len(digits) not in formats:
        raise ValueError(f"{text!r} is not YYYYMMDD[HHMM[SS]][Z]")
    moment = datetime.strptime(digits, formats[len(digits)])
    # ssh-keygen reads a time without Z as local time.
    return moment.replace(tzinfo=UTC) if utc else moment.astimezone(UTC)


def parse(text: str, source: str = "allowed_signers") -> list[Signer]:
    """Every signer line of an allowed-signers file; a malformed line is refused whole."""
    signers: list[Signer] = []
    problems: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            signers.append(_signer(line, number))
        except ValueError as exc:
            problems.append(f"{source}:{number}: {exc}")
    if problems:
        raise BadInput("the allowed-signers file is malformed:\n  " + "\n  ".join(problems))
    return signers


#: What a well-formed line looks like, added to a syntax error's message.
SYNTAX = "expected: principals [options] keytype base64-key [comment], option values in quotes"
OPTIONS = frozenset({"namespaces", "valid-after", "valid-before", "cert-authority"})


def _signer(line: str, number: int) -> Signer:
    # Deferred: sshsig loads cryptography as it is imported (about 20 ms of every
    # writer's start-up), and only a reading of an allowed-signers file needs it.
    from sshsig.allowed_signers import AllowedSigner

    try:
        parsed = AllowedSigner.parse(line)
    except ValueError as exc:
        raise ValueError(f"{exc} ({SYNTAX})") from None
    if parsed.key_type not in KEY_TYPES:
        raise ValueError(f"unknown key type {parsed.key_type!r}")
    try:
        blob = base64.b64decode(parsed.base64_key, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the key is not base64") from None
    options = parsed.options or {}
    unknown = set(options) - OPTIONS  # sshsig refuses others today; never ignore one
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(sorted(unknown))}")
    namespaces = options.get("namespaces")
    after, before = options.get("valid-after"), options.get("valid-before")
    return Signer(
        principals=tuple(p for p in parsed.principals.split(",") if p),
        key_blob=blob,
        namespaces=tuple(namespaces.split(",")) if namespaces is not None else None,
        valid_after=_instant(after) if after is not None else None,
        valid_before=_instant(before) if before is not None else None,
        cert_authority="cert-authority" in options,
        line=number,
    )


def load(path: Path) -> list[Signer]:
    """The signers of ``path``, parsed once per version of the file."""
    try:
        st = path.stat()
    except OSError as exc:
        raise BadInput(
            f"signing.allowed_signers {path} cannot be read: {exc.strerror or exc}"
        ) from None
    return _load(str(path), st.st_mtime_ns, st.st_size)


@cache
def _load(path: str, mtime_ns: int, size: int) -> list[Signer]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"signing.allowed_signers {path} cannot be read: {exc}") from None
    return parse(text, path)
