"""The board's parts on their own: chart marks, inline SVG, hidden characters, score bins.

Charts are fed synthetic inputs in the documented shapes (the metrics
report's ``periods`` and ``by_model``, ``scored_pairs``' items), so each mark
count below is known from the input alone.
"""

from __future__ import annotations

import pytest

from board_support import ScoredPair, parse_page, synthetic_periods, synthetic_scored_pairs
from pmos.board import charts
from pmos.board.page import shown
from pmos.board.scores import BINS, score_bins
from pmos.board.svg import UnsafeSvg, inline_svg
from pmos.board.visible import plain, shorten


def svg_tree(chart: charts.Chart):
    page = parse_page(f"<html><body>{chart.svg}</body></html>")
    (svg,) = page.find_all("svg")
    return svg


def with_class(svg, name: str) -> list:
    return [n for n in svg.iter() if name in n.classes()]


# ---------------------------------------------------------------- charts


def test_over_time_marks_each_defined_value_and_draws_the_threshold():
    chart = charts.over_time(synthetic_periods(), 0.6, 0.9, "week")
    svg = svg_tree(chart)
    # 5 periods: kappa undefined in one, pass fraction undefined in another.
    assert chart.marks == 8
    kappa = [n for n in with_class(svg, "mark") if "-mark-kappa-" in n.attrs["id"]]
    fractions = [n for n in with_class(svg, "mark") if "-mark-passfrac-" in n.attrs["id"]]
    assert [n.attrs["id"] for n in kappa] == [f"over-time-mark-kappa-{i}" for i in (0, 1, 3, 4)]
    assert len(fractions) == 4
    assert {n.attrs["id"] for n in with_class(svg, "threshold")} == {
        "over-time-threshold-kappa",
        "over-time-threshold-alarm",
    }
    assert len(with_class(svg, "band")) == 1
    labels = svg.text()
    for week in range(45, 50):
        assert f"2026-W{week}" in labels
    assert "Cohen's kappa" in labels and "pass fraction" in labels


def test_over_time_without_an_alarm_level_draws_no_alarm_line():
    chart = charts.over_time(synthetic_periods()[:2], 0.6, None, "50 runs")
    svg = svg_tree(chart)
    assert chart.marks == 4
    assert [n.attrs["id"] for n in with_class(svg, "threshold")] == ["over-time-threshold-kappa"]
    assert "50 runs (oldest left)" in svg.text()


def test_by_model_marks_models_with_a_defined_kappa():
    models = {
        "gpt-5": {"pairs": 30, "kappa": 0.7, "kappa_ci95": [0.5, 0.9], "calibrated": True},
        "claude": {"pairs": 12, "kappa": 0.3, "kappa_ci95": None, "calibrated": False},
        "new-model": {"pairs": 1, "kappa": None, "kappa_ci95": None, "calibrated": False},
    }
    chart = charts.by_model(models, 0.6)
    svg = svg_tree(chart)
    assert chart.marks == 2
    assert len(with_class(svg, "interval")) == 1  # only gpt-5 has an interval
    text = svg.text()
    assert "gpt-5 (30 pairs)" in text and "new-model (1 pairs)" in text


def test_by_model_draws_at_most_the_busiest_models():
    models = {
        f"model-{i:02d}": {"pairs": i, "kappa": 0.5, "kappa_ci95": None, "calibrated": False}
        for i in range(charts.MAX_MODELS + 5)
    }
    chart = charts.by_model(models, 0.6)
    assert chart.marks == charts.MAX_MODELS
    text = svg_tree(chart).text()
    assert "model-34 (34 pairs)" in text and "model-00 (0 pairs)" not in text


def test_score_histogram_marks_each_non_empty_cell():
    bins = score_bins(synthetic_scored_pairs())
    chart = charts.score_histogram(bins, 0.7, 0.78)
    svg = svg_tree(chart)
    assert chart.marks == 6
    ids = {n.attrs["id"] for n in with_class(svg, "mark")}
    assert ids == {
        "scores-mark-accepted-14",
        "scores-mark-accepted-16",
        "scores-mark-accepted-19",
        "scores-mark-rejected-2",
        "scores-mark-rejected-6",
        "scores-mark-rejected-14",
    }
    assert {n.attrs["id"] for n in with_class(svg, "threshold")} == {
        "scores-threshold-rubric",
        "scores-threshold-optimal",
    }
    text = svg.text()
    assert "PM accepted (5)" in text and "PM rejected (3)" in text
    assert "PM-optimal threshold 0.78" in text and "verdict score (0 to 1)" in text


def test_score_histogram_without_an_optimal_threshold():
    chart = charts.score_histogram(score_bins(synthetic_scored_pairs()), 0.7, None)
    ids = [n.attrs["id"] for n in with_class(svg_tree(chart), "threshold")]
    assert ids == ["scores-threshold-rubric"]


def test_colours_are_the_colour_blind_safe_pair():
    chart = charts.score_histogram(score_bins(synthetic_scored_pairs()), 0.7, None)
    svg = svg_tree(chart)
    accepted = svg.find_all(id="scores-mark-accepted-14")[0]
    rejected = svg.find_all(id="scores-mark-rejected-14")[0]
    assert charts.PASS_COLOUR.lower() in str(accepted.find_all("path")[0].attrs).lower()
    # The rejected bars are hatched: their fill is a pattern drawn in the fail colour.
    fill = rejected.find_all("path")[0].attrs["style"]
    pattern_id = fill.split("url(#", 1)[1].split(")", 1)[0]
    pattern = svg.find_all(id=pattern_id)[0]
    drawn = " ".join(str(n.attrs) for n in pattern.iter()).lower()
    assert charts.FAIL_COLOUR.lower() in drawn


