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

A signature has exactly one accepted encoding, so a signed record has exactly
one valid form (its bytes are what a ledger deduplicates and a record id
names): the armor exactly as ``ssh-keygen`` writes it (base64 with canonical
padding, lines of 70 characters, one final newline), minimal integers, an
RSA signature as long as its modulus, and ECDSA's ``s`` in the lower half of
the curve order ("low-S": ``(r, n - s)`` verifies too, and would be a second
valid form). pmos signs that way; ``ssh-keygen -Y sign`` makes a high-S
ECDSA signature about half the time, which is refused here with a message
that says so. Every error of the cryptography library while checking a
signature (an unknown key type, a malformed key) is a :class:`SignatureInvalid`,
never a crash.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pmos.errors import BadInput

MAGIC = b"SSHSIG"
VERSION = 1
_UINT32 = struct.Struct(">I")
_VERSION_BYTES = _UINT32.pack(VERSION)
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


#: The order n of each NIST curve's group: a low-S signature has s <= n // 2.
CURVE_ORDERS = {
    "ecdsa-sha2-nistp256": int(
        "FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551", 16
    ),
    "ecdsa-sha2-nistp384": int(
        "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFC7634D81F4372DDF"
        "581A0DB248B0A77AECEC196ACCC52973",
        16,
    ),
    "ecdsa-sha2-nistp521": int(
        "01FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"
        "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFA51868783BF2F966B7FCC0148F709"
        "A5D03BB5C9B8899C47AEBB6FB71E91386409",
        16,
    ),
}


def _string(data: bytes) -> bytes:
    return _UINT32.pack(len(data)) + data


def _mpint(value: int) -> bytes:
    raw = value.to_bytes((value.bit_length() + 8) // 8, "big") if value else b""
    return _string(raw)


@lru_cache(maxsize=256)
def fingerprint(key_blob: bytes) -> str:
    """OpenSSH's SHA256 fingerprint of a public key blob (``SHA256:...``)."""
    digest = base64.b64encode(hashlib.sha256(key_blob).digest()).decode("ascii").rstrip("=")
    return f"SHA256:{digest}"


def key_type(key_blob: bytes) -> str:
    try:
        return _strings(key_blob, 0, 1)[0][0].decode("ascii")
    except (SignatureInvalid, UnicodeDecodeError):
        return "?"


def public_key_blob(public_key: Any) -> bytes:
    """The SSH wire blob of a ``cryptography`` public key."""
    # Deferred: cryptography, only where a signature is made or checked.
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    text = public_key.public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH)
    return base64.b64decode(text.split()[1])


def _signed_data(namespace: str, hash_name: str, message: bytes) -> bytes:
    return _signed_data_prefix(namespace, hash_name) + _string(HASHES[hash_name](message).digest())


@lru_cache(maxsize=16)
def _signed_data_prefix(namespace: str, hash_name: str) -> bytes:
    """What the signed data holds before the message's digest: the same for every
    message of a namespace, so made once."""
    return (
        MAGIC
        + _string(namespace.encode("utf-8"))
        + _string(b"")
        + _string(hash_name.encode("ascii"))
    )


def _canonical_mpint(raw: bytes, what: str) -> int:
    """A positive SSH mpint in its one minimal encoding, as an integer."""
    if not raw or raw[0] & 0x80:
        raise SignatureInvalid(f"{what} is not a positive integer")
    if raw[0] == 0 and (len(raw) == 1 or not raw[1] & 0x80):
        raise SignatureInvalid(f"{what} is not minimally encoded (a leading zero byte)")
    return int.from_bytes(raw, "big")


def _strings(data: bytes, at: int, count: int) -> tuple[list[bytes], int]:
    """``count`` SSH strings (length-prefixed) from ``data`` at ``at``, and where they end."""
    out = []
    for _ in range(count):
        if at + 4 > len(data):
            raise SignatureInvalid("truncated")
        (n,) = _UINT32.unpack_from(data, at)
        at += 4 + n
        if at > len(data):
            raise SignatureInvalid("truncated")
        out.append(data[at - n : at])
    return out, at


def _armor(envelope: bytes) -> str:
    """ssh-keygen's armor: base64 in lines of 70 characters between the markers."""
    encoded = base64.b64encode(envelope).decode("ascii")
    lines = [encoded[i : i + 70] for i in range(0, len(encoded), 70)]
    return "\n".join([ARMOR_BEGIN, *lines, ARMOR_END]) + "\n"


# ---------------------------------------------------------------- signing


def load_private_key(path: Path, passphrase: bytes | None = None) -> Any:
    """An OpenSSH (or PEM) private key file; refuses an encrypted one without its passphrase."""
    # Deferred: cryptography, only where a signature is made or checked.
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


