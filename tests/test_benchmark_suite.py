"""benchmarks/suite.py chooses the tests that cover the baseline's behaviour."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _suite_benchmark():
    path = ROOT / "benchmarks" / "suite.py"
    spec = importlib.util.spec_from_file_location("suite_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_kept_moved_and_rewritten_tests_are_chosen_and_new_ones_are_not():
    then = [
        "tests/test_a.py::test_kept",
        "tests/test_a.py::test_kept_param[1]",
        "tests/test_b.py::test_moved",
        "tests/test_c.py::test_old_name",
    ]
    now = [
        "tests/test_a.py::test_kept",
        "tests/test_a.py::test_kept_param[1]",
        "tests/test_a.py::test_kept_param[2]",  # a new case of a kept test: not chosen
        "tests/test_a.py::test_new",  # a new test: not chosen
        "tests/test_d.py::test_moved[x]",  # moved elsewhere, now with cases: every case
        "tests/test_c.py::test_new_name",  # test_c's baseline test was rewritten: all of test_c
        "tests/test_c.py::test_another",
        "tests/test_e.py::test_unrelated",
    ]
    assert _suite_benchmark().same_behaviour(then, now) == [
        "tests/test_a.py::test_kept",
        "tests/test_a.py::test_kept_param[1]",
        "tests/test_c.py::test_another",
        "tests/test_c.py::test_new_name",
        "tests/test_d.py::test_moved[x]",
    ]
