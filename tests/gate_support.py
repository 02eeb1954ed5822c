"""A product repository for `pmos gate` tests: a bare origin, a kit at product/pmos,
a PM who signs with a real ssh-keygen key, and feature branches, with git's defaults."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from conftest import RUBRIC, Cli
from pmos.kit import init_kit

PM = "ana@example.com"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def keygen(folder: Path, name: str) -> Path:
    path = folder / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(path)], check=True
    )
    return path


def public(key: Path) -> str:
    return " ".join(key.with_suffix(".pub").read_text().split()[:2])


class Product:
    """product/ (a clone of origin.git) holding a kit at product/pmos."""

    def __init__(self, root: Path, keys: dict[str, Path], cli: Cli) -> None:
        self.root = root
        self.repo = root / "product"
        self.kit = self.repo / "pmos"
        self.keys = keys
        self.cli = cli

    # ------------------------------------------------------------ git

    def commit(self, message: str = "change") -> str:
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "--allow-empty", "-m", message)
        return git(self.repo, "rev-parse", "HEAD")

    def publish(self) -> None:
        """Push main to origin and make it origin's default branch here."""
        git(self.repo, "push", "-q", "origin", "main")
        git(self.repo, "fetch", "-q", "origin")
        git(self.repo, "remote", "set-head", "origin", "main")

    def branch(self, name: str) -> None:
        git(self.repo, "checkout", "-q", "-b", name, "origin/main")

    def edit(self, relative: str, text: str, *, append: bool = False) -> None:
        path = self.kit / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if append:
            text = path.read_text() + text
        path.write_text(text)

    # ------------------------------------------------------------ records

    def ok(self, *args: str) -> Any:
        result = self.cli(*args)
        assert result.exit_code == 0, (args, result.output)
        return result

    def register(self, run: str, *extra: str) -> None:
        self.ok(
            "run",
            "register",
            "--run-id",
            run,
            "--initiative-id",
            "shop",
            "--builder-model",
            "claude-x",
            *extra,
        )

    def verdict(
        self,
        run: str,
        verdict: str = "PASS",
        model: str = "gpt-5",
        initiative: str = "shop",
        *extra: str,
    ) -> str:
        score, axis = ("0.9", "pass") if verdict != "FAIL" else ("0.3", "fail")
        result = self.ok(
            "eval", "log", run, initiative, score, verdict, RUBRIC, model,
            "--spec", axis, "--standards", axis, "--json", *extra,
        )  # fmt: skip
        return json.loads(result.stdout)["record_id"]

    def label(self, run: str, label: str = "pass", key: str | None = "pm", by: str = PM) -> None:
        extra = ["--sign-key", str(self.keys[key])] if key else []
        self.ok("accept", run, "--label", label, "--by", by, "--note", "checked", *extra)

    def gate(self, *extra: str) -> tuple[int, dict[str, Any]]:
        result = self.cli("gate", *extra, "--json")
        assert result.exit_code in (0, 1), result.output
        return result.exit_code, json.loads(result.stdout)


def make_product(
    tmp_path: Path, keys: dict[str, Path], cli: Cli, *, signing: bool = True
) -> Product:
    product = Product(tmp_path, keys, cli)
    git(tmp_path, "init", "-q", "--bare", "-b", "main", "origin.git")
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), "product")
    git(product.repo, "config", "user.email", "dev@example.com")
    git(product.repo, "config", "user.name", "Dev")
    (product.repo / "app.py").write_text("print('shop')\n")
    init_kit(product.kit)
    if signing:
        product.edit(".pmos/allowed_signers", f"{PM} {public(keys['pm'])}\n")
        product.edit(
            "pmos.yaml",
            "signing:\n  allowed_signers: .pmos/allowed_signers\n  required: true\n",
            append=True,
        )
    product.commit("adopt pmos")
    product.publish()
    return product
