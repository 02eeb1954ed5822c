"""`pmos mcp`: a real server process driven by the MCP SDK's own stdio client.

Each test starts ``python -m pmos --root KIT mcp`` as a subprocess, as an agent
host does, and talks to it over stdin and stdout with the SDK's client: no
part of the server is called in-process or replaced.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

import runrecords
from conftest import RUBRIC, good_verdict, pmos_process, write_json
from pmos.kit import open_kit

pytest.importorskip("mcp")  # the test extra installs it; without it, see test_without_the_sdk

from mcp import ClientSession, StdioServerParameters, stdio_client

SKILL_URI = "pmos://kit/skills/evaluator/SKILL.md"
READ_TOOLS = {
    "pmos_show_run",
    "pmos_show_rubric",
    "pmos_exemplars",
    "pmos_evidence",
    "pmos_draft_verdict",
    "pmos_queue",
    "pmos_metrics",
}
WRITE_TOOLS = {"pmos_record_verdict", "pmos_log_verdict"}


@contextlib.asynccontextmanager
async def server(root: Path, env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """A started ``pmos mcp`` for kit ``root`` and an initialised client session on it."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "pmos", "--root", str(root), "mcp"],
        env={**os.environ, **(env or {})},
        cwd=str(root),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def drive(root: Path, script: Callable[[ClientSession], Any], **kwargs: Any) -> Any:
    """Run ``script(session)`` against a fresh server process and return what it returns."""

    async def main() -> Any:
        with anyio.fail_after(120):  # a hung server fails the test instead of the suite
            async with server(root, **kwargs) as session:
                return await script(session)

    return anyio.run(main)


def payload(result: Any) -> Any:
    """The JSON a tool returned in its text content (what a host shows its model)."""
    assert len(result.content) == 1 and result.content[0].type == "text"
    data = json.loads(result.content[0].text)
    assert result.structured_content == data
    return data