class SigningKey:
    """A private key made ready to sign many messages.

    What does not depend on the message (the public key blob, its fingerprint,
    the algorithm's signing function) is worked out once here, not per
    signature: a PM signs one label per command, but a benchmark or an import
    signs a million, and re-encoding the public key cost more than Ed25519's
    own signing.
    """

    __slots__ = ("_sign", "fingerprint", "key_blob", "private_key")

    def __init__(self, private_key: Any) -> None:
        self.private_key = private_key
        self.key_blob = public_key_blob(private_key.public_key())
        self.fingerprint = fingerprint(self.key_blob)
        self._sign = _signature_maker(private_key)

    def sign(self, message: bytes, namespace: str) -> str:
        """The armored SSHSIG signature of ``message`` (what ``ssh-keygen -Y sign`` prints)."""
        data = _signed_data(namespace, "sha512", message)
        envelope = (
            MAGIC
            + _VERSION_BYTES
            + _string(self.key_blob)
            + _string(namespace.encode("utf-8"))
            + _string(b"")
            + _string(b"sha512")
            + _string(self._sign(data))
        )
        return _armor(envelope)


def signing_key(key: Any) -> SigningKey:
    """``key`` as a :class:`SigningKey` (a ``cryptography`` private key is wrapped)."""
    return key if isinstance(key, SigningKey) else SigningKey(key)


def sign(private_key: Any, message: bytes, namespace: str) -> str:
    """The armored SSHSIG signature of ``message`` by ``private_key`` (a ``cryptography``
    private key or a :class:`SigningKey`, which is faster for many messages)."""
    return signing_key(private_key).sign(message, namespace)


