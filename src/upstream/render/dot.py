"""Graphviz DOT for a lineage graph: `upstream lineage … --format dot | dot -Tsvg > g.svg`."""

from __future__ import annotations

from upstream.render.graph import Graph, Node

#: shape, style and fill colour per node kind.
_LOOKS = {
    "dataset": ("box", "rounded,filled", "#dbeafe"),
    "job": ("box", "filled", "#fef3c7"),
    "workflow": ("box3d", "filled", "#fde68a"),
    "field": ("ellipse", "filled", "#dcfce7"),
}


#: A diff's added edges are green, its removed ones red and dashed.
_CHANGE_LOOKS = {
    "added": ['color="#16a34a"', "penwidth=2"],
    "removed": ['color="#dc2626"', "penwidth=2", "style=dashed"],
}


def quoted(text: str) -> str:
    """A DOT double-quoted string showing `text` literally: quotes and backslashes escaped
    (a bare backslash would start an escape such as \\N), line breaks kept as breaks."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n") + '"'


def to_dot(graph: Graph) -> str:
    """The graph left to right, upstream first; node ids are positional (`n0`, `n1`…), so
    any name is safe, and each label shows the name over its namespace."""
    ids = {node.key: f"n{index}" for index, node in enumerate(graph.nodes)}
    lines = [
        f"digraph {quoted(graph.title)} {{",
        "  graph [rankdir=LR, fontname=Helvetica];",
        "  node [fontname=Helvetica, fontsize=10];",
        "  edge [fontname=Helvetica, fontsize=9];",
    ]
    lines += [f"  {ids[node.key]} [{_attributes(node)}];" for node in graph.nodes]
    for edge in graph.edges:
        looks = [f"label={quoted(edge.label)}"] if edge.label else []
        looks += _CHANGE_LOOKS.get(edge.change, [])
        attributes = f" [{', '.join(looks)}]" if looks else ""
        lines.append(f"  {ids[edge.source]} -> {ids[edge.target]}{attributes};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _attributes(node: Node) -> str:
    """Label, shape and colours; the focus is drawn bold, a temporary dataset dashed."""
    shape, style, fill = _LOOKS[node.kind]
    title = f"{node.title} (workflow)" if node.kind == "workflow" else node.title
    parts = [
        f"label={quoted(title + chr(10) + node.namespace)}",
        f"shape={shape}",
        f'style="{style},dashed"' if node.temporary else f'style="{style}"',
        f'fillcolor="{fill}"',
    ]
    if node.focus:
        parts.append("penwidth=3")
    return ", ".join(parts)
