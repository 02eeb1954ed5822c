"""Signed PM labels (issue 11.5): real keys made by ssh-keygen, checked both ways."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import judged_pass, ledger_bytes
from pmos.errors import BadInput
from pmos.gate import allowed_signers, signing, sshsig
from pmos.gate.recheck import Context
from pmos.kit import open_kit

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")

PM = "ana@example.com"


def keygen(folder: Path, name: str, kind: str = "ed25519", passphrase: str = "") -> Path:
    path = folder / name
    args = ["ssh-keygen", "-q", "-t", kind, "-N", passphrase, "-C", name, "-f", str(path)]
    if kind == "rsa":
        args[4:4] = ["-b", "2048"]
    subprocess.run(args, check=True, capture_output=True)
    return path


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The PM's key, a foreign key, keys of the other kinds, an encrypted key: made once."""
    folder = tmp_path_factory.mktemp("keys")
    return {
        "pm": keygen(folder, "pm"),
        "foreign": keygen(folder, "foreign"),
        "rsa": keygen(folder, "rsa", "rsa"),
        "ecdsa": keygen(folder, "ecdsa", "ecdsa"),
        "encrypted": keygen(folder, "encrypted", passphrase="correct horse"),
    }


def signing_problem(kit, record) -> str | None:
    """What a reader finds wrong with a label's signature in ``kit`` (the verdict it
    names looked up in the kit, as the readers and 'pmos ledger verify' do)."""
    return Context(kit).signatures.problem(record)


def public(key: Path) -> str:
    kind, blob = key.with_suffix(".pub").read_text().split()[:2]
    return f"{kind} {blob}"


def ssh_verify(tmp_path: Path, armored: str, message: bytes, principal: str, key: Path) -> int:
    (tmp_path / "allowed").write_text(f"{principal} {public(key)}\n")
    return ssh_verify_allowed(tmp_path, armored, message, principal)


def ssh_verify_allowed(tmp_path: Path, armored: str, message: bytes, principal: str) -> int:
    """'ssh-keygen -Y verify''s exit code for ``armored`` over ``message``, as
    ``principal``, against the allowed-signers file ``tmp_path / "allowed"``."""
    (tmp_path / "sig").write_text(armored)
    return subprocess.run(
        [
            "ssh-keygen",
            "-Y",
            "verify",
            "-f",
            str(tmp_path / "allowed"),
            "-I",
            principal,
            "-n",
            signing.NAMESPACE,
            "-s",
            str(tmp_path / "sig"),
        ],
        input=message,
        capture_output=True,
        check=False,
    ).returncode


# ---------------------------------------------------------------- SSHSIG both ways


@pytest.mark.parametrize("kind", ["pm", "rsa", "ecdsa"])
def test_our_signature_verifies_with_ssh_keygen(keys, tmp_path, kind):
    message = b'{"label":"pass"}'
    armored = sshsig.sign(sshsig.load_private_key(keys[kind]), message, signing.NAMESPACE)
    assert ssh_verify(tmp_path, armored, message, PM, keys[kind]) == 0
    assert ssh_verify(tmp_path, armored, message + b" ", PM, keys[kind]) != 0
    assert ssh_verify(tmp_path, armored, message, PM, keys["foreign"]) != 0


def ssh_sign(tmp_path: Path, key: Path, message: bytes) -> str:
    """``message`` signed by ``ssh-keygen -Y sign`` with ``key``."""
    path = tmp_path / "message"
    path.write_bytes(message)
    signature = tmp_path / "message.sig"
    signature.unlink(missing_ok=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", signing.NAMESPACE, str(path)],
        check=True,
        capture_output=True,
    )
    return signature.read_text()


