"""The register interference graph (networkx), its colouring, and its largest cliques.

Nodes are register names with attributes ``type`` (e.g. ``"u32"``), ``reg_class``
(``"b32"``), ``bits`` (the class width) and ``units`` (32-bit units; predicates 1).  An edge
joins two registers *of the same class* that are live at the same program point, with the
points and "live" defined as in :mod:`ptxforge.analysis.liveness`: every definition interferes with
everything in ``at(i)`` (what survives the instruction plus the other results it writes), and
the registers live into a block all interfere with each other.  Values of different classes
never get an edge: each class is coloured on its own.

For strict-SSA kernels this graph is chordal, so per class the smallest-last greedy colouring
uses exactly as many colours as the largest number of that class's values live at once
(:meth:`ptxforge.analysis.liveness.Liveness.class_peaks`).  Nothing in the pressure report needs the
graph: the peak comes from the live sets.

**Budget.**  Real kernels can have tens of thousands of registers and hundreds of millions of
interferences, so :func:`build_interference` takes ``max_edges`` (default
:data:`DEFAULT_MAX_EDGES`; networkx needs very roughly 250-300 bytes per edge).  It first
bounds every class's edge count from the per-instruction live counts, then builds whole
classes, smallest first, while they fit; a class that does not fit is built only over the
instruction window around its peak that fits the remaining budget (``scope="window"``), or
not at all (``scope="skipped"``).  :attr:`InterferenceGraph.scopes` says what was built.

Example::

    >>> from ptxforge.ptx import ir, types
    >>> from ptxforge.analysis.liveness import analyze_liveness
    >>> f = [ir.Register(f"%f{i}", types.f32) for i in range(3)]
    >>> body = (ir.Instruction("mov.f32", (f[0], ir.Immediate(1.0, types.f32)), 1),
    ...         ir.Instruction("mov.f32", (f[1], ir.Immediate(2.0, types.f32)), 1),
    ...         ir.Instruction("add.f32", (f[2], f[0], f[1]), 1),
    ...         ir.Instruction("st.global.f32", (ir.Address(ir.Symbol("out")), f[2])))
    >>> ig = build_interference(analyze_liveness(ir.Kernel("k", body=body)))
    >>> sorted(ig.graph.edges())
    [('%f0', '%f1')]
    >>> greedy_coloring(ig).count("f32"), max_clique(ig, "f32").size
    (2, 2)
"""

from __future__ import annotations

from typing import Iterable, Optional, Union

import attrs
import networkx as nx

from ptxforge.ptx.types import REG_CLASSES

from .liveness import CLASS_NAMES, Liveness

__all__ = [
    "DEFAULT_MAX_EDGES",
    "ClassScope",
    "InterferenceGraph",
    "Coloring",
    "Clique",
    "build_interference",
    "greedy_coloring",
    "verify_coloring",
    "max_clique",
]

#: Default edge budget of :func:`build_interference` (about 0.5-0.6 GB in networkx).
DEFAULT_MAX_EDGES = 2_000_000

_NC = len(REG_CLASSES)
_POS = {name: k for k, name in enumerate(CLASS_NAMES)}


@attrs.frozen(slots=True, kw_only=True)
class ClassScope:
    """What was built for one register class: ``scope`` is full, window or skipped."""

    reg_class: str
    scope: str
    window: Optional[tuple[int, int]]
    nodes: int
    edges: int
    estimated_edges: int
    peak: int
    peak_index: int

    @property
    def truncated(self) -> bool:
        return self.scope != "full"

    def to_dict(self) -> dict:
        return {
            "reg_class": self.reg_class,
            "scope": self.scope,
            "window": list(self.window) if self.window is not None else None,
            "nodes": self.nodes,
            "edges": self.edges,
            "estimated_edges": self.estimated_edges,
            "truncated": self.truncated,
        }


