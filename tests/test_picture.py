"""Laying out the report's picture and chart: pure functions, no Spark, no browser."""

from dirtiness.readback.report.chart import PLOT_HEIGHT, rounds_chart
from dirtiness.readback.report.picture import (
    CLEAN_FILL,
    COLUMN_PITCH,
    NOT_IN_PLAN,
    NodeSpec,
    lay_out,
    reason_colours,
)


def spec(key, layer, name, reason="dependency", change=None):
    return NodeSpec(key=key, label=key, sublabel="", layer=layer, layer_name=name, reason=reason, change=change)


def test_columns_follow_the_plan_and_unplanned_nodes_come_last():
    specs = [spec("d.s.late", (1, 2), "stage · step 2"), spec("d.s.first", (1, 1), "stage · step 1", "changed",
                                                                  "modified"),
             spec("d.s.gone", NOT_IN_PLAN, "no operation of its own", "changed", "deleted"),
             spec("d.s.sink", (3, 0), "post-swap · step 0"), spec("d.s.also", (1, 2), "stage · step 2")]
    edges = [("d.s.first", "d.s.late", "late depends on first"), ("d.s.sink", "d.s.first", "backwards"),
             ("d.s.first", "d.s.absent", "to a node not drawn")]
    picture = lay_out("objects", specs, edges, reason_colours(["changed", "dependency"]))
    assert [name for _, name in picture.columns] == ["stage · step 1", "stage · step 2", "post-swap · step 0",
                                                     "no operation of its own"]
    at = {n.key: n for n in picture.nodes}
    assert at["d.s.first"].x < at["d.s.late"].x == at["d.s.also"].x < at["d.s.sink"].x < at["d.s.gone"].x
    assert at["d.s.also"].y < at["d.s.late"].y  # by name within a column
    assert at["d.s.late"].x - at["d.s.first"].x == COLUMN_PITCH
    assert (at["d.s.first"].badge, at["d.s.first"].marked, at["d.s.first"].dashed) == ("~", True, False)
    assert (at["d.s.gone"].badge, at["d.s.gone"].dashed) == ("\u2212", True)
    assert at["d.s.late"].badge is None and not at["d.s.late"].marked
    assert [(e.title, e.backward) for e in picture.edges] == [("late depends on first", False), ("backwards", True)]
    assert at["d.s.first"].fill != at["d.s.late"].fill


def test_text_stays_readable_on_every_fill():
    picture = lay_out("schemas", [spec("a", (1, 0), "x", reason=None), spec("b", (1, 0), "x", reason="r")],
                      [], {"r": "#0072B2"})
    at = {n.key: n for n in picture.nodes}
    assert (at["a"].fill, at["a"].ink) == (CLEAN_FILL, "#1d2330")  # dark on light grey
    assert at["b"].ink == "#ffffff"  # white on dark blue
    assert ("schema itself clean", CLEAN_FILL) in picture.legend


def test_rounds_chart_scales_and_keeps_single_tuples_visible():
    rounds = [{"round": 1, "stratum": 0, "relation": "DirtyStmt", "derived": 1000},
              {"round": 1, "stratum": 0, "relation": "DirtySchema", "derived": 0},
              {"round": 2, "stratum": 0, "relation": "DirtyStmt", "derived": 1},
              {"round": 2, "stratum": 0, "relation": "DirtySchema", "derived": 500}]
    chart = rounds_chart(rounds)
    heights = {b.title: b.height for b in chart.bars}
    assert heights == {"round 1: +1,000 DirtyStmt": PLOT_HEIGHT, "round 1: +0 DirtySchema": 0,
                       "round 2: +1 DirtyStmt": 2, "round 2: +500 DirtySchema": PLOT_HEIGHT // 2}
    assert [label for _, label in chart.x_labels] == ["1", "2"]
    assert [label for label, _ in chart.legend] == ["DirtyStmt", "DirtySchema"]
    assert rounds_chart([]) is None
