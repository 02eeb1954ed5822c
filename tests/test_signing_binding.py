"""Issue 25.3: a signature binds its kit, the verdict it judges and the label; it has
one accepted encoding; a signature the library cannot handle is a reported record,
never a crash; allowed-signers principals match as OpenSSH matches them.

Real keys made by ssh-keygen; patterns and signatures cross-checked with
``ssh-keygen -Y sign`` and ``ssh-keygen -Y verify`` on the same files."""

from __future__ import annotations

import base64
import json
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from conftest import judged_pass, ledger_bytes
from ledgerfiles import forge
from pmos.gate import allowed_signers, signing, sshsig
from test_signing import (
    PM,
    accept,
    configure,
    keygen,
    public,
    ssh_sign,
    ssh_verify,
    ssh_verify_allowed,
)

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("keys")
    return {"pm": keygen(folder, "pm"), "ecdsa": keygen(folder, "ecdsa", "ecdsa")}


def verify_json(cli, *root: str) -> tuple[int, list[dict]]:
    result = cli(*root, "ledger", "verify", "--json")
    problems = [p for r in json.loads(result.stdout)["ledgers"] for p in r["problems"]]
    return result.exit_code, problems


# ---------------------------------------------------------------- binding


def test_a_label_copied_to_another_kit_onto_a_forged_verdict_does_not_count(
    cli, kit_root, keys, tmp_path
):
    """The reproduction: kit B has the same signers and run id; a PM-signed label
    from kit A is copied in, with a forged verdict carrying the record id it names."""
    configure(kit_root, keys, required=True)
    judged_pass(cli)
    label = json.loads(accept(cli, "--sign-key", str(keys["pm"])).stdout)
    [verdict] = json.loads(cli("ledger", "show", "evals", "--run-id", "r1", "--json").stdout)
    assert cli("metrics", "--json").exit_code == 0

    other = tmp_path / "kit-b"
    assert cli("init", str(other)).exit_code == 0
    configure(other, keys, required=True)
    root = ("--root", str(other))
    assert cli(*root, "kit-id").stdout != cli("kit-id").stdout  # each kit its own identity
    forge(other, "evals", verdict)
    forge(other, "acceptances", label)
    code, problems = verify_json(cli, *root)
    assert code == 1
    [problem] = problems
    assert "label-signature" in problem["problem"] and "invalid signature" in problem["problem"]
    report = json.loads(cli(*root, "metrics", "--json").stdout)
    assert report["pairs"] == 0
    assert [e["rule"] for e in report["excluded_records"]] == ["label-signature"]


def test_a_signed_label_set_onto_another_verdict_does_not_verify(cli, kit_root, keys):
    """Within one kit: a forged verdict with the record id a signed label names, in
    place of the verdict the PM judged, breaks the label's signature."""
    configure(kit_root, keys, required=True)
    judged_pass(cli)
    label = json.loads(accept(cli, "--sign-key", str(keys["pm"])).stdout)
    [verdict] = json.loads(cli("ledger", "show", "evals", "--run-id", "r1", "--json").stdout)
    assert verify_json(cli)[0] == 0
    ledger = kit_root / "state" / "evals"
    for path in ledger.glob("*.json"):
        path.unlink()  # the PM's verdict replaced by one that says something else
    forge(kit_root, "evals", {**verdict, "note": "another verdict, same record id"})
    code, problems = verify_json(cli)
    assert code == 1
    assert any("invalid signature" in p["problem"] for p in problems)
    assert label["gate_record_id"] == verdict["record_id"]


def test_a_kit_without_a_kit_id_refuses_to_sign_until_it_has_one(cli, kit_root, keys):
    configure(kit_root, keys, required=True)
    config = kit_root / "pmos.yaml"
    config.write_text(
        "".join(line for line in config.read_text().splitlines(True) if "kit_id:" not in line)
    )
    judged_pass(cli)
    before = ledger_bytes(kit_root)
    result = accept(cli, "--sign-key", str(keys["pm"]))
    assert result.exit_code == 2
    assert "no kit_id" in result.stderr and "pmos kit-id --create" in result.stderr
    assert ledger_bytes(kit_root) == before
    assert cli("kit-id").exit_code == 1
    created = cli("kit-id", "--create", "--json")
    assert created.exit_code == 0, created.output
    kit_id = json.loads(created.stdout)["kit_id"]
    assert cli("kit-id").stdout.strip() == kit_id
    assert cli("kit-id", "--create").exit_code == 2  # an identity never changes
    assert accept(cli, "--sign-key", str(keys["pm"])).exit_code == 0
    assert cli("ledger", "verify").exit_code == 0


# ---------------------------------------------------------------- one encoding


def _envelope(armored: str) -> bytes:
    return base64.b64decode("".join(armored.strip().splitlines()[1:-1]))


