"""Property test: malformed and self-contradictory verdicts are always refused.

Each example starts from a valid verdict and applies one or more corruptions,
each of which on its own breaks a schema rule or a writer rule. Whatever the
combination, the writer must refuse it and leave every ledger byte unchanged.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import DIMENSIONS, TIME_FREE, good_verdict, ledger_bytes
from pmos.errors import RecordRejected
from pmos.gate import writers
from pmos.store.append import WRITER_FIELDS

DIMS = list(good_verdict()["dimensions"])
REQUIRED = [
    "run_id",
    "initiative_id",
    "rubric_path",
    "evaluator_model",
    "verdict",
    "score",
    "axes",
    "criteria",
    "dimensions",
]


def corruptions() -> st.SearchStrategy:
    dim = st.sampled_from(DIMS)
    bad_text = st.one_of(
        st.just(""),
        st.just("   "),
        st.text(min_size=201, max_size=260),
        st.text(min_size=1, max_size=20).map(lambda s: s + "\x1b"),
    )
    return st.one_of(
        st.tuples(st.just("drop"), st.sampled_from(REQUIRED)),
        st.tuples(st.just("wrong_verdict"), st.sampled_from(["FAIL", "PASS-WITH-FINDINGS"])),
        st.tuples(
            st.just("bad_verdict"),
            st.text(max_size=12).filter(
                lambda s: s not in {"PASS", "FAIL", "PASS-WITH-FINDINGS", "SKIPPED"}
            ),
        ),
        st.tuples(st.just("score_off"), st.floats(0.011, 0.09)),
        st.tuples(
            st.just("score_range"), st.one_of(st.floats(1.0001, 1e6), st.floats(-1e6, -0.0001))
        ),
        st.tuples(st.just("unverified"), dim, st.floats(0.51, 1.0)),
        st.tuples(st.just("weight"), dim, st.floats(0.01, 0.99)),
        st.tuples(st.just("axis_flip"), dim),
        st.tuples(st.just("drop_dim"), dim),
        st.tuples(st.just("fail_criterion"), st.integers(0, 1)),
        st.tuples(st.just("blocking_defect"), st.sampled_from(["critical", "must-fix"])),
        st.tuples(
            st.just("bad_id"),
            st.sampled_from(["run_id", "initiative_id", "evaluator_model"]),
            bad_text,
        ),
        st.tuples(
            st.just("extra_field"),
            st.text(min_size=1, max_size=10).filter(lambda k: k not in good_verdict()),
        ),
        st.tuples(st.just("owned_field"), st.sampled_from(WRITER_FIELDS)),
        st.tuples(st.just("not_a_number"), st.sampled_from(["score", "weight"])),
    )


def apply(verdict: dict[str, Any], corruption: tuple) -> None:
    kind, *args = corruption
    dims = verdict.get("dimensions", {})
    if kind == "drop":
        verdict.pop(args[0], None)
    elif kind == "wrong_verdict" or kind == "bad_verdict":
        verdict["verdict"] = args[0]
    elif kind == "score_off":
        verdict["score"] = round(0.9 - args[0], 6)  # 0.9 is the true weighted sum
    elif kind == "score_range":
        verdict["score"] = args[0]
    elif kind == "unverified" and args[0] in dims:
        dims[args[0]].update(evidence="unverified", score=args[1])
    elif kind == "weight" and args[0] in dims:
        right = DIMENSIONS[args[0]][0]
        dims[args[0]]["weight"] = args[1] if abs(args[1] - right) > 1e-6 else args[1] + 0.001
    elif kind == "axis_flip" and args[0] in dims:
        # Set (not toggle) the wrong axis, so two flips cannot cancel out.
        dims[args[0]]["axis"] = "spec" if DIMENSIONS[args[0]][1] == "standards" else "standards"
    elif kind == "drop_dim":
        dims.pop(args[0], None)
    elif kind == "fail_criterion":
        verdict["criteria"][args[0]]["result"] = "fail"
    elif kind == "blocking_defect":
        verdict["defects"].append(
            {"severity": args[0], "where": "a.py:1", "problem": "p", "fix": "f"}
        )
    elif kind == "bad_id":
        verdict[args[0]] = args[1]
    elif kind == "extra_field":
        verdict[args[0]] = 1
    elif kind == "owned_field":
        verdict[args[0]] = "x"
    elif kind == "not_a_number":
        if args[0] == "score":
            verdict["score"] = "0.9"
        else:
            dims[DIMS[0]]["weight"] = "heavy"


def effective(corruption: tuple, verdict: dict[str, Any]) -> bool:
    """Some corruptions are no-ops after an earlier one removed their target."""
    kind, *args = corruption
    if kind in {"unverified", "weight", "axis_flip", "drop_dim"}:
        return "dimensions" in verdict and args[0] in verdict["dimensions"]
    if kind == "fail_criterion":
        return "criteria" in verdict
    if kind == "blocking_defect":
        return True
    if kind == "not_a_number" and args[0] == "weight":
        return "dimensions" in verdict and DIMS[0] in verdict["dimensions"]
    return True


@pytest.mark.slow
@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[*TIME_FREE, HealthCheck.function_scoped_fixture],
)
@given(st.lists(corruptions(), min_size=1, max_size=4))
def test_corrupted_verdicts_are_always_rejected(kit, corruption_list):
    verdict = copy.deepcopy(good_verdict())
    applied = False
    for corruption in corruption_list:
        if effective(corruption, verdict):
            apply(verdict, corruption)
            applied = True
    if not applied:
        return
    before = ledger_bytes(kit.root)
    try:
        writers.record_verdict(kit, verdict)
    except RecordRejected as exc:
        assert exc.violations
    else:
        raise AssertionError(f"accepted a corrupted verdict: {corruption_list}")
    assert ledger_bytes(kit.root) == before


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[*TIME_FREE, HealthCheck.function_scoped_fixture],
)
@given(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.text(),
        st.lists(st.integers()),
        st.dictionaries(st.text(max_size=5), st.integers(), max_size=4),
    )
)
def test_arbitrary_json_values_are_rejected(kit, value):
    before = ledger_bytes(kit.root)
    try:
        writers.record_verdict(kit, value)
    except RecordRejected:
        pass
    else:
        raise AssertionError(f"accepted {value!r}")
    assert ledger_bytes(kit.root) == before
