"""OpenSSH signatures (the SSHSIG format of ``ssh-keygen -Y sign``), in-process.

A PM signs labels with the SSH key they already sign git commits with, so the
ledger can show who really recorded a label. The format is OpenSSH's own
(PROTOCOL.sshsig): a signature made here verifies with ``ssh-keygen -Y verify``
and one made by ``ssh-keygen -Y sign`` verifies here. The cryptography comes
from the ``cryptography`` package; pmos never runs ``ssh-keygen``.

Supported keys: Ed25519, RSA (rsa-sha2-512 and rsa-sha2-256 signatures) and
ECDSA on NIST P-256, P-384 and P-521. Security-key (``sk-``) keys and
certificates are not: a signature by one is reported as unsupported, never
accepted.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pmos.errors import BadInput

MAGIC = b"SSHSIG"
VERSION = 1
ARMOR_BEGIN = "-----BEGIN SSH SIGNATURE-----"
ARMOR_END = "-----END SSH SIGNATURE-----"
HASHES = {"sha512": hashlib.sha512, "sha256": hashlib.sha256}
KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)


class SignatureInvalid(ValueError):
    """A signature that is malformed, of another namespace, or does not verify."""


class KeyEncrypted(BadInput):
    """The private key needs a passphrase that was not given."""


# ---------------------------------------------------------------- wire format


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _mpint(value: int) -> bytes:
    raw = value.to_bytes((value.bit_length() + 8) // 8, "big") if value else b""
    return _string(raw)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def raw(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise SignatureInvalid("truncated")
        out = self.data[self.at : self.at + n]
        self.at += n
        return out

    def uint32(self) -> int:
        return struct.unpack(">I", self.raw(4))[0]

    def string(self) -> bytes:
        return self.raw(self.uint32())

    def mpint(self) -> int:
        return int.from_bytes(self.string(), "big", signed=True)

    def done(self) -> bool:
        return self.at == len(self.data)


def fingerprint(key_blob: bytes) -> str:
    """OpenSSH's SHA256 fingerprint of a public key blob (``SHA256:...``)."""
    digest = base64.b64encode(hashlib.sha256(key_blob).digest()).decode("ascii").rstrip("=")
    return f"SHA256:{digest}"


def key_type(key_blob: bytes) -> str:
    try:
        return _Reader(key_blob).string().decode("ascii")
    except (SignatureInvalid, UnicodeDecodeError):
        return "?"


@lru_cache(maxsize=256)
def _public_key(key_blob: bytes) -> Any:
    """The key object of a blob; cached, since a kit's labels come from a few PMs' keys."""
    from cryptography.hazmat.primitives.serialization import load_ssh_public_key

    kind = key_type(key_blob)
    if kind.startswith("sk-"):
        raise SignatureInvalid(f"security-key ({kind}) signatures are not supported")
    text = kind.encode("ascii") + b" " + base64.b64encode(key_blob)
    try:
        return load_ssh_public_key(text)
    except (ValueError, TypeError) as exc:
        raise SignatureInvalid(f"public key of type {kind} cannot be read: {exc}") from None


def public_key_blob(public_key: Any) -> bytes:
    """The SSH wire blob of a ``cryptography`` public key."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    text = public_key.public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH)
    return base64.b64decode(text.split()[1])


def _signed_data(namespace: str, hash_name: str, message: bytes) -> bytes:
    digest = HASHES[hash_name](message).digest()
    return (
        MAGIC
        + _string(namespace.encode("utf-8"))
        + _string(b"")
        + _string(hash_name.encode("ascii"))
        + _string(digest)
    )


# ---------------------------------------------------------------- signing


def load_private_key(path: Path, passphrase: bytes | None = None) -> Any:
    """An OpenSSH (or PEM) private key file; refuses an encrypted one without its passphrase."""
    from cryptography.hazmat.primitives.serialization import (
        load_pem_private_key,
        load_ssh_private_key,
    )

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise BadInput(f"--sign-key {path}: cannot read the key: {exc.strerror or exc}") from None
    loader = load_ssh_private_key if b"OPENSSH PRIVATE KEY" in data else load_pem_private_key
    try:
        return loader(data, passphrase)
    except TypeError:
        raise KeyEncrypted(
            f"--sign-key {path} is encrypted: give its passphrase when asked "
            "(or use an unencrypted signing key)"
        ) from None
    except ValueError as exc:
        raise BadInput(
            f"--sign-key {path} is not a usable private key ({exc}); give the private key "
            "file, not the .pub file"
        ) from None
    except Exception as exc:  # cryptography raises UnsupportedAlgorithm for odd keys
        raise BadInput(f"--sign-key {path}: unsupported key: {exc}") from None


def sign(private_key: Any, message: bytes, namespace: str) -> str:
    """The armored SSHSIG signature of ``message`` (what ``ssh-keygen -Y sign`` prints)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

    data = _signed_data(namespace, "sha512", message)
    if isinstance(private_key, ed25519.Ed25519PrivateKey):
        blob = _string(b"ssh-ed25519") + _string(private_key.sign(data))
    elif isinstance(private_key, rsa.RSAPrivateKey):
        signature = private_key.sign(data, padding.PKCS1v15(), hashes.SHA512())
        blob = _string(b"rsa-sha2-512") + _string(signature)
    elif isinstance(private_key, ec.EllipticCurvePrivateKey):
        curve = {"secp256r1": "nistp256", "secp384r1": "nistp384", "secp521r1": "nistp521"}
        name = curve.get(private_key.curve.name)
        if name is None:
            raise BadInput(f"ECDSA curve {private_key.curve.name} is not an SSH curve")
        hash_of = {"nistp256": hashes.SHA256, "nistp384": hashes.SHA384, "nistp521": hashes.SHA512}
        r, s = decode_dss_signature(private_key.sign(data, ec.ECDSA(hash_of[name]())))
        blob = _string(f"ecdsa-sha2-{name}".encode()) + _string(_mpint(r) + _mpint(s))
    else:
        raise BadInput(f"keys of type {type(private_key).__name__} cannot sign SSH signatures")
    envelope = (
        MAGIC
        + struct.pack(">I", VERSION)
        + _string(public_key_blob(private_key.public_key()))
        + _string(namespace.encode("utf-8"))
        + _string(b"")
        + _string(b"sha512")
        + _string(blob)
    )
    encoded = base64.b64encode(envelope).decode("ascii")
    lines = [encoded[i : i + 70] for i in range(0, len(encoded), 70)]
    return "\n".join([ARMOR_BEGIN, *lines, ARMOR_END]) + "\n"


