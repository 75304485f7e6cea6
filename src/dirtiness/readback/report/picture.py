"""The dirty subgraph as positioned boxes and edges, ready to be drawn as SVG.

Columns are the plan's steps (``stage 1``, ``stage 2``, ``swap 0``...), so the
picture reads left to right in deployment order; nodes without an operation of
their own go in a last column. Within a column, nodes are sorted by name. No
layout library is needed: the plan already layers the graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

NODE_WIDTH, NODE_HEIGHT = 180, 40
COLUMN_PITCH, ROW_PITCH = 240, 54
LEFT, TOP = 20, 56

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#999999")
CLEAN_FILL = "#E8E8E8"
CHANGE_BADGES = {"added": "+", "modified": "~", "deleted": "\u2212"}
NOT_IN_PLAN = (10**9, 0)


@dataclass(frozen=True)
class NodeSpec:
    """What to draw for one object or schema, before layout."""

    key: str
    label: str
    sublabel: str
    layer: tuple[int, int]          # (phase order, step) of its first operation; NOT_IN_PLAN if none
    layer_name: str
    reason: str | None              # rule label, or None for a clean schema that holds dirty objects
    change: str | None = None       # added | modified | deleted: the node is marked
    title: str = ""
    badge: str | None = None        # shown instead of the change's sign (schemas: how many changed)


@dataclass
class Node:
    key: str
    label: str
    sublabel: str
    x: int
    y: int
    fill: str
    ink: str                        # text colour readable on ``fill``
    badge: str | None
    marked: bool                    # a changed object, or a schema holding one
    dashed: bool                    # a deleted object
    title: str


@dataclass
class Edge:
    path: str
    title: str
    backward: bool                  # into an earlier (or the same) column: drawn faint and dashed


@dataclass
class Picture:
    mode: str                       # objects | schemas
    width: int
    height: int
    columns: list[tuple[int, str]]  # x of the column's centre, its heading
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)  # (label, colour)
    note: str | None = None


def reason_colours(reasons: list[str]) -> dict[str, str]:
    """A colour per rule label, in the order given (callers pass them by first round)."""
    return {reason: PALETTE[i % len(PALETTE)] for i, reason in enumerate(reasons)}


def lay_out(mode: str, specs: list[NodeSpec], edges: list[tuple[str, str, str]], colours: dict[str, str],
            note: str | None = None) -> Picture:
    """Positions ``specs`` by layer; ``edges`` are ``(from key, to key, title)``, dependency to dependent."""
    layers = sorted({(s.layer, s.layer_name) for s in specs})
    column_of = {layer: i for i, (layer, _) in enumerate(layers)}
    rows: dict[int, int] = {}
    nodes: dict[str, Node] = {}
    for spec in sorted(specs, key=lambda s: (s.layer, s.key)):
        column = column_of[spec.layer]
        row = rows.get(column, 0)
        rows[column] = row + 1
        fill = colours.get(spec.reason, CLEAN_FILL) if spec.reason else CLEAN_FILL
        nodes[spec.key] = Node(
            key=spec.key, label=_fit(spec.label, 24), sublabel=_fit(spec.sublabel, 30),
            x=LEFT + column * COLUMN_PITCH, y=TOP + row * ROW_PITCH, fill=fill, ink=_ink(fill),
            badge=spec.badge or CHANGE_BADGES.get(spec.change or ""), marked=spec.change is not None,
            dashed=spec.change == "deleted", title=spec.title)
    drawn = [Edge(_curve(nodes[a], nodes[b]), title, nodes[b].x <= nodes[a].x)
             for a, b, title in sorted(edges) if a in nodes and b in nodes]
    width = LEFT * 2 + max(len(layers), 1) * COLUMN_PITCH - (COLUMN_PITCH - NODE_WIDTH)
    height = TOP + max(rows.values(), default=1) * ROW_PITCH + 10
    legend = [(reason, colour) for reason, colour in colours.items()]
    if any(s.reason is None for s in specs):
        legend.append(("schema itself clean", CLEAN_FILL))
    headings = [(LEFT + i * COLUMN_PITCH + NODE_WIDTH // 2, name) for i, (_, name) in enumerate(layers)]
    return Picture(mode=mode, width=width, height=height, columns=headings, nodes=list(nodes.values()),
                   edges=drawn, legend=legend, note=note)


def _curve(source: Node, target: Node) -> str:
    """A cubic curve from the right side of ``source`` to the left side of ``target``.

    An edge that passes over other columns arches above the rows, so that it
    is not mistaken for a chain through the nodes it passes.
    """
    x1, y1 = source.x + NODE_WIDTH, source.y + NODE_HEIGHT // 2
    x2, y2 = target.x, target.y + NODE_HEIGHT // 2
    bend = max(40, abs(x2 - x1) // 2)
    lift = ROW_PITCH // 2 + 8 * (abs(x2 - x1) // COLUMN_PITCH) if abs(x2 - x1) > COLUMN_PITCH else 0
    return f"M{x1},{y1} C{x1 + bend},{y1 - lift} {x2 - bend},{y2 - lift} {x2},{y2}"


def _ink(fill: str) -> str:
    """Dark text on light fills, white on dark ones (relative luminance, WCAG)."""
    red, green, blue = (int(fill[i:i + 2], 16) / 255 for i in (1, 3, 5))
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (red, green, blue)]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return "#1d2330" if luminance > 0.22 else "#ffffff"


def _fit(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"
