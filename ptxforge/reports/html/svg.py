"""Inline SVG charts written in Python: line charts with shaded spans and a peak marker.

Each chart is a string of SVG with its data in attributes a test (or a reader of the page
source) can check: every series is one ``<polyline class="series …" data-series=NAME>``
(a series with gaps is several polylines with the same name), the peak marker is a
``<circle class="peak" data-index=I>``, shaded spans are ``<rect class="shade">``.
Coordinates are rounded to 0.1 px, so the same data gives the same bytes.

Example::

    >>> svg = line_chart([("ptx", (1, 3, 2), "ptx")], peak=(1, 3), frame=Frame(title="t"))
    >>> svg.count("<polyline"), 'data-index="1"' in svg
    (1, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import attrs

__all__ = ["MAX_POINTS", "Frame", "line_chart", "nice_ticks"]

#: The most points one series draws; a longer series is drawn as the maximum of each bucket
#: of consecutive values (``data-bucket`` says how many values one point stands for).
MAX_POINTS = 4000

_W, _H = 880, 240
_L, _R, _T, _B = 48, 12, 24, 34


def nice_ticks(top: float, n: int = 5) -> list:
    """Round tick values from 0 to at least ``top``.

    Example::

        >>> nice_ticks(37), nice_ticks(0)
        ([0, 10, 20, 30, 40], [0, 1])
    """
    if top <= 0:
        return [0, 1]
    raw = top / max(1, n - 1)
    mag = 10 ** (len(str(int(raw))) - 1) if raw >= 1 else 1
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    step = max(1, int(step))
    ticks = list(range(0, int(top) + step, step))
    if ticks[-1] < top:
        ticks.append(ticks[-1] + step)
    return ticks


def _f(x: float) -> str:
    text = f"{x:.1f}"
    return text.removesuffix(".0")


def _bucket(values: Sequence, size: int) -> list:
    out = []
    for k in range(0, len(values), size):
        part = [v for v in values[k:k + size] if v is not None]
        out.append(max(part) if part else None)
    return out


def _x_ticks(lo: float, hi: float) -> list:
    """The x axis's labels: both ends and the round values between them (none closer to an
    end than a twentieth of the axis, so labels do not collide)."""
    inner = [t for t in nice_ticks(hi, 6) if lo < t < hi and
             min(t - lo, hi - t) >= (hi - lo) / 20]
    return [lo, *inner, hi]


@attrs.frozen(slots=True, kw_only=True)
class Frame:
    """What surrounds a chart's data: its title, axis labels, size in pixels and element id."""

    title: str = ""
    x_label: str = ""
    y_label: str = ""
    width: int = _W
    height: int = _H
    chart_id: str = ""


def line_chart(series: Sequence, *, xs: Sequence | None = None, shades: Sequence = (),
               peak: tuple | None = None, marks: Sequence = (), y_top: float | None = None,
               step: bool = False, frame: Frame = Frame()) -> str:
    """An SVG line chart.  ``series``: ``(name, values, css class)``, one value per x (None:
    a gap); ``xs``: the x value of each index (default 0, 1, …); ``shades``: ``(start, end,
    label)`` index ranges shaded behind the lines; ``peak``: ``(index, value)`` marked with a
    circle; ``marks``: ``(x value, label)`` vertical lines; ``step``: draw steps (a value
    holds until the next x); ``frame``: title, axis labels, size and id (:class:`Frame`)."""
    title, x_label, y_label = frame.title, frame.x_label, frame.y_label
    width, height, chart_id = frame.width, frame.height, frame.chart_id
    n = max((len(v) for _, v, _ in series), default=0)
    size = max(1, -(-n // MAX_POINTS))
    xs = list(range(n)) if xs is None else list(xs)
    x_lo = min(xs) if xs else 0
    x_hi = max(xs) if xs else 1
    if x_hi == x_lo:
        x_hi = x_lo + 1
    top = y_top if y_top is not None else max(
        [v for _, vals, _ in series for v in vals if v is not None] + [1])
    ticks = nice_ticks(top)
    y_hi = ticks[-1]
    pw, ph = width - _L - _R, height - _T - _B

    def px(x: float) -> float:
        return _L + (x - x_lo) * pw / (x_hi - x_lo)

    def py(y: float) -> float:
        return _T + ph - y * ph / y_hi

    out = [f'<svg class="chart" role="img" '
           f'viewBox="0 0 {width} {height}" width="{width}" height="{height}"'
           + (f' id="{escape(chart_id)}"' if chart_id else "")
           + f' data-bucket="{size}" aria-label="{escape(title)}">',
           f"<title>{escape(title)}</title>"]
    for s, e, label in shades:
        x0, x1 = px(xs[min(s, n - 1)]) if n else _L, px(xs[min(max(e - 1, s), n - 1)]) if n else _L
        out.append(f'<rect class="shade" x="{_f(x0)}" y="{_T}" width="{_f(max(x1 - x0, 1))}" '
                   f'height="{ph}" data-start="{s}" data-end="{e}"><title>{escape(label)}'
                   f"</title></rect>")
    for t in ticks:
        y = _f(py(t))
        out.append(f'<line class="grid" x1="{_L}" x2="{width - _R}" y1="{y}" y2="{y}"/>'
                   f'<text class="tick" x="{_L - 6}" y="{y}" text-anchor="end" '
                   f'dominant-baseline="middle">{t}</text>')
    for x in _x_ticks(x_lo, x_hi) if not step else sorted(set(xs)):
        if step and len(set(xs)) > 12 and x not in (x_lo, x_hi):
            continue
        out.append(f'<text class="tick" x="{_f(px(x))}" y="{height - _B + 14}" '
                   f'text-anchor="middle">{x}</text>')
    out.append(f'<text class="axis" x="{_L + pw / 2:.0f}" y="{height - 4}" '
               f'text-anchor="middle">{escape(x_label)}</text>')
    out.append(f'<text class="axis" x="12" y="{_T + ph / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 12 {_T + ph / 2:.0f})">{escape(y_label)}</text>')
    for m, (x, label) in enumerate(marks):
        out.append(f'<line class="mark" x1="{_f(px(x))}" x2="{_f(px(x))}" y1="{_T}" '
                   f'y2="{_T + ph}"><title>{escape(label)}</title></line>'
                   f'<text class="marklabel" x="{_f(px(x) + 3)}" y="{_T + 10 + 13 * m}">'
                   f"{escape(label)}</text>")
    for name, values, css in series:
        vals = _bucket(values, size) if size > 1 else list(values)
        pos = [xs[min(k * size, n - 1)] for k in range(len(vals))]
        run: list = []
        runs = []
        for x, v in zip(pos, vals):
            if v is None:
                if run:
                    runs.append(run)
                run = []
                continue
            if step and run:
                run.append(f"{_f(px(x))},{run[-1].split(',')[1]}")
            run.append(f"{_f(px(x))},{_f(py(v))}")
        if run:
            runs.append(run)
        for run in runs:
            out.append(f'<polyline class="series {escape(css)}" data-series="{escape(name)}" '
                       f'points="{" ".join(run)}"/>')
    if peak is not None and n:
        index, value = peak
        out.append(f'<circle class="peak" data-index="{index}" data-value="{value}" '
                   f'cx="{_f(px(xs[index // size * size]))}" cy="{_f(py(value))}" r="4">'
                   f"<title>peak {value} at instruction {index}</title></circle>")
    out.append("</svg>")
    return "".join(out)
