"""Mermaid flowcharts for a lineage graph, to paste into Markdown on GitHub, GitLab, Notion.

Mermaid's grammar is fragile around quotes, brackets and markup inside labels, so every label
is quoted and every character outside a small plain set is written as Mermaid's numeric entity
(`#35;` for `#`); node ids are positional (`n0`, `n1`…), never derived from names.
"""

from __future__ import annotations

import re

from upstream.render.graph import Graph, Node

#: Characters that stand for themselves inside a quoted Mermaid label.
_PLAIN = re.compile(r"[A-Za-z0-9 _.,:/@+=-]")

#: Opening and closing brackets of each node kind's shape.
_SHAPES = {
    "dataset": ("[(", ")]"),
    "job": ("[", "]"),
    "workflow": ("[[", "]]"),
    "field": ("([", "])"),
}


#: A diff's added edges are green, its removed ones red (Mermaid styles links by position).
_CHANGE_COLOURS = {"added": "#16a34a", "removed": "#dc2626"}


def escape(text: str) -> str:
    """`text` with plain characters kept and everything else as a numeric entity."""
    return "".join(c if _PLAIN.fullmatch(c) else f"#{ord(c)};" for c in text)


def label(*lines: str) -> str:
    """A quoted label of one or more lines."""
    return '"' + "<br/>".join(escape(line) for line in lines) + '"'


def to_mermaid(graph: Graph) -> str:
    """A left-to-right flowchart; the focus is outlined, temporary datasets dashed."""
    ids = {node.key: f"n{index}" for index, node in enumerate(graph.nodes)}
    lines = ["flowchart LR"]
    lines += [f"  {ids[node.key]}{_shape(node)}" for node in graph.nodes]
    for edge in graph.edges:
        arrow = f"-->|{label(edge.label)}|" if edge.label else "-->"
        lines.append(f"  {ids[edge.source]} {arrow} {ids[edge.target]}")
    for change, colour in _CHANGE_COLOURS.items():
        numbers = [str(i) for i, edge in enumerate(graph.edges) if edge.change == change]
        if numbers:
            lines.append(f"  linkStyle {','.join(numbers)} stroke:{colour},stroke-width:2px")
    focus = [ids[n.key] for n in graph.nodes if n.focus]
    temporary = [ids[n.key] for n in graph.nodes if n.temporary]
    if focus:
        lines += ["  classDef focus stroke-width:3px", f"  class {','.join(focus)} focus"]
    if temporary:
        lines += [
            "  classDef temporary stroke-dasharray:4 3",
            f"  class {','.join(temporary)} temporary",
        ]
    return "\n".join(lines) + "\n"


def _shape(node: Node) -> str:
    opening, closing = _SHAPES[node.kind]
    title = f"{node.title} (workflow)" if node.kind == "workflow" else node.title
    return f"{opening}{label(title, node.namespace)}{closing}"
