"""``pmos metrics --db`` equals ``pmos metrics`` on every generated kit.

Each example writes a random kit through pmos's writers (registrations,
verdicts of several evaluator models, SKIPPED verdicts, labels recorded before
and after the verdicts they judge, re-judged runs whose label then judges an
earlier verdict), syncs it to a real PostgreSQL server under a kit id of its
own, and compares: the report ``pmos metrics --db --kit ID --json`` computes
from the database's rows, the report the sync stored (what the views select),
and file mode's ``pmos metrics --json`` on the kit. Examples are few: each one
is a real sync.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from pathlib import Path

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbkits import judge, label, new_kit, register
from pmos.errors import PmosError

MODELS = ("gpt-5", "claude-opus-4", "gemini-2.5-pro")
VERDICTS = ("PASS", "PASS-WITH-FINDINGS", "FAIL", "SKIPPED")

runs = st.integers(min_value=0, max_value=3)
step = st.one_of(
    st.tuples(st.just("register"), runs),
    st.tuples(st.just("judge"), runs, st.sampled_from(VERDICTS), st.sampled_from(MODELS)),
    st.tuples(st.just("label"), runs, st.sampled_from(("pass", "fail"))),
)


def write(kit, steps) -> None:
    """Apply ``steps`` through the writers; a step a writer refuses is its rule, skipped."""
    for item in steps:
        kind, run = item[0], f"run-{item[1]}"
        try:
            if kind == "register":
                register(kit, run, "init")
            elif kind == "judge":
                judge(kit, run, item[2], model=item[3], initiative="init")
            else:
                label(kit, run, item[2])
        except PmosError:
            continue


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(step, min_size=1, max_size=14))
def test_metrics_db_equals_file_mode_on_every_generated_kit(cli, db, steps):
    folder = Path(tempfile.mkdtemp(prefix="pmos-db-property-"))
    try:
        kit = new_kit(folder / "kit")
        write(kit, steps)
        kit_id = f"generated-{uuid.uuid4().hex[:8]}"
        synced = cli(
            "--root",
            str(kit.root),
            "sync",
            "--policy-from-working-tree",
            "--db",
            db,
            "--kit-id",
            kit_id,
        )
        assert synced.exit_code == 0, synced.output
        for extra in ((), ("--model", "gpt-5")):
            expected = cli("--root", str(kit.root), "metrics", "--json", *extra)
            assert expected.exit_code == 0, expected.output
            found = cli("metrics", "--db", db, "--json", "--kit", kit_id, *extra)
            assert found.exit_code == 0, found.output
            report = json.loads(found.stdout)
            assert report.pop("kits") == [kit_id]
            assert report == json.loads(expected.stdout)
        with psycopg.connect(db) as conn:
            (stored,) = conn.execute(
                "SELECT metrics FROM v_kit_reports WHERE kit_id = %s", (kit_id,)
            ).fetchone()
        assert stored == json.loads(cli("--root", str(kit.root), "metrics", "--json").stdout)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
