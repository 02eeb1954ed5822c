"""Benchmark: the per-label cost of signing and of checking a PM label's signature.

Makes an Ed25519 key with ``ssh-keygen`` in a throw-away folder, a kit that
requires signed labels, and ``--labels`` label records (default 2,000). Then,
each the best of ``--repeat`` passes, in microseconds per label:

* ``sign``: :func:`pmos.gate.signing.sign_label` with the key loaded once
  (a :class:`~pmos.gate.sshsig.SigningKey`), exactly what ``pmos accept
  --sign-key`` stores;
* ``check``: :meth:`pmos.gate.signing.LabelSignatures.problem` on the signed
  records, what a reader, ``pmos ledger pack`` and ``pmos ledger verify`` do
  per label in one pass (signature, namespace, key field, allowed signers);
* the floors: the ``cryptography`` package's own Ed25519 sign and verify of the
  same signed data, which pmos cannot make cheaper.

Usage: ``python benchmarks/signing.py [--labels 2000] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from pmos.gate import signing, sshsig  # noqa: E402
from pmos.kit import init_kit, open_kit  # noqa: E402

PM = "pm-alex"


def make_kit(folder: Path) -> tuple[Path, Path]:
    """A kit whose pmos.yaml requires labels signed by a key ssh-keygen made."""
    key = folder / "pm_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", PM, "-f", str(key)],
        check=True,
        capture_output=True,
    )
    root = folder / "kit"
    init_kit(root)
    kind, blob = key.with_suffix(".pub").read_text().split()[:2]
    (root / "allowed_signers").write_text(f'{PM} namespaces="pmos-label" {kind} {blob}\n')
    with (root / "pmos.yaml").open("a", encoding="utf-8") as config:
        config.write("signing:\n  allowed_signers: allowed_signers\n  required: true\n")
    return root, key


def labels(n: int) -> list[dict]:
    return [
        {
            "record_id": f"acc-{i:08d}",
            "recorded_at": f"2026-01-01T00:00:{i % 60:02d}.000000Z",
            "schema_version": 1,
            "run_id": f"run-{i:06d}",
            "label": "pass" if i % 3 else "fail",
            "by": PM,
            "initiative_id": "init-1",
            "gate_verdict": "PASS",
            "gate_record_id": f"ev-{i:08d}",
        }
        for i in range(n)
    ]


def per_item(fn, items: list, repeat: int) -> float:
    """Best CPU microseconds per item of ``fn`` over ``repeat`` passes (CPU time, so
    that other processes on a busy machine do not count)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for item in items:
            fn(item)
        best = min(best, time.process_time() - start)
    return best / len(items) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="pmos-bench-signing-"))
    try:
        root, key_path = make_kit(folder)
        kit = open_kit(root)
        key = sshsig.SigningKey(sshsig.load_private_key(key_path))
        rule = signing.LabelSignatures(kit.config, kit.root)
        records = labels(args.labels)

        def sign(record: dict) -> None:
            record["signature"] = signing.sign_label(record, key)

        def check(record: dict) -> None:
            problem = rule.problem(record)
            if problem is not None:
                raise SystemExit(f"a label signed here does not check: {problem}")

        signed = per_item(sign, records, args.repeat)
        checked = per_item(check, records, args.repeat)
        data = [signing.signed_payload(r) for r in records]
        private = key.private_key
        public = private.public_key()
        signatures = [private.sign(d) for d in data]
        floor_sign = per_item(private.sign, data, args.repeat)
        floor_verify = per_item(
            lambda i: public.verify(signatures[i], data[i]), range(len(data)), args.repeat
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"Ed25519, {args.labels:,} labels, best of {args.repeat}, microseconds per label:")
    print(f"  sign a label   {signed:7.1f}   (cryptography's Ed25519 sign alone: {floor_sign:.1f})")
    print(
        f"  check a label  {checked:7.1f}   "
        f"(cryptography's Ed25519 verify alone: {floor_verify:.1f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
