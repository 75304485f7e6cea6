"""Tuples derived per relation per round, as grouped bars ready to be drawn as SVG."""

from __future__ import annotations

from dataclasses import dataclass, field

from .picture import PALETTE

PLOT_HEIGHT, BAR_WIDTH, GROUP_GAP = 160, 14, 16
LEFT, TOP, BOTTOM = 56, 12, 30


@dataclass
class Bar:
    x: int
    y: int
    width: int
    height: int
    fill: str
    title: str


@dataclass
class Chart:
    width: int
    height: int
    plot_bottom: int
    bars: list[Bar] = field(default_factory=list)
    x_labels: list[tuple[int, str]] = field(default_factory=list)
    y_ticks: list[tuple[int, str]] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)


def rounds_chart(rounds: list[dict]) -> Chart | None:
    """``rounds`` rows: round, stratum, relation, derived. None when the run logged no round."""
    if not rounds:
        return None
    relations = list(dict.fromkeys(r["relation"] for r in sorted(rounds, key=lambda r: (r["stratum"], r["round"]))))
    numbers = sorted({r["round"] for r in rounds})
    derived = {(r["round"], r["relation"]): r["derived"] for r in rounds}
    top = max(max(derived.values()), 1)
    colours = {rel: PALETTE[i % len(PALETTE)] for i, rel in enumerate(relations)}
    group = len(relations) * BAR_WIDTH + GROUP_GAP
    bottom = TOP + PLOT_HEIGHT
    chart = Chart(width=LEFT + len(numbers) * group + 10, height=bottom + BOTTOM, plot_bottom=bottom,
                  legend=list(colours.items()))
    for g, number in enumerate(numbers):
        x0 = LEFT + g * group + GROUP_GAP // 2
        chart.x_labels.append((x0 + len(relations) * BAR_WIDTH // 2, str(number)))
        for i, relation in enumerate(relations):
            count = derived.get((number, relation), 0)
            height = round(PLOT_HEIGHT * count / top)
            if count and height < 2:
                height = 2  # a single tuple stays visible
            chart.bars.append(Bar(x=x0 + i * BAR_WIDTH, y=bottom - height, width=BAR_WIDTH - 2, height=height,
                                  fill=colours[relation], title=f"round {number}: +{count:,} {relation}"))
    chart.y_ticks = [(bottom - round(PLOT_HEIGHT * f), f"{round(top * f):,}") for f in (0, 0.5, 1)]
    return chart