@pytest.mark.parametrize("kind", ["pm", "rsa"])
def test_ssh_keygen_signature_verifies_here(keys, tmp_path, kind):
    armored = ssh_sign(tmp_path, keys[kind], b"the label's content")
    verified = sshsig.verify(armored, b"the label's content", signing.NAMESPACE)
    fingerprint = subprocess.run(
        ["ssh-keygen", "-l", "-f", str(keys[kind].with_suffix(".pub"))],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()[1]
    assert verified.fingerprint == fingerprint
    with pytest.raises(sshsig.SignatureInvalid, match="does not verify"):
        sshsig.verify(armored, b"the label's content!", signing.NAMESPACE)
    with pytest.raises(sshsig.SignatureInvalid, match="namespace 'pmos-label', not 'git'"):
        sshsig.verify(armored, b"the label's content", "git")


def _ecdsa_s(armored: str) -> tuple[int, int]:
    """(r, s) of an armored ECDSA SSHSIG signature."""
    import base64
    import struct

    body = "".join(armored.strip().splitlines()[1:-1])
    data = base64.b64decode(body)

    def strings(buf: bytes, at: int, n: int) -> list[bytes]:
        out = []
        for _ in range(n):
            (size,) = struct.unpack_from(">I", buf, at)
            out.append(buf[at + 4 : at + 4 + size])
            at += 4 + size
        return out

    blob = strings(data, 10, 5)[4]
    r, s = strings(strings(blob, 0, 2)[1], 0, 2)
    return int.from_bytes(r, "big"), int.from_bytes(s, "big")


def test_ecdsa_signatures_of_ssh_keygen_verify_here_when_low_s(keys, tmp_path):
    """ssh-keygen makes high-S ECDSA signatures about half the time; the one accepted
    form is low-S, so a low-S one verifies here and a high-S one is refused with a
    message saying so. Both verify with ssh-keygen; pmos's own are always low-S."""
    order = sshsig.CURVE_ORDERS["ecdsa-sha2-nistp256"]
    message = b"the label's content"
    seen: dict[bool, str] = {}
    for _ in range(64):
        armored = ssh_sign(tmp_path, keys["ecdsa"], message)
        seen.setdefault(_ecdsa_s(armored)[1] > order // 2, armored)
        if len(seen) == 2:
            break
    assert len(seen) == 2, "64 signatures by ssh-keygen were all low-S or all high-S"
    assert sshsig.verify(seen[False], message, signing.NAMESPACE)
    with pytest.raises(sshsig.SignatureInvalid, match="not low-S"):
        sshsig.verify(seen[True], message, signing.NAMESPACE)
    assert ssh_verify(tmp_path, seen[True], message, PM, keys["ecdsa"]) == 0
    key = sshsig.load_private_key(keys["ecdsa"])
    for _ in range(16):
        ours = sshsig.sign(key, message, signing.NAMESPACE)
        assert _ecdsa_s(ours)[1] <= order // 2
        assert ssh_verify(tmp_path, ours, message, PM, keys["ecdsa"]) == 0


def test_malformed_signatures_are_refused():
    for text in ("", "hello", "-----BEGIN SSH SIGNATURE-----\n!!!\n-----END SSH SIGNATURE-----"):
        with pytest.raises(sshsig.SignatureInvalid):
            sshsig.verify(text, b"x", signing.NAMESPACE)


def test_an_encrypted_key_needs_its_passphrase(keys):
    with pytest.raises(sshsig.KeyEncrypted, match="is encrypted"):
        sshsig.load_private_key(keys["encrypted"])
    assert sshsig.load_private_key(keys["encrypted"], b"correct horse") is not None
    with pytest.raises(BadInput, match="not a usable private key"):
        sshsig.load_private_key(keys["pm"].with_suffix(".pub"))


def test_the_signed_payload_is_the_canonical_json_of_the_content_fields():
    """signed_payload is written by orjson for speed; it must stay byte for byte the
    canonical JSON earlier signatures covered (sorted keys, no spaces, UTF-8)."""
    record = {
        "record_id": "acc-1",
        "recorded_at": "2026-01-01T00:00:00.000000Z",
        "schema_version": 1,
        "run_id": "r1",
        "label": "pass",
        "by": PM,
        "note": 'caf\u00e9 \u2028 "quoted" \\ \x00\x1f\x7f \U0001f600 </script>',
        "flags": ["unregistered-run"],
        "gate_verdict": None,
        "gate_record_id": None,
        "prev_hash": "0" * 64,
        "hash": "1" * 64,
        "signature": {"sshsig": "x"},
    }
    content = {k: v for k, v in record.items() if k not in signing.UNSIGNED_FIELDS}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert signing.signed_payload(record) == canonical.encode("utf-8")
    huge = {**record, "schema_version": 2**70}  # orjson refuses it; the fallback does not
    assert b'"schema_version":1180591620717411303424' in signing.signed_payload(huge)


def test_a_signing_key_signs_many_labels_and_one_pass_checks_them(cli, kit_root, keys):
    configure(kit_root, keys, required=True)
    kit = open_kit(kit_root)
    key = sshsig.SigningKey(sshsig.load_private_key(keys["pm"]))
    labels = []
    for n in range(5):
        record = {
            "record_id": f"acc-{n}",
            "recorded_at": f"2026-01-01T00:00:0{n}.000000Z",
            "schema_version": 1,
            "run_id": f"r{n}",
            "label": "pass",
            "by": PM,
        }
        record["signature"] = signing.sign_label(record, key)
        labels.append(record)
    rule = signing.LabelSignatures(kit.config, kit.root)
    assert [rule.problem(r) for r in labels] == [None] * 5
    assert "invalid signature" in rule.problem({**labels[0], "run_id": "r9"})
    by_other = signing.sign_label(labels[1], sshsig.load_private_key(keys["foreign"]))
    assert "does not allow" in rule.problem({**labels[1], "signature": by_other})


# ---------------------------------------------------------------- allowed signers


def test_allowed_signers_principals_namespaces_and_validity(keys):
    from datetime import UTC, datetime

    blob = sshsig.public_key_blob(sshsig.load_private_key(keys["pm"]).public_key())
    other = sshsig.public_key_blob(sshsig.load_private_key(keys["foreign"]).public_key())
    text = (
        "# the PMs\n\n"
        f'"*@example.com,!bot@example.com" namespaces="pmos-label,git" {public(keys["pm"])} c\n'
        'bo@example.com valid-after="20260101",valid-before="20261231Z" '
        f"{public(keys['foreign'])}\n"
        f"ca@example.com cert-authority {public(keys['rsa'])}\n"
    )
    signers = allowed_signers.parse(text)
    at = datetime(2026, 6, 1, tzinfo=UTC)

    def allowed(principal, key, namespace=signing.NAMESPACE, when=at):
        return any(s.allows(principal, namespace, key, when) for s in signers)

    assert allowed(PM, blob)
    assert not allowed("bot@example.com", blob)  # negated pattern
    assert not allowed(PM, blob, namespace="file")  # namespace not listed
    assert not allowed(PM, other)  # another principal's key
    assert allowed("bo@example.com", other)
    assert not allowed("bo@example.com", other, when=datetime(2025, 12, 31, tzinfo=UTC))
    assert not allowed("bo@example.com", other, when=datetime(2027, 1, 1, tzinfo=UTC))
    rsa = sshsig.public_key_blob(sshsig.load_private_key(keys["rsa"]).public_key())
    assert not allowed("ca@example.com", rsa)  # certificate authorities are not supported


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("ana ssh-ed25519", "expected: principals"),
        ("ana ssh-dss AAAA", "unknown key type"),
        ('ana frobnicate="x" ssh-ed25519 AAAA', "Invalid option"),
        ("ana ssh-ed25519 !!notbase64", "not base64"),
        ('ana valid-after="2026" ssh-ed25519 AAAA', "is not YYYYMMDD"),
        ('"ana ssh-ed25519 AAAA', "No matching double quote"),
        ("ana namespaces=pmos-label ssh-ed25519 AAAA", "missing '=\"'"),
    ],
)
def test_malformed_allowed_signers_lines(line, message):
    with pytest.raises(BadInput, match=message):
        allowed_signers.parse(line + "\n", "signers")