def _armor(envelope: bytes, width: int = 70) -> str:
    text = base64.b64encode(envelope).decode()
    lines = [text[i : i + width] for i in range(0, len(text), width)]
    return (
        "\n".join(["-----BEGIN SSH SIGNATURE-----", *lines, "-----END SSH SIGNATURE-----"]) + "\n"
    )


def _high_s(armored: str) -> str:
    """The same ECDSA signature as (r, n - s): valid maths, a second encoding."""
    data = _envelope(armored)
    at, parts = 10, []
    for _ in range(5):
        (size,) = struct.unpack_from(">I", data, at)
        parts.append(data[at + 4 : at + 4 + size])
        at += 4 + size
    blob = parts[4]
    (n1,) = struct.unpack_from(">I", blob, 0)
    algorithm = blob[4 : 4 + n1]
    sig = blob[8 + n1 :]
    (nr,) = struct.unpack_from(">I", sig, 0)
    r = int.from_bytes(sig[4 : 4 + nr], "big")
    (ns,) = struct.unpack_from(">I", sig, 4 + nr)
    s = int.from_bytes(sig[8 + nr : 8 + nr + ns], "big")
    order = sshsig.CURVE_ORDERS[algorithm.decode()]

    def mpint(v: int) -> bytes:
        raw = v.to_bytes((v.bit_length() + 8) // 8, "big")
        return struct.pack(">I", len(raw)) + raw

    def string(b: bytes) -> bytes:
        return struct.pack(">I", len(b)) + b

    new_blob = string(algorithm) + string(mpint(r) + mpint(order - s))
    return _armor(data[:10] + b"".join(string(p) for p in parts[:4]) + string(new_blob))


def test_a_signed_label_has_exactly_one_valid_form(cli, kit_root, keys, tmp_path):
    """Re-wrapped armor and an ECDSA (r, n - s) signature were second valid records
    with the same record_id: both are refused, and ssh-keygen accepts the maths of
    each, so only the encoding differs."""
    configure(
        kit_root,
        keys,
        required=True,
        signers=f"{PM} {public(keys['pm'])}\n{PM} {public(keys['ecdsa'])}\n",
    )
    judged_pass(cli, "r1")
    judged_pass(cli, "r2")
    ed = json.loads(accept(cli, "--sign-key", str(keys["pm"]), run="r1").stdout)
    ec = json.loads(accept(cli, "--sign-key", str(keys["ecdsa"]), run="r2").stdout)
    assert verify_json(cli)[0] == 0
    rewrapped = _armor(_envelope(ed["signature"]["sshsig"]), width=64)
    unwrapped = _armor(_envelope(ed["signature"]["sshsig"]), width=10_000).replace("\n", "\r\n")
    high = _high_s(ec["signature"]["sshsig"])
    for armored, message in (
        (rewrapped, "not in its canonical form"),
        (unwrapped, "not in its canonical form"),
        (high, "not low-S"),
    ):
        with pytest.raises(sshsig.SignatureInvalid, match=message):
            sshsig.verify(armored, b"x", signing.NAMESPACE)
    for original, armored in ((ed, rewrapped), (ec, high)):
        forged = {**original, "signature": {**original["signature"], "sshsig": armored}}
        path = forge(kit_root, "acceptances", forged)
        code, problems = verify_json(cli)
        assert code == 1
        # The second form is refused; sharing its original's record_id in one month,
        # it also keeps the original from counting (a duplicate id counts for neither).
        assert str(path) in [p["file"] for p in problems]
        assert all(
            p["file"] == str(path) or "duplicate record_id" in p["problem"] for p in problems
        )
        path.unlink()
    stored = json.loads(cli("ledger", "show", "acceptances", "--json").stdout)
    assert len(stored) == 2


# ---------------------------------------------------------------- library errors


@pytest.mark.parametrize("key_type", ["ssh-frobnicate", "ecdsa-sha2-nistp999", "ssh-rsa"])
def test_a_signature_the_library_cannot_handle_is_a_reported_record(cli, kit_root, keys, key_type):
    """An SSHSIG naming a key type the library does not know crashed verify, metrics,
    queue and board (exit 70, UnsupportedAlgorithm): now it is a reported record."""

    def string(b: bytes) -> bytes:
        return struct.pack(">I", len(b)) + b

    kind = key_type.encode()
    key = string(kind) + string(b"\x01" * 32) + (string(b"\x03" * 3) if b"rsa" in kind else b"")
    blob = string(kind) + string(b"\x02" * 64)
    envelope = (
        b"SSHSIG"
        + struct.pack(">I", 1)
        + string(key)
        + string(signing.NAMESPACE.encode())
        + string(b"")
        + string(b"sha512")
        + string(blob)
    )
    configure(kit_root, keys, required=True)
    judged_pass(cli)
    label = json.loads(accept(cli, "--sign-key", str(keys["pm"])).stdout)
    forged = {**label, "record_id": "acc-forged-0001", "signature": dict(label["signature"])}
    forged["signature"]["sshsig"] = _armor(envelope)
    forge(kit_root, "acceptances", forged)
    code, problems = verify_json(cli)
    assert code == 1
    assert len(problems) == 1 and "invalid signature" in problems[0]["problem"]
    for command in (("metrics", "--json"), ("queue", "--json")):
        assert cli(*command).exit_code == 0, command
    assert cli("board", "--out", str(kit_root / "board.html")).exit_code == 0
    with pytest.raises(sshsig.SignatureInvalid):
        sshsig.verify(_armor(envelope), b"x", signing.NAMESPACE)


# ---------------------------------------------------------------- OpenSSH patterns


PATTERNS = [
    ("bot[x]", "botx"),
    ("bot[x]", "bot[x]"),
    ("*@example.com,!bot@example.com", "bot@example.com"),
    ("*@example.com,!bot@example.com", PM),
    ("a?a@example.com", "aba@example.com"),
    ("a?a@example.com", "aa@example.com"),
    ("!mallory,*", "mallory"),
    ("!mallory,*", "ana"),
    ("ANA", "ana"),
    ("an*", "ana"),
    ("an\\a", "ana"),
    ("a.a", "aba"),
    ("x,y,ana", "ana"),
    ("caf?", "caf\u00e9"),
    ("caf??", "caf\u00e9"),
]


@pytest.mark.parametrize(("pattern", "principal"), PATTERNS)
def test_principal_patterns_match_as_ssh_keygen_matches_them(keys, tmp_path, pattern, principal):
    """The same allowed-signers file, asked by pmos and by 'ssh-keygen -Y verify',
    allows the same principal; signatures made by each side verify on the other."""
    message = b"the label's content"
    line = f'"{pattern}" {public(keys["pm"])}\n'
    (tmp_path / "allowed").write_text(line, encoding="utf-8")
    theirs_sig = ssh_sign(tmp_path, keys["pm"], message)
    ours_sig = sshsig.sign(sshsig.load_private_key(keys["pm"]), message, signing.NAMESPACE)
    from datetime import UTC, datetime

    signers = allowed_signers.parse(line)
    for armored in (theirs_sig, ours_sig):
        theirs = ssh_verify_allowed(tmp_path, armored, message, principal)
        blob = sshsig.verify(armored, message, signing.NAMESPACE).key_blob
        ours = any(s.allows(principal, signing.NAMESPACE, blob, datetime.now(UTC)) for s in signers)
        assert ours == (theirs == 0), (pattern, principal, theirs)
    assert ssh_verify(tmp_path, ours_sig, message, PM, keys["pm"]) == 0


# ---------------------------------------------------------------- the documented switch
# (switching signing on in a live kit: tests/test_signing_switch.py)


def _sh_block(page: Path, after: str) -> str:
    text = page.read_text(encoding="utf-8")
    start = text.index("```sh\n", text.index(after)) + len("```sh\n")
    return text[start : text.index("```\n", start)]


@pytest.mark.parametrize(
    ("page", "heading"),
    [
        ("docs/how-to/record-pm-labels.md", "## Sign labels"),
        ("docs/reference/writers.md", "#### Signed PM labels"),
    ],
)
def test_the_signing_documentation_runs_as_written(cli, kit_root, tmp_path, page, heading):
    """The documented switch, run by bash in a kit (a git repository) that holds an
    unsigned label, with a PM key at ~/.ssh/id_ed25519: every command succeeds, and
    the kit verifies with both labels counted, the earlier one shown unsigned."""
    import os
    import sys

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    keygen(home / ".ssh", "id_ed25519")
    repo = Path(__file__).resolve().parent.parent
    script = _sh_block(repo / page, heading)
    for run in ("run-6", "run-7"):
        registered = cli(
            "run", "register", "--run-id", run, "--initiative-id", "i1", "--builder-model", "m"
        )
        assert registered.exit_code == 0
        judged_pass(cli, run)
    assert cli("accept", "run-6", "--label", "pass", "--by", "ana@example.com").exit_code == 0
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PMOS_ROOT": str(kit_root),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    subprocess.run(["git", "init", "-q", "-b", "main", str(kit_root)], check=True, env=env)
    for setting in (("user.email", "ana@example.com"), ("user.name", "Ana")):
        subprocess.run(["git", "-C", str(kit_root), "config", *setting], check=True, env=env)
    done = subprocess.run(
        ["bash", "-e", "-c", script], cwd=kit_root, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert cli("ledger", "verify").exit_code == 0
    assert json.loads(cli("metrics", "--json").stdout)["pairs"] == 2
    labels = json.loads(cli("ledger", "show", "acceptances", "--json").stdout)
    assert ["signature" in label for label in labels] == [False, True]
    assert json.loads(cli("metrics", "--json").stdout)["unsigned_labels"] == 1