@attrs.frozen(slots=True, kw_only=True)
class InterferenceGraph:
    """A networkx interference graph plus a description of what it covers."""

    graph: nx.Graph = attrs.field(repr=False, eq=False)
    scopes: tuple[ClassScope, ...]
    max_edges: int
    # class -> names live at its peak
    peak_cliques: dict[str, tuple[str, ...]] = attrs.field(repr=False, eq=False)

    @property
    def truncated(self) -> bool:
        """True when some class was windowed or skipped to stay within the budget."""
        return any(s.truncated for s in self.scopes)

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(s.reg_class for s in self.scopes)

    def scope(self, cls: str) -> ClassScope:
        """The scope record of one class."""
        for s in self.scopes:
            if s.reg_class == cls:
                return s
        raise KeyError(f"class {cls!r} was not requested; built: {', '.join(self.classes)}")

    def nodes_of(self, cls: str) -> list[str]:
        """Register names of one class in the graph, in insertion (first appearance) order."""
        return [n for n, c in self.graph.nodes(data="reg_class") if c == cls]

    def subgraph(self, cls: str) -> nx.Graph:
        """The (read-only) subgraph of one class."""
        return self.graph.subgraph(self.nodes_of(cls))

    def describe(self) -> str:
        """One line per class: scope, nodes, edges."""
        lines = [f"interference graph (budget {self.max_edges:,} edges)"]
        for s in self.scopes:
            where = f" instructions {s.window[0]}..{s.window[1]}" if s.window else ""
            lines.append(f"  {s.reg_class:5} {s.scope:7}{where}: {s.nodes:,} nodes, {s.edges:,} edges"
                         f" (bound {s.estimated_edges:,})")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "max_edges": self.max_edges,
            "truncated": self.truncated,
            "nodes": self.graph.number_of_nodes(),
            "edges": self.graph.number_of_edges(),
            "classes": [s.to_dict() for s in self.scopes],
        }


@attrs.frozen(slots=True, kw_only=True)
class Coloring:
    """A colouring: register name → colour, colours numbered from 0 within each class."""

    colors: dict = attrs.field(eq=False)
    per_class: tuple[tuple[str, int], ...]

    def count(self, cls: str) -> int:
        """Colours used by one class (0 when the class has no registers)."""
        return dict(self.per_class).get(cls, 0)


@attrs.frozen(slots=True, kw_only=True)
class Clique:
    """A largest clique of one class: weight is the sum of the members' units."""

    reg_class: str
    nodes: tuple[str, ...]
    weight: int
    exact: bool
    method: str

    @property
    def size(self) -> int:
        return len(self.nodes)


def _cost(lv: Liveness) -> list[list[int]]:
    """Per class, per instruction: an upper bound on the edges that instruction adds."""
    n = lv.n_instructions
    cost = [[0] * n for _ in range(_NC)]
    at, before, cls = lv.at_counts, lv.before_counts, lv.reg_class
    for j, defs in enumerate(lv.instruction_defs):
        if defs:
            for r in defs:
                c = cls[r]
                cost[c][j] += at[j * _NC + c] - 1
    for blk in lv.cfg.blocks:
        s = blk.start
        for c in range(_NC):
            k = before[s * _NC + c]
            cost[c][s] += k * (k - 1) // 2
    return cost


def _window(cost: list[int], peak: int, budget: int) -> Optional[tuple[int, int]]:
    """The widest window around ``peak`` whose cost fits ``budget`` (None if not even one)."""
    total = cost[peak]
    if total > budget:
        return None
    lo = hi = peak
    n = len(cost)
    while True:
        left = cost[lo - 1] if lo > 0 else None
        right = cost[hi + 1] if hi + 1 < n else None
        if left is not None and total + left <= budget and (right is None or left <= right):
            lo -= 1
            total += left
        elif right is not None and total + right <= budget:
            hi += 1
            total += right
        elif left is not None and total + left <= budget:
            lo -= 1
            total += left
        else:
            return lo, hi


def _add_edges(lv: Liveness, graph: nx.Graph, classes: set, lo: int, hi: int) -> None:
    """Add the same-class edges of every point in instructions ``[lo, hi]``."""
    cls = lv.reg_class
    names = [r.name for r in lv.registers]
    wanted = {_POS[c] for c in classes}
    for blk in lv.cfg.blocks:
        if blk.end <= lo or blk.start > hi:
            continue
        for j, live, defs in lv.iter_points(blk.index, lo, hi):
            if j >= 0:
                for d in defs:
                    c = cls[d]
                    if c not in wanted:
                        continue
                    nd = names[d]
                    others = [names[r] for r in live if cls[r] == c and r != d]
                    others.extend(names[r] for r in defs if r != d and cls[r] == c)
                    graph.add_edges_from((nd, o) for o in others)
            else:
                for c in wanted:
                    members = sorted(r for r in live if cls[r] == c)
                    graph.add_edges_from((names[a], names[b]) for k, a in enumerate(members)
                                         for b in members[k + 1:])