def test_the_same_input_draws_the_same_chart():
    first = charts.over_time(synthetic_periods(), 0.6, 0.9, "week")
    second = charts.over_time(synthetic_periods(), 0.6, 0.9, "week")
    assert first.svg == second.svg


# ---------------------------------------------------------------- score bins


def test_score_bins_put_edges_in_the_bin_they_open():
    pairs = [
        ScoredPair("a", "m", 0.0, False, True, "full"),
        ScoredPair("b", "m", 0.7, True, True, "full"),
        ScoredPair("c", "m", 0.35, False, False, "full"),
        ScoredPair("d", "m", 1.0, True, False, "full"),
        ScoredPair("e", "m", None, True, True, "short"),
        ScoredPair("f", "m", None, False, False, "short"),
        ScoredPair("g", "m", None, False, False, "short"),
    ]
    bins = score_bins(pairs)
    assert len(bins.edges) == BINS + 1 and bins.edges[0] == 0.0 and bins.edges[-1] == 1.0
    assert bins.accepted[0] == 1 and bins.accepted[14] == 1  # 0.0 and 0.7
    assert bins.rejected[7] == 1 and bins.rejected[19] == 1  # 0.35 and 1.0
    assert bins.scored == 4
    assert (bins.unscored_accepted, bins.unscored_rejected) == (1, 2)
    assert bins.rows()[14] == (0.7, 0.75, 1, 0)


@pytest.mark.parametrize("score", [-0.01, 1.01, float("nan")])
def test_score_bins_refuse_a_score_outside_0_to_1(score):
    with pytest.raises(ValueError, match=r"outside 0\.\.1"):
        score_bins([ScoredPair("bad", "m", score, True, True, "full")])


# ---------------------------------------------------------------- inline SVG

GOOD_SVG = (
    '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" '
    'xmlns:xlink="http://www.w3.org/1999/xlink" width="10pt" height="10pt" viewBox="0 0 10 10">'
    "<metadata><rdf>made by someone at http://example.com</rdf></metadata>"
    '<defs><clipPath id="c1"><rect x="0" y="0" width="5" height="5"/></clipPath>'
    '<path id="m1" d="M 0 0\nL 1 1"/></defs>'
    '<g id="mark-a" clip-path="url(#c1)"><use xlink:href="#m1" x="1" y="1"/></g>'
    '<g id="threshold-t" style="fill: url(#c1)"><text>a &lt;b&gt; &amp; "c"</text></g>'
    "</svg>"
)


def test_inline_svg_prefixes_ids_and_drops_namespaces_and_metadata():
    inline = inline_svg(GOOD_SVG, "ch", "A title")
    svg = parse_page(f"<html><body>{inline.markup}</body></html>").find_all("svg")[0]
    assert inline.marks == 1
    assert "xmlns" not in inline.markup and "metadata" not in inline.markup
    assert "width" not in svg.attrs and svg.attrs["viewbox"] == "0 0 10 10"
    assert svg.find_all("title")[0].text() == "A title"
    ids = {n.attrs["id"] for n in svg.iter() if "id" in n.attrs}
    assert ids == {"ch-c1", "ch-m1", "ch-mark-a", "ch-threshold-t"}
    assert svg.find_all("use")[0].attrs["href"] == "#ch-m1"
    assert svg.find_all(id="ch-mark-a")[0].attrs["clip-path"] == "url(#ch-c1)"
    assert svg.find_all(id="ch-threshold-t")[0].attrs["class"] == "threshold"
    assert svg.find_all("text")[0].text() == 'a <b> & "c"'
    assert svg.find_all("path")[0].attrs["d"] == "M 0 0 L 1 1"


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ('<image href="data:image/png;base64,AAAA"/>', "<image>"),
        ("<script>alert(1)</script>", "<script>"),
        ("<foreignObject><div/></foreignObject>", "<foreignObject>"),
        ('<use href="https://example.com/a.svg#x"/>', "is not a reference inside it"),
        ('<use href="#nowhere"/>', "is not a reference inside it"),
        ('<g style="fill: url(https://example.com/p.svg#g)"/>', "refers outside the chart"),
        ('<g clip-path="url(#missing)"/>', "names no element of the chart"),
        ("<style>@font-face { src: url(https://example.com/f.woff) }</style>", "style sheet"),
    ],
)
def test_inline_svg_refuses_anything_reaching_outside(body, why):
    source = f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1">{body}</svg>'
    with pytest.raises(UnsafeSvg, match=why.replace("(", r"\(")):
        inline_svg(source, "ch", "t")


# ---------------------------------------------------------------- hidden characters


def test_hidden_characters_are_spelled_out():
    text = "abc\u202eevil\u202c \u200b\u2066x\u2069\x1b[31m\ttab\nline"
    assert plain(text) == (
        "abc⟨U+202E⟩evil⟨U+202C⟩ ⟨U+200B⟩⟨U+2066⟩x⟨U+2069⟩⟨U+001B⟩[31m\ttab\nline"
    )
    assert plain("plain ascii <b>") == "plain ascii <b>"
    assert plain(None) == ""


def test_shown_escapes_markup_and_marks_hidden_characters():
    markup = str(shown('<script>x</script>"\u202e'))
    assert markup == (
        '&lt;script&gt;x&lt;/script&gt;&#34;<span class="hidden-char">⟨U+202E⟩</span>'
    )


def test_long_text_is_cut_with_a_note():
    assert shorten("x" * 10, 4) == "xxxx… (6 more characters)"
    assert shorten("short", 10) == "short"
    assert shorten("x" * 10, None) == "x" * 10
    assert str(shown("y" * 500, 400)).endswith("… (100 more characters)")
