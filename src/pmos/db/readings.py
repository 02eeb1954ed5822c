"""``pmos metrics --db``: the file readers' per-run inputs, built from SQL.

The file readers (:mod:`pmos.calibration.metrics`) stream the ledgers and
keep, per run, its latest judged verdict, its latest SKIPPED verdict and its
latest PM label, plus the last ``window`` judged verdicts for the pass
fraction. Here the database hands over exactly those (the per-run views of
the migrations, "latest" meaning by ``(recorded_at, record_id)``), and the
same Python code pairs them and computes every statistic, interval and the
calibrated decision: nothing is re-implemented for the database.

A run is a kit's run: the key of a run is ``(kit, run_id)``, so equal run ids
of two kits stay two runs.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from pmos.calibration.metrics import (
    Labels,
    Scope,
    Verdicts,
    metrics_from_readings,
    settings_for,
)
from pmos.db.connect import connection
from pmos.db.errors import DatabaseError
from pmos.db.migrate import require_current
from pmos.db.settings import config_from
from pmos.errors import BadInput
from pmos.gate.pass_fraction import PassFraction
from pmos.kit import Config


class KitRef(NamedTuple):
    key: int
    kit_id: str


def select_kits(conn: Any, wanted: list[str] | None) -> list[KitRef]:
    """The kits a command covers: all (by default) or the ones named, each known."""
    rows = conn.execute("SELECT kit, kit_id FROM kits ORDER BY kit_id").fetchall()
    known = [KitRef(key, kit_id) for key, kit_id in rows]
    if not wanted:
        return known
    by_id = {k.kit_id: k for k in known}
    missing = [name for name in dict.fromkeys(wanted) if name not in by_id]
    if missing:
        listed = ", ".join(k.kit_id for k in known[:20]) or "none yet"
        raise BadInput(
            f"--kit: no kit {', '.join(repr(m) for m in missing)} in the database "
            f"(known: {listed}{', ...' if len(known) > 20 else ''})"
        )
    return [by_id[name] for name in dict.fromkeys(wanted)]


def settings_config(conn: Any, kits: list[KitRef], one_kit: bool) -> Config:
    """The settings that apply: the kit's own (as last synced) when exactly one kit
    was asked for, else the team's (``team_settings``)."""
    if one_kit and len(kits) == 1:
        row = conn.execute(
            "SELECT settings FROM v_kit_settings WHERE kit = %s", (kits[0].key,)
        ).fetchone()
    else:
        row = conn.execute("SELECT settings FROM team_settings").fetchone()
    return config_from(row[0] if row else {})


def db_metrics(
    dsn: str,
    *,
    kits: list[str] | None = None,
    window: int | None = None,
    initiative: str | None = None,
    model: str | None = None,
    since: datetime | None = None,
) -> dict[str, Any]:
    """The calibration report over the database's kits (all, or those named)."""
    scope = Scope(initiative, model, since)
    with connection(dsn, purpose="metrics") as conn:
        require_current(conn)
        selected = select_kits(conn, kits)
        config = settings_config(conn, selected, one_kit=bool(kits))
        resolved = settings_for(config, window).window
        keys = [k.key for k in selected]
        judged = read_verdicts(conn, keys, scope, resolved)
        labelled = read_labels(conn, keys, detailed=not scope.everything)
    report = metrics_from_readings(
        judged,
        labelled,
        config,
        window=resolved,
        initiative=initiative,
        model=model,
        since=since,
    )
    report["kits"] = [k.kit_id for k in selected]
    return report