def _add_nodes(lv: Liveness, graph: nx.Graph, regs: Iterable[int]) -> None:
    """Add registers as nodes with their attributes."""
    for r in regs:
        reg = lv.registers[r]
        rc = reg.reg_class
        graph.add_node(reg.name, type=reg.type.name, reg_class=rc.name, bits=rc.bits, units=rc.units)


def build_interference(lv: Liveness, *, classes: Optional[Iterable[str]] = None,
                       max_edges: int = DEFAULT_MAX_EDGES) -> InterferenceGraph:
    """Build the interference graph of the requested classes (default all) within
    ``max_edges``; whole classes first (smallest bound first), then a window around the peak.

    Example::

        >>> from ptxforge.ptx import ir
        >>> from ptxforge.analysis.liveness import analyze_liveness
        >>> ig = build_interference(analyze_liveness(ir.Kernel("k", body=())), max_edges=10)
        >>> ig.truncated, ig.graph.number_of_nodes()
        (False, 0)
    """
    wanted = list(CLASS_NAMES) if classes is None else sorted(set(classes), key=_POS.__getitem__)
    for c in wanted:
        if c not in _POS:
            raise ValueError(f"unknown register class {c!r}; expected one of {', '.join(CLASS_NAMES)}")
    cost = _cost(lv)
    bounds = {c: sum(cost[_POS[c]]) for c in wanted}
    peaks = lv.class_peaks()
    graph = nx.Graph()
    remaining = max_edges
    full: list[str] = []
    plan: dict[str, Optional[tuple[int, int]]] = {}
    for c in sorted(wanted, key=lambda c: (bounds[c], _POS[c])):
        if bounds[c] <= remaining:
            full.append(c)
            remaining -= bounds[c]
    for c in sorted(wanted, key=lambda c: (bounds[c], _POS[c])):
        if c in full:
            continue
        peak, where = peaks[c]
        win = _window(cost[_POS[c]], where, remaining) if where >= 0 else None
        plan[c] = win
        if win is not None:
            remaining -= sum(cost[_POS[c]][win[0]:win[1] + 1])
    by_class = {c: [r for r in range(len(lv.registers)) if lv.reg_class[r] == _POS[c]] for c in wanted}
    if full:
        for c in sorted(full, key=_POS.__getitem__):
            _add_nodes(lv, graph, by_class[c])
        _add_edges(lv, graph, set(full), 0, lv.n_instructions - 1)
    for c in sorted(plan, key=_POS.__getitem__):
        win = plan[c]
        if win is None:
            continue
        sub = nx.Graph()
        _add_edges(lv, sub, {c}, win[0], win[1])
        touched = {lv.index[name] for name in sub.nodes}
        for r in lv.live_at(peaks[c][1]):
            if lv.reg_class[r] == _POS[c]:
                touched.add(r)
        _add_nodes(lv, graph, sorted(touched))
        graph.add_edges_from(sub.edges())
    peak_cliques: dict[str, tuple[str, ...]] = {}
    scopes = []
    for c in wanted:
        peak, where = peaks[c]
        if where >= 0 and peak and (c in full or plan.get(c) is not None):
            live = lv.live_at(where)
            peak_cliques[c] = tuple(sorted(lv.registers[r].name for r in live if lv.reg_class[r] == _POS[c]))
        nodes = [n for n, k in graph.nodes(data="reg_class") if k == c]
        edges = graph.subgraph(nodes).number_of_edges()
        if c in full:
            scope, win = "full", None
        elif plan.get(c) is not None:
            scope, win = "window", plan[c]
        else:
            scope, win = "skipped", None
        scopes.append(ClassScope(reg_class=c, scope=scope, window=win, nodes=len(nodes),
                                 edges=edges, estimated_edges=bounds[c], peak=peak,
                                 peak_index=where))
    return InterferenceGraph(graph=graph, scopes=tuple(scopes), max_edges=max_edges,
                             peak_cliques=peak_cliques)


def _graph_of(g: Union[InterferenceGraph, nx.Graph]) -> nx.Graph:
    """The networkx graph of an InterferenceGraph, or the graph itself."""
    return g.graph if isinstance(g, InterferenceGraph) else g