def kit_bytes(root: Path) -> dict[str, bytes]:
    """Every file of the kit: 'nothing was written' means none of them changed."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def cli_json(*args: str, ok: tuple[int, ...] = (0,)) -> Any:
    done = pmos_process(*args)
    assert done.returncode in ok, done.stderr
    return json.loads(done.stdout)


# ---------------------------------------------------------------- what is offered


def test_the_server_lists_the_evaluator_tools_read_only_marked_and_no_pm_power(kit_root):
    from pmos.mcp.tools import TOOL_NAMES
    from pmos.schemas import inlined_schema
    from pmos.store.append import WRITER_FIELDS

    async def script(session: ClientSession) -> Any:
        init = await session.initialize()  # the session keeps the server's answer
        return init.capabilities, await session.list_tools()

    caps, listed = drive(kit_root, script)
    assert caps.tools is not None and caps.resources is not None
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == READ_TOOLS | WRITE_TOOLS == set(TOOL_NAMES)
    for name, tool in tools.items():
        assert tool.annotations.read_only_hint is (name in READ_TOOLS), name
        assert tool.input_schema["type"] == "object"
    # No tool records a label, approves or signs, and none takes a key.
    for tool in listed.tools:
        text = f"{tool.name} {json.dumps(tool.input_schema)}".lower()
        for power in ("accept", "label", "sign", "approve", "key"):
            assert power not in tool.name
        assert "sign_key" not in text and "private" not in text
    # The full verdict's input is the verdict schema less what the writer sets.
    schema = inlined_schema("verdict")
    record = tools["pmos_record_verdict"].input_schema
    assert record["properties"] == {
        k: v for k, v in schema["properties"].items() if k not in WRITER_FIELDS
    }
    assert set(record["required"]) == set(schema["required"]) - set(WRITER_FIELDS)
    assert record["additionalProperties"] is False
    short = tools["pmos_log_verdict"].input_schema
    assert short["properties"]["criteria"] == schema["properties"]["criteria"]
    assert short["properties"]["spec"] == schema["$defs"]["axis"]["properties"]["verdict"]


def test_the_instructions_say_labels_are_the_pms(kit_root):
    async def script(session: ClientSession) -> Any:
        return await session.initialize()  # the session keeps the server's answer

    init = drive(kit_root, script)
    assert init.server_info.name == "pmos"
    assert "Labels are the PM's" in init.instructions
    assert "never reads a signing key" in init.instructions


def test_the_short_form_fields_are_the_writers_arguments():
    """The short-form tool passes its fields to record_short_verdict by name."""
    from pmos.gate.writers import record_short_verdict
    from pmos.mcp.tools import SHORT_FORM_FIELDS

    params = set(inspect.signature(record_short_verdict).parameters) - {"kit", "target"}
    params -= {"refuse_unknown_run"}  # always True over MCP: a typo in a run id is refused
    assert set(SHORT_FORM_FIELDS) == params


def test_resources_are_the_skill_and_the_documents_it_links(kit_root):
    async def script(session: ClientSession) -> Any:
        listed = await session.list_resources()
        skill = await session.read_resource(SKILL_URI)
        rubric = await session.read_resource("pmos://kit/planning/evals/agent-run-eval-rubric.md")
        return listed, skill, rubric

    listed, skill, rubric = drive(kit_root, script)
    uris = [str(r.uri) for r in listed.resources]
    assert uris[0] == SKILL_URI
    skill_text = (kit_root / "skills/evaluator/SKILL.md").read_text(encoding="utf-8")
    assert skill.contents[0].text == skill_text
    assert skill.contents[0].mime_type == "text/markdown"
    # Every Markdown file the skill links, and nothing else, is served.
    for linked in (
        "planning/evals/calibration-method.md",
        "planning/evals/exemplars.yaml",
        "planning/research/injection-defenses.md",
        "AGENTS.md",
    ):
        assert f"pmos://kit/{linked}" in uris
        assert linked in skill_text
    assert len(uris) == len(set(uris))
    assert not any("expected.yaml" in u or "state/" in u for u in uris)
    rubric_text = (kit_root / RUBRIC).read_text(encoding="utf-8")
    assert rubric.contents[0].text == rubric_text


def test_a_resource_the_skill_does_not_link_is_not_served(kit_root):
    from mcp import MCPError

    (kit_root / "secret.md").write_text("not for the model\n", encoding="utf-8")

    async def script(session: ClientSession) -> Any:
        found = []
        for uri in ("pmos://kit/secret.md", "pmos://kit/../pmos.yaml", "file:///etc/passwd"):
            with pytest.raises(MCPError) as caught:
                await session.read_resource(uri)
            found.append(caught.value.error.message)
        return found

    messages = drive(kit_root, script)
    assert all("no such resource" in m for m in messages)


# ---------------------------------------------------------------- the evaluator's loop


def test_a_valid_verdict_is_recorded_and_shown_by_the_ledger(kit_root):
    kit = open_kit(kit_root)
    runrecords.register(kit)

    async def script(session: ClientSession) -> Any:
        return await session.call_tool("pmos_record_verdict", good_verdict())

    result = drive(kit_root, script, env={"PMOS_ROOT": "/nonexistent"})
    assert result.is_error is False, result.content
    stored = payload(result)["record"]
    assert stored["run_id"] == "run-1" and stored["form"] == "full"
    shown = cli_json("ledger", "show", "evals", "--run-id", "run-1", "--json")
    assert shown == [stored]  # what the tool returned is what the ledger holds


def test_an_invalid_verdict_is_refused_as_the_cli_refuses_it_and_nothing_changes(
    kit_root, tmp_path
):
    kit = open_kit(kit_root)
    runrecords.register(kit)
    bad = good_verdict(score=0.95, verdict="FAIL", record_id="forged")
    bad["dimensions"]["verification"].update(score=0.9, verified=False, evidence="no access")
    before = kit_bytes(kit_root)

    async def script(session: ClientSession) -> Any:
        return await session.call_tool("pmos_record_verdict", bad)

    result = drive(kit_root, script)
    assert result.is_error is True
    error = payload(result)
    assert kit_bytes(kit_root) == before  # byte for byte
    rules = {v["rule"] for v in error["violations"]}
    assert {"writer-owned-field", "unverified-cap", "score-weighted-sum", "combine-rule"} <= rules
    # Exactly the object the CLI prints for the same verdict with --json.
    done = pmos_process(
        "eval", "record", "--file", str(write_json(tmp_path / "v.json", bad)), "--json"
    )
    assert done.returncode == 2
    assert json.loads(done.stdout) == error
    assert kit_bytes(kit_root) == before


def test_the_short_form_records_and_refuses_like_eval_log(kit_root):
    kit = open_kit(kit_root)
    runrecords.register(kit)
    skip = {
        "run_id": "run-1",
        "initiative_id": "init-1",
        "verdict": "SKIPPED",
        "skipped_reason": "the branch was never pushed",
    }
    ungraded = {
        "run_id": "run-1",
        "initiative_id": "init-1",
        "verdict": "PASS",
        "score": 0.9,
        "rubric_path": RUBRIC,
        "standards": "pass",
        "spec": "pass",
    }

    async def script(session: ClientSession) -> Any:
        refused = await session.call_tool("pmos_log_verdict", ungraded)
        wrong_type = await session.call_tool("pmos_log_verdict", {**skip, "score": "high"})
        return refused, wrong_type, await session.call_tool("pmos_log_verdict", skip)

    before = kit_bytes(kit_root)
    refused, wrong_type, skipped = drive(kit_root, script, env={"PMOS_EVALUATOR_MODEL": "gpt-5"})
    assert refused.is_error and wrong_type.is_error
    error = payload(refused)
    assert error["error"] == "record-rejected" and error["kind"] == "verdict"
    assert any(v["field"].startswith("criteria") for v in error["violations"]), error
    assert payload(wrong_type)["violations"][0]["field"] == "score"
    assert skipped.is_error is False, skipped.content
    record = payload(skipped)["record"]
    assert record["form"] == "short" and record["verdict"] == "SKIPPED"
    assert set(kit_bytes(kit_root)) - set(before)  # only the skip was written
    shown = cli_json("ledger", "show", "evals", "--json")
    assert [r["record_id"] for r in shown] == [record["record_id"]]


def test_read_tools_answer_as_their_commands_do(kit_root):
    """Each read tool is its command's --json output (the same library call)."""
    pmos_process("known-bad", "seed")
    kit = open_kit(kit_root)
    runrecords.register(kit)
    seeded = "known-bad-export-test-asserts-nothing"

    async def script(session: ClientSession) -> Any:
        calls = {
            "rubric": ("pmos_show_rubric", {}),
            "draft": ("pmos_draft_verdict", {"run_id": "run-1"}),
            "exemplars": ("pmos_exemplars", {"n": 2, "exclude_run": ["run-1"]}),
            "queue": ("pmos_queue", {}),
            "metrics": ("pmos_metrics", {"evaluator_model": "gpt-5"}),
            "run": ("pmos_show_run", {"run_id": seeded}),
            "evidence": ("pmos_evidence", {"run_id": "run-1"}),
        }
        return {key: await session.call_tool(*call) for key, call in calls.items()}

    results = drive(kit_root, script)
    assert not any(r.is_error for r in results.values()), {
        k: r.content for k, r in results.items() if r.is_error
    }
    got = {key: payload(r) for key, r in results.items()}
    assert got["rubric"] == cli_json("rubric", "show", "--json")
    assert got["draft"]["draft"] == cli_json("eval", "draft", "--run-id", "run-1", "--json")
    assert got["exemplars"] == cli_json("exemplars", "--n", "2", "--exclude-run", "run-1", "--json")
    queue = cli_json("queue", "--json", ok=(0, 1))
    for debt in ("verification_debt", "acceptance_debt", "calibration_debt"):
        ids = [d["run_id"] for d in got["queue"][debt]]
        assert ids == [d["run_id"] for d in queue[debt]]  # ages differ by the seconds between
    assert seeded in [d["run_id"] for d in got["queue"]["calibration_debt"]]
    metrics = cli_json("metrics", "--model", "gpt-5", "--json")
    assert got["metrics"].keys() == metrics.keys()
    assert got["metrics"]["pairs"] == metrics["pairs"]
    evidence = cli_json("evidence", "--run-id", "run-1", "--json")
    assert got["evidence"] == evidence
    # A run: registration, contract and history, judged blind: its seeded PM label
    # is in the ledger but not in what the evaluator is shown.
    run = got["run"]
    registered = cli_json("ledger", "show", "runs", "--run-id", seeded, "--json")
    assert run["registration"] == registered[0]
    assert run["contract"] == registered[0]["contract"]
    assert cli_json("ledger", "show", "acceptances", "--run-id", seeded, "--json")
    assert {h["ledger"] for h in run["history"]} == {"runs"}
    assert "artifact" in run