@pytest.mark.parametrize(
    "options",
    [
        "",
        'namespaces="pmos-label"',
        'NAMESPACES="git,pmos-label"',
        'namespaces="git"',
        "namespaces=pmos-label",
        'valid-after="20260101"',
        "valid-after=20260101",
        'valid-before="20200101"',
        'namespaces="pmos-label",valid-after="20200101"',
    ],
)
def test_an_allowed_signers_line_means_what_it_means_to_ssh_keygen(keys, tmp_path, options):
    """The same file, read by pmos and by 'ssh-keygen -Y verify', allows the same
    signature (ssh-keygen checks validity against the current time; so does this)."""
    from datetime import UTC, datetime

    message = b"the label's content"
    key = sshsig.load_private_key(keys["pm"])
    armored = sshsig.sign(key, message, signing.NAMESPACE)
    line = f"{PM} {options} {public(keys['pm'])}".replace("  ", " ")
    (tmp_path / "allowed").write_text(line + "\n")
    (tmp_path / "sig").write_text(armored)
    allowed, sig = str(tmp_path / "allowed"), str(tmp_path / "sig")
    theirs = subprocess.run(
        ["ssh-keygen", "-Y", "verify", "-f", allowed, "-I", PM, "-n", signing.NAMESPACE, "-s", sig],
        input=message,
        capture_output=True,
        check=False,
    ).returncode
    try:
        signers = allowed_signers.parse(line + "\n")
    except BadInput:
        ours = False
    else:
        blob = sshsig.verify(armored, message, signing.NAMESPACE).key_blob
        now = datetime.now(UTC)
        ours = any(s.allows(PM, signing.NAMESPACE, blob, now) for s in signers)
    assert ours == (theirs == 0)


