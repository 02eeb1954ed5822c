"""OpenSSH ``allowed_signers`` files: which key may sign as which principal.

The same file ``git`` uses for ``gpg.ssh.allowedSignersFile`` and
``ssh-keygen -Y verify -f`` reads (ssh-keygen(1), "ALLOWED SIGNERS")::

    # principals        [options]                   keytype      key
    ana@example.com     namespaces="pmos-label"     ssh-ed25519  AAAAC3Nz...
    "bo@example.com,ci" valid-after="20260101"      ssh-rsa      AAAAB3Nz...

Principals and namespaces are pattern lists (``*``, ``?``, ``!`` negation);
``valid-after``/``valid-before`` bound when a signature counts (here: the
label's ``recorded_at``). ``cert-authority`` lines name certificate
authorities, which pmos does not support: they never match a plain key.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache, lru_cache
from pathlib import Path

from pmos.errors import BadInput
from pmos.gate.sshsig import KEY_TYPES


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
        if self.cert_authority or key_blob != self.key_blob:
            return False
        if not match_pattern_list(principal, self.principals):
            return False
        if self.namespaces is not None and not match_pattern_list(namespace, self.namespaces):
            return False
        if self.valid_after is not None and at < self.valid_after:
            return False
        return self.valid_before is None or at <= self.valid_before


def match_pattern_list(value: str, patterns: tuple[str, ...]) -> bool:
    """OpenSSH's match_pattern_list: some pattern matches and no negated one does."""
    matched = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        if _compiled(pattern[1:] if negated else pattern).fullmatch(value):
            if negated:
                return False
            matched = True
    return matched


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str]:
    """A pattern, compiled once per process: every label checked asks the same few."""
    return re.compile(fnmatch.translate(pattern).replace("\\Z", ""), re.DOTALL)


def _tokens(line: str) -> list[str]:
    """Whitespace-separated tokens; double quotes group (and are kept inside options)."""
    out: list[str] = []
    current = ""
    quoted = False
    for ch in line:
        if ch == '"':
            quoted = not quoted
            current += ch
        elif ch.isspace() and not quoted:
            if current:
                out.append(current)
            current = ""
        else:
            current += ch
    if quoted:
        raise ValueError("an unclosed quote")
    if current:
        out.append(current)
    return out


def _split_options(text: str) -> list[str]:
    parts, current, quoted = [], "", False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


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


def _signer(line: str, number: int) -> Signer:
    tokens = _tokens(line)
    if len(tokens) < 3:
        raise ValueError("expected: principals [options] keytype base64-key [comment]")
    principals = tuple(p for p in tokens[0].strip('"').split(",") if p)
    rest = tokens[1:]
    options: dict[str, str | bool] = {}
    if rest[0] not in KEY_TYPES:
        for option in _split_options(rest[0]):
            name, eq, value = option.partition("=")
            options[name.lower()] = value.strip('"') if eq else True
        rest = rest[1:]
    if len(rest) < 2 or rest[0] not in KEY_TYPES:
        raise ValueError(f"unknown key type {rest[0] if rest else '(none)'!r}")
    try:
        blob = base64.b64decode(rest[1], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the key is not base64") from None
    unknown = set(options) - {"namespaces", "valid-after", "valid-before", "cert-authority"}
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(sorted(unknown))}")
    namespaces = options.get("namespaces")
    after, before = options.get("valid-after"), options.get("valid-before")
    return Signer(
        principals=principals,
        key_blob=blob,
        namespaces=tuple(namespaces.split(",")) if isinstance(namespaces, str) else None,
        valid_after=_instant(after) if isinstance(after, str) else None,
        valid_before=_instant(before) if isinstance(before, str) else None,
        cert_authority=bool(options.get("cert-authority")),
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