def test_bad_arguments_and_unknown_runs_are_tool_errors(kit_root):
    async def script(session: ClientSession) -> Any:
        return (
            await session.call_tool("pmos_show_run", {"run_id": "nope"}),
            await session.call_tool("pmos_exemplars", {"n": 9}),
            await session.call_tool("pmos_queue", {"extra": 1}),
            await session.call_tool("pmos_accept", {"run_id": "r"}),
        )

    unknown_run, bad_n, extra, no_tool = drive(kit_root, script)
    assert all(r.is_error for r in (unknown_run, bad_n, extra, no_tool))
    assert payload(unknown_run) == {
        "error": "bad-input",
        "message": "the kit has no record of run 'nope' (no registration, assessment, "
        "verdict or label); check the run id",
    }
    assert "n" in payload(bad_n)["message"]
    assert "extra" in payload(extra)["message"]
    assert "no tool 'pmos_accept'" in payload(no_tool)["message"]


# ---------------------------------------------------------------- start-up


def test_without_the_sdk_it_says_how_to_install_it(kit_root, tmp_path):
    """The SDK made unimportable by a module of the same name first on the path."""
    shim = tmp_path / "shim" / "mcp"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('the MCP SDK is blocked here')\n")
    before = kit_bytes(kit_root)
    done = pmos_process("mcp", env={"PYTHONPATH": str(shim.parent)})
    assert done.returncode == 2
    assert "pip install 'pmos[mcp]'" in done.stderr
    assert done.stdout == ""
    assert kit_bytes(kit_root) == before


