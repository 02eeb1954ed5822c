"""Helpers for the assessment tests: specs, kit config, stub reviewer processes."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import yaml

DIMS = ("correctness", "completeness", "code_quality", "edge_cases")

#: A stub reviewer: a real process that reads the prompt on stdin and answers
#: as its JSON argument says. Every call appends a line to its counter file.
REVIEWER = r"""
import json, os, sys, time
from pathlib import Path

cfg = json.loads(sys.argv[1])
prompt = sys.stdin.read()
calls = Path(cfg["counter"])
with calls.open("a") as f:
    f.write("call\n")
n = len(calls.read_text().splitlines())
if cfg.get("prompt_dir"):
    Path(cfg["prompt_dir"], f"prompt-{os.getpid()}-{n}.txt").write_text(prompt)
mode = cfg.get("mode", "scores")
if mode == "fail_first" and n == 1:
    sys.exit(1)
if mode == "crash":
    print("reviewer crashed", file=sys.stderr)
    sys.exit(3)
if mode == "prose":
    print("The work looks fine to me; I would give it a four.")
    sys.exit(0)
if mode == "sleep":
    time.sleep(30)
scores = cfg["scores"]
if cfg.get("decoy"):
    print(json.dumps({"scores": [{"dimension": d, "score": 1} for d in scores]}))
print("Reviewing... {not json}")
answer = {
    "scores": [
        {
            "dimension": d,
            "score": s,
            "reasoning": cfg.get("reasoning", f"{d} by {cfg.get('label', '?')}"),
            "evidence": cfg.get("evidence", [{"file": "a.txt", "line": 1, "note": "seen"}]),
        }
        for d, s in scores.items()
    ],
    "summary": cfg.get("summary", "model=" + os.environ.get("PMOS_JUDGE_MODEL", "<unset>")
    + " args=" + " ".join(sys.argv[2:])),
}
print("```json\n" + json.dumps(answer) + "\n```")
"""


class _NoAliases(yaml.SafeDumper):
    """pmos refuses YAML aliases; a repeated object is written out in full."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def write_spec(path: Path, data: Any) -> Path:
    path.write_text(yaml.dump(data, Dumper=_NoAliases, sort_keys=False), encoding="utf-8")
    return path


def set_config(kit_root: Path, **sections: Any) -> None:
    """Set top-level sections of the test kit's pmos.yaml (None removes one)."""
    path = kit_root / "pmos.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for key, value in sections.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path.write_text(yaml.dump(data, Dumper=_NoAliases, sort_keys=False), encoding="utf-8")


def scores(*values: float, dims: tuple[str, ...] = DIMS) -> dict[str, float]:
    """Scores per dimension; one value means the same score for all."""
    if len(values) == 1:
        values = values * len(dims)
    return dict(zip(dims, values, strict=True))


def reviewer(tmp_path: Path, name: str, *, extra: str = "", **cfg: Any) -> str:
    """The command line of a stub reviewer; its calls are counted in ``<name>.calls``."""
    script = tmp_path / "reviewer.py"
    if not script.exists():
        script.write_text(REVIEWER, encoding="utf-8")
    cfg.setdefault("counter", str(tmp_path / f"{name}.calls"))
    cfg.setdefault("label", name)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} "
    command += shlex.quote(json.dumps(cfg))
    return f"{command} {extra}".rstrip()


def calls(tmp_path: Path, name: str) -> int:
    path = tmp_path / f"{name}.calls"
    return len(path.read_text().splitlines()) if path.exists() else 0


def jury(tmp_path: Path, members: dict[str, dict[str, Any]], **settings: Any) -> dict[str, Any]:
    """A review section with one juror per member (model defaults to a distinct family)."""
    families = iter(["claude-a", "gpt-b", "gemini-c", "llama-d", "qwen-e"])
    return {
        "jury": [
            {
                "name": name,
                "model": cfg.pop("model", None) or next(families),
                "command": reviewer(tmp_path, name, **cfg),
            }
            for name, cfg in members.items()
        ],
        **settings,
    }


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