# ---------------------------------------------------------------- pmos accept


def configure(kit_root: Path, keys: dict[str, Path], *, required: bool, signers: str = "") -> None:
    folder = kit_root / ".pmos"
    folder.mkdir(exist_ok=True)
    (folder / "allowed_signers").write_text(signers or f"{PM} {public(keys['pm'])}\n")
    with (kit_root / "pmos.yaml").open("a", encoding="utf-8") as config:
        config.write("signing:\n  allowed_signers: .pmos/allowed_signers\n")
        config.write(f"  required: {str(required).lower()}\n")


def accept(cli, *extra: str, run: str = "r1", by: str = PM):
    return cli("accept", run, "--label", "pass", "--by", by, *extra, "--json")


def test_a_label_signed_by_an_allowed_pm_key_is_stored_and_verifies_with_ssh_keygen(
    cli, kit_root, keys, tmp_path
):
    configure(kit_root, keys, required=True)
    judged_pass(cli)
    result = accept(cli, "--sign-key", str(keys["pm"]))
    assert result.exit_code == 0, result.output
    stored = json.loads(result.stdout)
    signature = stored["signature"]
    assert signature["namespace"] == "pmos-label"
    assert signature["key"] == sshsig.fingerprint(
        sshsig.public_key_blob(sshsig.load_private_key(keys["pm"]).public_key())
    )
    kit = open_kit(kit_root)
    [verdict] = json.loads(cli("ledger", "show", "evals", "--run-id", "r1", "--json").stdout)
    assert stored["gate_record_id"] == verdict["record_id"]
    payload = signing.signed_payload(
        stored, kit=signing.kit_id(kit.config), verdict=signing.verdict_sha256(verdict)
    )
    signed = json.loads(payload)
    assert signed["kit_id"] == signing.kit_id(kit.config) and signed["kit_id"].startswith("kit-")
    assert signed["verdict_sha256"] == signing.verdict_sha256(verdict)
    assert signed["label"]["record_id"] == stored["record_id"]
    assert "signature" not in signed["label"] and "hash" not in signed["label"]
    assert ssh_verify(tmp_path, signature["sshsig"], payload, PM, keys["pm"]) == 0
    assert signing_problem(kit, stored) is None
    assert cli("ledger", "verify").exit_code == 0