def test_no_kit_is_bad_input(tmp_path):
    done = pmos_process("--root", str(tmp_path / "nowhere"), "mcp")
    assert done.returncode == 2 and "pmos.yaml" in done.stderr


# ---------------------------------------------------------------- host set-up


def test_init_writes_the_project_mcp_json_and_the_host_can_start_it(tmp_path, monkeypatch):
    project = tmp_path / "product"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.delenv("PMOS_ROOT")
    done = pmos_process("init", "pmos", "--mcp-json", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["mcp_config"] == str(project / ".mcp.json")
    config = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))
    entry = config["mcpServers"]["pmos"]
    assert entry == {"command": "pmos", "args": ["--root", "pmos", "mcp"]}
    # Started as a host starts it (in the project folder, the kit named relative to it).
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "pmos", *entry["args"]],
        cwd=str(project),
        env=dict(os.environ),
    )

    async def main() -> Any:
        with anyio.fail_after(120):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
                await session.initialize()
                return await session.call_tool("pmos_queue", {})

    result = anyio.run(main)
    assert result.is_error is False
    assert payload(result)["verification_debt"] == []


def test_init_never_overwrites_an_existing_mcp_json(tmp_path, monkeypatch):
    project = tmp_path / "product"
    project.mkdir()
    monkeypatch.chdir(project)
    mine = '{"mcpServers": {"other": {"command": "x"}}}\n'
    (project / ".mcp.json").write_text(mine, encoding="utf-8")
    done = pmos_process("init", "pmos", "--mcp-json")
    assert done.returncode == 2
    assert ".mcp.json exists" in done.stderr
    assert (project / ".mcp.json").read_text(encoding="utf-8") == mine
    assert not (project / "pmos").exists()  # refused before anything was written
    assert pmos_process("init", "pmos").returncode == 0  # without the option, init goes on


def test_the_server_starts_and_lists_its_tools_without_the_heavy_modules(kit_root):
    """What makes start-up fast, as a fact about imports (benchmarks/mcp.py times it)."""
    code = (
        "import sys\n"
        "from pmos.cli import app\n"
        "from pmos.kit import open_kit\n"
        "from pmos.mcp import resources, server, tools\n"
        "server.load_sdk()\n"
        f"server.build(open_kit({str(kit_root)!r}))\n"
        "[t.input_schema() for t in tools.TOOLS]\n"
        f"resources.documents(open_kit({str(kit_root)!r}).root)\n"
        "heavy = ['sklearn', 'scipy', 'pmos.calibration.metrics', 'pmos.tasks.evidence']\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