# ---------------------------------------------------------------- verifying


@dataclass(frozen=True)
class Verified:
    """A signature that verified: the signer's public key blob and fingerprint."""

    key_blob: bytes

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.key_blob)


def verify(armored: str, message: bytes, namespace: str) -> Verified:
    """Check an armored SSHSIG signature of ``message`` under ``namespace``.

    Says nothing about *who* may sign: that is the allowed-signers file's job
    (:mod:`pmos.gate.allowed_signers`). Raises :class:`SignatureInvalid`.
    """
    text = armored.strip()
    if not (text.startswith(ARMOR_BEGIN) and text.endswith(ARMOR_END)):
        raise SignatureInvalid("not an armored SSH signature")
    body = "".join(text[len(ARMOR_BEGIN) : -len(ARMOR_END)].split())
    try:
        envelope = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise SignatureInvalid("the armored body is not base64") from None
    reader = _Reader(envelope)
    if reader.raw(6) != MAGIC:
        raise SignatureInvalid("not an SSHSIG signature")
    if reader.uint32() != VERSION:
        raise SignatureInvalid("unsupported SSHSIG version")
    key_blob = reader.string()
    signed_namespace = reader.string().decode("utf-8", "replace")
    reader.string()  # reserved
    hash_name = reader.string().decode("ascii", "replace")
    blob = reader.string()
    if not reader.done():
        raise SignatureInvalid("trailing data after the signature")
    if signed_namespace != namespace:
        raise SignatureInvalid(f"signed for namespace {signed_namespace!r}, not {namespace!r}")
    if hash_name not in HASHES:
        raise SignatureInvalid(f"unsupported hash {hash_name!r}")
    _check(key_blob, blob, _signed_data(namespace, hash_name, message))
    return Verified(key_blob)


def _check(key_blob: bytes, blob: bytes, data: bytes) -> None:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    public = _public_key(key_blob)
    reader = _Reader(blob)
    algorithm = reader.string().decode("ascii", "replace")
    signature = reader.string()
    try:
        if isinstance(public, ed25519.Ed25519PublicKey) and algorithm == "ssh-ed25519":
            public.verify(signature, data)
        elif isinstance(public, rsa.RSAPublicKey) and algorithm in ("rsa-sha2-512", "rsa-sha2-256"):
            digest = hashes.SHA512() if algorithm == "rsa-sha2-512" else hashes.SHA256()
            public.verify(signature, data, padding.PKCS1v15(), digest)
        elif isinstance(public, ec.EllipticCurvePublicKey) and algorithm == key_type(key_blob):
            inner = _Reader(signature)
            r, s = inner.mpint(), inner.mpint()
            size = public.curve.key_size
            digest = (
                hashes.SHA256()
                if size <= 256
                else hashes.SHA384()
                if size <= 384
                else hashes.SHA512()
            )
            public.verify(encode_dss_signature(r, s), data, ec.ECDSA(digest))
        else:
            raise SignatureInvalid(
                f"signature algorithm {algorithm!r} does not fit a {key_type(key_blob)} key"
            )
    except InvalidSignature:
        raise SignatureInvalid(
            "the signature does not verify: the content was changed, or another key signed it"
        ) from None
