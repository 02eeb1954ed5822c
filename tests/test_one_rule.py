"""Each rule once (issue 29, item 3): the pass side, the queue's failure rule and the
command line's choices each have one definition that every reader uses."""

from __future__ import annotations

import jinja2
import jinja2.nodes
import pytest

from pmos import schemas
from pmos.board import page
from pmos.calibration.queue import queue_fails
from pmos.cli.assesscmds import Trigger
from pmos.cli.writercmds import AxisVerdict, Label
from pmos.errors import PmosError
from pmos.gate.vocabulary import FAIL, PASS, PASS_SIDE, PWF, SKIPPED, VERDICTS, side

# ---------------------------------------------------------------- the pass side


def test_a_verdicts_side_follows_the_pass_side():
    assert [side(v) for v in VERDICTS] == ["pass", "pass", "fail", ""]
    assert side(None) == "" and side("pass") == ""
    assert {v for v in VERDICTS if side(v) == "pass"} == PASS_SIDE
    assert schemas.enum_values("verdict", "/properties/verdict") == VERDICTS


def _template_words(template: str) -> list[str]:
    """The verdict words a template states itself (constants and literal text)
    instead of taking them from the vocabulary, read from its syntax tree."""
    tree = jinja2.Environment().parse(template)
    texts = [n.value for n in tree.find_all(jinja2.nodes.Const) if isinstance(n.value, str)]
    texts += [n.data for n in tree.find_all(jinja2.nodes.TemplateData)]
    return [word for word in (PWF, FAIL, PASS) if any(word in t for t in texts)]


def test_the_board_template_takes_the_pass_side_from_the_vocabulary():
    source = (page.TEMPLATES / "board.html.j2").read_text(encoding="utf-8")
    assert _template_words(source) == []
    # The check sees what the template used to say for itself.
    old = "Pass-side verdicts (PASS, PASS-WITH-FINDINGS). {{ 'pass' if v != 'FAIL' }}"
    assert _template_words(old) == [PWF, FAIL, PASS]
    env = page._environment()
    shown = env.from_string("{{ pass_side_words }}|{% for v in vs %}{{ v|side }},{% endfor %}")
    assert (
        shown.render(vs=[PASS, PWF, FAIL, SKIPPED]) == "PASS, PASS-WITH-FINDINGS|pass,pass,fail,,"
    )


# ---------------------------------------------------------------- the queue


@pytest.mark.parametrize(
    ("verification", "calibration", "include", "fails"),
    [
        ([], [], False, False),
        ([{"run_id": "r1"}], [], False, True),
        ([], [{"run_id": "seed"}], False, False),
        ([], [{"run_id": "seed"}], True, True),
    ],
)
def test_one_queue_failure_rule(verification, calibration, include, fails):
    """The rule 'pmos queue' applies to one kit's queue and to --db's (same keys)."""
    queue = {"verification_debt": verification, "acceptance_debt": [], "calibration_debt": []}
    queue["calibration_debt"] = calibration
    assert queue_fails(queue, include_calibration=include) is fails
    with_kits = {**queue, "kits": ["a", "b"]}  # the --db shape
    assert queue_fails(with_kits, include_calibration=include) is fails


# ---------------------------------------------------------------- the command line's choices


@pytest.mark.parametrize(
    ("choice", "schema", "pointer"),
    [
        (Label, "acceptance", "/properties/label"),
        (AxisVerdict, "verdict", "/$defs/axis/properties/verdict"),
        (Trigger, "assessment", "/properties/trigger"),
    ],
)
def test_command_line_choices_are_the_schemas_words(choice, schema, pointer):
    assert [m.value for m in choice] == list(schemas.enum_values(schema, pointer))


def test_a_choice_outside_the_schema_is_refused_naming_the_schemas_words(cli, kit_root):
    result = cli("accept", "run-1", "--label", "maybe", "--by", "ana")
    assert result.exit_code == 2
    assert "maybe" in result.output and "pass" in result.output and "fail" in result.output


def test_a_pointer_to_no_enum_is_an_error():
    with pytest.raises(PmosError, match="has nothing at"):
        schemas.enum_values("acceptance", "/properties/nothing")
    with pytest.raises(PmosError, match="has no enum"):
        schemas.enum_values("acceptance", "/properties")