def _signature_maker(private_key: Any) -> Callable[[bytes], bytes]:
    """The function that makes the SSH signature blob (algorithm name and signature)
    of the signed data with ``private_key``."""
    # Deferred: cryptography, only where a signature is made or checked.
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

    if isinstance(private_key, ed25519.Ed25519PrivateKey):
        return lambda data: _string(b"ssh-ed25519") + _string(private_key.sign(data))
    if isinstance(private_key, rsa.RSAPrivateKey):
        pkcs1, sha512 = padding.PKCS1v15(), hashes.SHA512()
        return lambda data: (
            _string(b"rsa-sha2-512") + _string(private_key.sign(data, pkcs1, sha512))
        )
    if isinstance(private_key, ec.EllipticCurvePrivateKey):
        curve = {"secp256r1": "nistp256", "secp384r1": "nistp384", "secp521r1": "nistp521"}
        name = curve.get(private_key.curve.name)
        if name is None:
            raise BadInput(f"ECDSA curve {private_key.curve.name} is not an SSH curve")
        hash_of = {
            "nistp256": hashes.SHA256(),
            "nistp384": hashes.SHA384(),
            "nistp521": hashes.SHA512(),
        }
        algorithm, ecdsa = f"ecdsa-sha2-{name}".encode(), ec.ECDSA(hash_of[name])

        order = CURVE_ORDERS[algorithm.decode()]

        def ec_sign(data: bytes) -> bytes:
            r, s = decode_dss_signature(private_key.sign(data, ecdsa))
            s = min(s, order - s)  # low-S: the one encoding verify accepts
            return _string(algorithm) + _string(_mpint(r) + _mpint(s))

        return ec_sign
    raise BadInput(f"keys of type {type(private_key).__name__} cannot sign SSH signatures")


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
    (:mod:`pmos.gate.allowed_signers`). Raises :class:`SignatureInvalid`, for
    every reason a signature does not count, the cryptography library's own
    errors included.
    """
    if not isinstance(armored, str):
        raise SignatureInvalid("not an armored SSH signature")
    text = armored.strip()
    if not (text.startswith(ARMOR_BEGIN) and text.endswith(ARMOR_END)):
        raise SignatureInvalid("not an armored SSH signature")
    body = "".join(text[len(ARMOR_BEGIN) : -len(ARMOR_END)].split())
    try:
        envelope = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise SignatureInvalid("the armored body is not base64") from None
    if armored != _armor(envelope):
        raise SignatureInvalid(
            "the armor is not in its canonical form (base64 with canonical padding in lines "
            "of 70 characters between the markers, one final newline, as ssh-keygen writes it)"
        )
    if envelope[:6] != MAGIC:
        raise SignatureInvalid("not an SSHSIG signature")
    if envelope[6:10] != _VERSION_BYTES:
        raise SignatureInvalid("unsupported SSHSIG version")
    (key_blob, raw_namespace, reserved, raw_hash, blob), end = _strings(envelope, 10, 5)
    if end != len(envelope):
        raise SignatureInvalid("trailing data after the signature")
    if reserved:
        raise SignatureInvalid("the reserved field is not empty")
    signed_namespace = raw_namespace.decode("utf-8", "replace")
    hash_name = raw_hash.decode("ascii", "replace")
    if signed_namespace != namespace:
        raise SignatureInvalid(f"signed for namespace {signed_namespace!r}, not {namespace!r}")
    if hash_name not in HASHES:
        raise SignatureInvalid(f"unsupported hash {hash_name!r}")
    (algorithm, signature), blob_end = _strings(blob, 0, 2)
    if blob_end != len(blob):
        raise SignatureInvalid("trailing data after the signature blob")
    data = _signed_data(namespace, hash_name, message)
    try:
        _signature_checker(key_blob)(algorithm.decode("ascii", "replace"), signature, data)
    except SignatureInvalid:
        raise
    except Exception as exc:  # the library's own (UnsupportedAlgorithm, ValueError, ...)
        raise SignatureInvalid(
            f"the signature cannot be checked: {type(exc).__name__}: {exc}"
        ) from None
    return Verified(key_blob)


@lru_cache(maxsize=256)
def _signature_checker(key_blob: bytes) -> Callable[[str, bytes, bytes], None]:
    """The function that checks a signature (algorithm name, signature, signed data)
    by the key of ``key_blob``; raises :class:`SignatureInvalid`. Made once per key
    and cached, since a kit's labels come from a few PMs' keys: the key is parsed,
    and its type's checks chosen, once per process, not once per label."""
    # Deferred: cryptography, only where a signature is made or checked.
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
    from cryptography.hazmat.primitives.serialization import load_ssh_public_key

    kind = key_type(key_blob)
    if kind.startswith("sk-"):
        raise SignatureInvalid(f"security-key ({kind}) signatures are not supported")
    text = kind.encode("ascii") + b" " + base64.b64encode(key_blob)
    try:
        public = load_ssh_public_key(text)
    except Exception as exc:  # ValueError, TypeError, UnsupportedAlgorithm for unknown types
        raise SignatureInvalid(f"public key of type {kind!r} cannot be read: {exc}") from None

    # Each key type's check, chosen here once: it gets (algorithm, signature, data)
    # and returns the call that verifies, or None when the algorithm does not fit.
    if isinstance(public, ed25519.Ed25519PublicKey):

        def verifier(algorithm: str, signature: bytes, data: bytes) -> Callable[[], None] | None:
            if algorithm != "ssh-ed25519":
                return None
            return lambda: public.verify(signature, data)

    elif isinstance(public, rsa.RSAPublicKey):
        pkcs1 = padding.PKCS1v15()
        digests = {"rsa-sha2-512": hashes.SHA512(), "rsa-sha2-256": hashes.SHA256()}

        size = (public.key_size + 7) // 8

        def verifier(algorithm: str, signature: bytes, data: bytes) -> Callable[[], None] | None:
            digest = digests.get(algorithm)
            if digest is None:
                return None
            if len(signature) != size:
                raise SignatureInvalid(
                    f"an RSA signature of {len(signature)} bytes for a key of {size}: "
                    "not its canonical length"
                )
            return lambda: public.verify(signature, data, pkcs1, digest)

    elif isinstance(public, ec.EllipticCurvePublicKey):
        size = public.curve.key_size
        ecdsa = ec.ECDSA(
            hashes.SHA256() if size <= 256 else hashes.SHA384() if size <= 384 else hashes.SHA512()
        )

        order = CURVE_ORDERS.get(kind)

        def verifier(algorithm: str, signature: bytes, data: bytes) -> Callable[[], None] | None:
            if algorithm != kind or order is None:
                return None
            (raw_r, raw_s), end = _strings(signature, 0, 2)
            if end != len(signature):
                raise SignatureInvalid("trailing data after the ECDSA signature")
            r = _canonical_mpint(raw_r, "ECDSA r")
            s = _canonical_mpint(raw_s, "ECDSA s")
            if s > order // 2:
                raise SignatureInvalid(
                    "the ECDSA signature is not low-S (s is above half the curve order; "
                    "(r, n - s) is its one accepted form): sign again with pmos"
                )
            der = encode_dss_signature(r, s)
            return lambda: public.verify(der, data, ecdsa)

    else:
        raise SignatureInvalid(f"public keys of type {kind} are not supported")

    def check(algorithm: str, signature: bytes, data: bytes) -> None:
        verify = verifier(algorithm, signature, data)
        if verify is None:
            raise SignatureInvalid(f"signature algorithm {algorithm!r} does not fit a {kind} key")
        try:
            verify()
        except InvalidSignature:
            raise SignatureInvalid(
                "the signature does not verify: the content was changed, or another key signed it"
            ) from None

    return check