@pytest.mark.parametrize(
    ("key", "by", "message"),
    [
        (None, PM, "unsigned label: this kit requires the PM's signature"),
        ("foreign", PM, "does not allow to sign as 'ana@example.com'"),
        ("pm", "mallory@example.com", "does not allow to sign as 'mallory@example.com'"),
    ],
)
def test_required_signatures_refuse_unsigned_and_foreign_labels(
    cli, kit_root, keys, key, by, message
):
    configure(kit_root, keys, required=True)
    judged_pass(cli)
    before = ledger_bytes(kit_root)
    extra = ("--sign-key", str(keys[key])) if key else ()
    result = accept(cli, *extra, by=by)
    assert result.exit_code == 2
    assert "[label-signature]" in result.stderr and message in result.stderr
    assert ledger_bytes(kit_root) == before


def test_a_foreign_signature_is_refused_even_when_not_required(cli, kit_root, keys):
    configure(kit_root, keys, required=False)
    judged_pass(cli)
    before = ledger_bytes(kit_root)
    assert accept(cli, "--sign-key", str(keys["foreign"])).exit_code == 2
    assert ledger_bytes(kit_root) == before
    assert accept(cli).exit_code == 0  # unsigned is fine while not required


def test_without_signing_configured_a_signed_label_is_stored_with_a_warning(cli, keys):
    judged_pass(cli)
    result = accept(cli, "--sign-key", str(keys["foreign"]))
    assert result.exit_code == 0
    assert "names no signing.allowed_signers" in result.stderr