def read_verdicts(conn: Any, keys: list[int], scope: Scope, window: int) -> Verdicts:
    """What :func:`pmos.calibration.metrics.read_verdicts` keeps, read from SQL."""
    detailed = not scope.everything
    models: list[str] = []
    codes: dict[str, int] = {}
    latest: dict[tuple[int, str], int] = {}
    details: dict[tuple[int, str], tuple[str, str]] | None = {} if detailed else None
    rows = conn.execute(
        "SELECT kit, run_id, verdict, evaluator_model, gate_pass, initiative_id, "
        "recorded_at_text FROM v_latest_judged WHERE kit = ANY(%s)",
        (keys,),
    )
    for kit, run, verdict, model, gate_pass, initiative, at in rows:
        code = codes.get(model)
        if code is None:
            if model is None:  # the schema requires it of every judged verdict
                raise DatabaseError(f"a {verdict} verdict of run {run} names no evaluator_model")
            code = codes[model] = len(models)
            models.append(model)
        latest[(kit, run)] = code * 2 + bool(gate_pass)
        if details is not None:
            details[(kit, run)] = (initiative, at)
    skips: dict[tuple[int, str], tuple[str | None, str | None, str | None]] = {}
    rows = conn.execute(
        "SELECT kit, run_id, evaluator_model, initiative_id, recorded_at_text "
        "FROM v_latest_skip WHERE kit = ANY(%s)",
        (keys,),
    )
    for kit, run, model, initiative, at in rows:
        skips[(kit, run)] = (model, initiative, at) if detailed else (model, None, None)
    overall, by_model = _recent_verdicts(conn, keys, scope, window)
    return Verdicts(
        models,
        latest,
        details,
        skips,
        PassFraction.of(overall, window),
        {name: PassFraction.of(verdicts, window) for name, verdicts in by_model.items()},
    )


def _recent_verdicts(
    conn: Any, keys: list[int], scope: Scope, window: int
) -> tuple[list[str], dict[str, list[str]]]:
    """The last ``window`` judged verdicts in scope, oldest first: over all and per model."""
    where = ["verdict <> 'SKIPPED'", "kit = ANY(%(keys)s)"]
    if scope.model is not None:
        where.append("evaluator_model = %(model)s")
    if scope.initiative is not None:
        where.append("initiative_id = %(initiative)s")
    if scope.since is not None:
        where.append("recorded_at >= %(since)s")
    params = {
        "keys": keys,
        "model": scope.model,
        "initiative": scope.initiative,
        "since": scope.since,
        "window": window,
    }
    condition = " AND ".join(where)
    overall = [
        verdict
        for (verdict,) in conn.execute(
            f"SELECT verdict FROM evals WHERE {condition} "
            "ORDER BY recorded_at DESC, record_id DESC, kit DESC LIMIT %(window)s",
            params,
        )
    ]
    overall.reverse()
    by_model: dict[str, list[str]] = {}
    rows = conn.execute(
        "SELECT evaluator_model, verdict FROM ("
        "  SELECT evaluator_model, verdict, row_number() OVER ("
        "    PARTITION BY evaluator_model ORDER BY recorded_at DESC, record_id DESC, kit DESC"
        f"  ) AS rank FROM evals WHERE {condition}"
        ") recent WHERE rank <= %(window)s AND evaluator_model IS NOT NULL "
        "ORDER BY evaluator_model, rank DESC",
        params,
    )
    for model, verdict in rows:
        by_model.setdefault(model, []).append(verdict)
    return overall, by_model


def read_labels(conn: Any, keys: list[int], *, detailed: bool) -> Labels:
    """What :func:`pmos.calibration.metrics.read_labels` keeps, read from SQL."""
    latest: dict[tuple[int, str], bool] = {}
    details: dict[tuple[int, str], tuple[str | None, str]] | None = {} if detailed else None
    rows = conn.execute(
        "SELECT kit, run_id, pm_pass, initiative_id, recorded_at_text "
        "FROM v_latest_label WHERE kit = ANY(%s)",
        (keys,),
    )
    for kit, run, pm_pass, initiative, at in rows:
        latest[(kit, run)] = bool(pm_pass)
        if details is not None:
            details[(kit, run)] = (initiative, at)
    return Labels(latest, details)