def greedy_coloring(g: Union[InterferenceGraph, nx.Graph], classes: Optional[Iterable[str]] = None) -> Coloring:
    """Colour each class with ``networkx.greedy_color(..., strategy="smallest_last")``.

    Example::

        >>> import networkx as nx
        >>> g = nx.Graph([("%r1", "%r2")])
        >>> nx.set_node_attributes(g, "b32", "reg_class")
        >>> greedy_coloring(g).count("b32")
        2
    """
    graph = _graph_of(g)
    groups: dict[str, list] = {}
    for node, c in graph.nodes(data="reg_class"):
        groups.setdefault(c or "", []).append(node)
    wanted = None if classes is None else set(classes)
    colors: dict = {}
    per_class = []
    for c in sorted(groups, key=lambda c: (_POS.get(c, _NC), c)):
        if wanted is not None and c not in wanted:
            continue
        coloring = _deterministic_greedy_color(graph.subgraph(groups[c]))
        colors.update(coloring)
        per_class.append((c, len(set(coloring.values()))))
    return Coloring(colors=colors, per_class=tuple(per_class))


def _deterministic_greedy_color(sub: nx.Graph) -> dict:
    """``greedy_color(strategy="smallest_last")`` with the same result in every process.

    networkx keeps nodes of equal degree in sets and pops from them, so with string nodes the
    colouring (and even the colour count) follows PYTHONHASHSEED.  Integer nodes hash to
    themselves: relabel in sorted-name order, colour, and map back.
    """
    order = sorted(sub.nodes)
    index = {name: k for k, name in enumerate(order)}
    as_ints = nx.Graph()
    as_ints.add_nodes_from(range(len(order)))
    as_ints.add_edges_from(sorted((min(index[a], index[b]), max(index[a], index[b]))
                                  for a, b in sub.edges))
    coloring = nx.greedy_color(as_ints, strategy="smallest_last")
    return {order[k]: color for k, color in sorted(coloring.items())}


def verify_coloring(g: Union[InterferenceGraph, nx.Graph], coloring: Union[Coloring, dict]) -> list[str]:
    """Problems with a colouring (empty list when valid): uncoloured nodes, and edges whose
    two ends share a colour within one class.

    Example::

        >>> import networkx as nx
        >>> verify_coloring(nx.Graph([("a", "b")]), {"a": 0, "b": 0})
        ['a -- b share colour 0']
    """
    graph = _graph_of(g)
    colors = coloring.colors if isinstance(coloring, Coloring) else coloring
    problems = [f"{n} has no colour" for n in sorted(graph.nodes) if n not in colors]
    cls = dict(graph.nodes(data="reg_class"))
    for a, b in sorted(tuple(sorted(e)) for e in graph.edges):
        if a in colors and b in colors and colors[a] == colors[b] and cls.get(a) == cls.get(b):
            problems.append(f"{a} -- {b} share colour {colors[a]}")
    return problems


def max_clique(ig: InterferenceGraph, cls: str, *, exact_limit: int = 200) -> Clique:
    """A maximum-weight clique (weights = units) of one class.

    Exact on chordal graphs (perfect elimination) and, for non-chordal graphs, when the class
    has at most ``exact_limit`` nodes (``networkx.max_weight_clique``); otherwise the set live
    at the class's peak (a clique by construction, so a lower bound) with ``exact=False``.
    """
    sub = ig.subgraph(cls)
    units = REG_CLASSES[_POS[cls]].units
    if sub.number_of_nodes() == 0:
        return Clique(reg_class=cls, nodes=(), weight=0, exact=True, method="empty")
    if nx.is_chordal(sub):
        best = min((tuple(sorted(q)) for q in nx.chordal_graph_cliques(sub)),
                   key=lambda t: (-len(t), t))
        return Clique(reg_class=cls, nodes=best, weight=len(best) * units, exact=True,
                      method="chordal")
    if sub.number_of_nodes() <= exact_limit:
        nodes, weight = nx.max_weight_clique(nx.Graph(sub), weight="units")
        return Clique(reg_class=cls, nodes=tuple(sorted(nodes)), weight=weight, exact=True,
                      method="branch-and-bound")
    best = ig.peak_cliques.get(cls, ())
    return Clique(reg_class=cls, nodes=best, weight=len(best) * units, exact=False,
                  method="live-set lower bound")