def test_gits_ssh_signing_key_is_never_used(cli, kit_root, keys, tmp_path, monkeypatch):
    """Issue 25.2: with git set up for SSH signing (as on a PM's laptop, where an
    agent runs as the PM), a label without --sign-key is not signed: refused where
    signatures are required, with a refusal that tells an agent to hand over and
    names no key or option to find one."""
    configure(kit_root, keys, required=True)
    judged_pass(cli)
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(f"[gpg]\n\tformat = ssh\n[user]\n\tsigningkey = {keys['pm']}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    before = ledger_bytes(kit_root)
    for result in (accept(cli), cli("accept", "r1", "--label", "pass", "--by", PM)):
        assert result.exit_code == 2
        assert "labels are the PM's to give" in result.stderr
        assert "hands the run over to the PM" in result.stderr
        assert "--sign-key" not in result.stderr and "ssh" not in result.stderr.lower()
    assert ledger_bytes(kit_root) == before
    assert accept(cli, "--sign-key", str(keys["pm"])).exit_code == 0


def test_gits_ssh_signing_key_does_not_sign_where_signing_is_optional(
    cli, kit_root, keys, tmp_path, monkeypatch
):
    configure(kit_root, keys, required=False)
    judged_pass(cli)
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(f"[gpg]\n\tformat = ssh\n[user]\n\tsigningkey = {keys['pm']}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    result = accept(cli)
    assert result.exit_code == 0, result.output
    assert "signature" not in json.loads(result.stdout)


def test_an_encrypted_key_without_a_terminal_is_a_clear_error(cli, kit_root, keys):
    configure(kit_root, keys, required=True)
    judged_pass(cli)
    result = accept(cli, "--sign-key", str(keys["encrypted"]))
    assert result.exit_code == 2 and "is encrypted" in result.stderr


def test_seeding_needs_no_signature(cli, kit_root, keys):
    configure(kit_root, keys, required=True)
    result = cli("known-bad", "seed", "--json")
    assert result.exit_code == 0, result.output


def test_a_bad_signing_config_is_refused(cli, kit_root):
    with (kit_root / "pmos.yaml").open("a", encoding="utf-8") as config:
        config.write("signing:\n  required: true\n")
    result = cli("queue")
    assert result.exit_code == 2 and "allowed_signers" in result.stderr


# ---------------------------------------------------------------- checking stored labels


def test_label_signature_problem_on_forged_records(cli, kit_root, keys):
    """What the readers and 'pmos ledger verify' apply to a stored label: a record
    changed after signing, a signature moved to another record, an unsigned label
    and a seed label."""
    configure(kit_root, keys, required=True)
    judged_pass(cli)
    stored = json.loads(accept(cli, "--sign-key", str(keys["pm"])).stdout)
    problem = lambda record: signing_problem(open_kit(kit_root), record)  # noqa: E731
    assert problem(stored) is None
    flipped = copy.deepcopy(stored)
    flipped["label"] = "fail"
    assert "invalid signature" in problem(flipped)
    moved = copy.deepcopy(stored)
    moved["record_id"] = "acc-forged"
    assert "invalid signature" in problem(moved)
    wrong_key_field = copy.deepcopy(stored)
    wrong_key_field["signature"]["key"] = "SHA256:" + "A" * 43
    assert "is not the signing key" in problem(wrong_key_field)
    unsigned = {k: v for k, v in stored.items() if k != "signature"}
    assert "unsigned label" in problem(unsigned)
    seed = {
        **unsigned,
        "run_id": "known-bad-x",
        "initiative_id": "known-bad",
        "by": "seeded",
        "label": "fail",
    }
    assert problem(seed) is None
    assert "unsigned label" in problem({**seed, "label": "pass"})
    # A key removed from allowed_signers no longer vouches for its old labels.
    (kit_root / ".pmos/allowed_signers").write_text(f"{PM} {public(keys['foreign'])}\n")
    os.utime(kit_root / ".pmos/allowed_signers", ns=(1, 1))
    assert "does not allow" in problem(stored)


def test_signatures_checked_ahead_give_the_same_answers(cli, kit_root, keys):
    """A reader checks the loose labels' signatures ahead (warm), while it waits:
    each answer is the one a check on the spot gives, and a record changed after
    the check ahead is checked again."""
    configure(kit_root, keys, required=True)
    judged_pass(cli)
    stored = json.loads(accept(cli, "--sign-key", str(keys["pm"])).stdout)
    flipped = {**copy.deepcopy(stored), "label": "fail"}
    bad = copy.deepcopy(stored)
    bad["signature"]["sshsig"] = bad["signature"]["sshsig"].replace("A", "B", 1)
    unsigned = {k: v for k, v in stored.items() if k != "signature"}
    records = [stored, flipped, bad, unsigned, {"signature": "not a dict"}]
    kit = open_kit(kit_root)
    on_the_spot = [Context(kit).signatures.problem(r) for r in records]
    ahead = Context(kit).signatures
    ahead.warm(records)
    assert [ahead.problem(r) for r in records] == on_the_spot
    assert on_the_spot[0] is None and "invalid signature" in on_the_spot[1]
    assert on_the_spot[2] is not None and "unsigned label" in on_the_spot[3]
    ahead.warm([stored])
    changed = {**copy.deepcopy(stored), "label": "fail"}  # not the record checked ahead
    assert "invalid signature" in ahead.problem(changed)
    assert ahead.problem(stored) is None


def test_init_says_how_to_turn_signing_on(cli, tmp_path):
    result = cli("init", str(tmp_path / "product" / "pmos"))
    assert result.exit_code == 0
    assert "signed PM labels are off" in result.stdout and "--sign-key" in result.stdout
    assert "required_since: COMMIT" in result.stdout  # the switch in a live kit
    assert "git rev-parse HEAD" in result.stdout
    config = (tmp_path / "product" / "pmos" / "pmos.yaml").read_text(encoding="utf-8")
    assert "kit_id: kit-" in config
    assert "# signing:\n#   allowed_signers: allowed_signers\n#   required: true" in config


def test_gits_key_is_not_used_in_a_kit_without_signing(cli, keys, tmp_path, monkeypatch):
    judged_pass(cli)
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(f"[gpg]\n\tformat = ssh\n[user]\n\tsigningkey = {keys['encrypted']}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    result = accept(cli)  # the encrypted key would fail without a terminal if it were used
    assert result.exit_code == 0, result.output
    assert "signature" not in json.loads(result.stdout)


def test_a_missing_allowed_signers_file_is_a_clear_error(cli, kit_root, keys):
    configure(kit_root, keys, required=True)
    (kit_root / ".pmos/allowed_signers").unlink()
    judged_pass(cli)
    before = ledger_bytes(kit_root)
    result = accept(cli, "--sign-key", str(keys["pm"]))
    assert result.exit_code == 2 and "signing.allowed_signers" in result.stderr
    assert ledger_bytes(kit_root) == before


def test_a_hand_appended_unsigned_label_is_reported_and_left_out_of_metrics(cli, kit_root, keys):
    """Issue 11: with signatures required, a label that reaches the ledger by hand,
    well sealed but unsigned, is reported by verify (exit 1) and not counted, before
    and after it is packed."""
    from ledgerfiles import forge

    configure(kit_root, keys, required=True)
    judged_pass(cli, "r1")
    judged_pass(cli, "r2")
    signed = json.loads(accept(cli, "--sign-key", str(keys["pm"])).stdout)
    unsigned = {k: v for k, v in signed.items() if k not in ("signature", "digest")}
    unsigned.update(run_id="r2", record_id="acc-handmade-0001")
    unsigned["gate_record_id"] = None
    unsigned["gate_verdict"] = None
    path = forge(kit_root, "acceptances", unsigned)
    for packed in (False, True):
        verify = cli("ledger", "verify", "--json")
        assert verify.exit_code == 1
        problems = [p for r in json.loads(verify.stdout)["ledgers"] for p in r["problems"]]
        assert len(problems) == 1 and "label-signature" in problems[0]["problem"]
        assert packed or problems[0]["file"] == str(path)
        report = json.loads(cli("metrics", "--json").stdout)
        assert report["pairs"] == 1  # r1's signed label; r2's forged one is left out
        [excluded] = report["excluded_records"]
        assert excluded["record_id"] == "acc-handmade-0001"
        assert excluded["rule"] == "label-signature" and "unsigned" in excluded["problem"]
        assert cli("ledger", "pack").exit_code == 0


def test_the_board_calls_a_label_signed_only_when_its_signature_counts(cli, kit_root, keys):
    """The board's latest-verdicts table says "signed" for a label the kit checked
    and counted, never for a signature field a record merely carries: a hand-made
    label whose signature does not verify reads as left out (the metrics left it
    out), and where the kit names no allowed signers a signature reads as not checked."""
    from board_support import parse_page
    from ledgerfiles import forge
    from pmos.board.collect import BoardOptions, collect
    from pmos.board.page import render
    from pmos.store.append import record_meta
    from test_board import table_rows

    def shown() -> dict[str, str]:
        page = parse_page(render(collect(open_kit(kit_root), BoardOptions())).html)
        return {row[0]: row[7] for row in table_rows(page, "latest-verdicts")}

    judged_pass(cli, "r0")
    foreign = accept(cli, "--sign-key", str(keys["foreign"]), run="r0")
    assert foreign.exit_code == 0, foreign.output
    signed_r0 = json.loads(foreign.stdout)
    assert shown()["r0"] == "pass (signature not checked: the kit names no allowed signers)"

    configure(kit_root, keys, required=False)
    judged_pass(cli, "r1")
    judged_pass(cli, "r2")
    result = accept(cli, "--sign-key", str(keys["pm"]), run="r1")
    assert result.exit_code == 0, result.output
    signed = json.loads(result.stdout)
    copied = {k: v for k, v in signed.items() if k != "digest"}
    copied.update(record_meta("acceptances"), run_id="r2")  # r1's signature on r2's label
    forge(kit_root, "acceptances", copied)
    rows = shown()
    assert rows["r1"] == "pass (signed)"
    assert rows["r2"] == "pass (left out: see records left out)"
    assert rows["r0"] == "pass (left out: see records left out)"  # a foreign key, now checked
    excluded = json.loads(cli("metrics", "--json").stdout)["excluded_records"]
    assert {e["record_id"] for e in excluded} == {copied["record_id"], signed_r0["record_id"]}
