"""Small, dependency-free SVG charts for the HTML reports (`pganon compare`, `pganon report`).

Inline SVG keeps a report one self-contained file that any browser renders offline; every mark
carries a <title> (the browser shows it on hover) and the class `mark`, so a test can count what
was drawn. Colours are the Okabe-Ito palette (distinguishable with the common colour-vision
deficiencies), assigned per series name so a method keeps its colour across charts.
"""

from __future__ import annotations

import math
from html import escape

PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#8C6D31", "#999999",
           "#7B3294"]
MARKERS = ["circle", "square", "diamond", "triangle"]
REFERENCE = "#555555"


class Colours:
    """A stable colour (and marker) per series name."""

    def __init__(self, names=()):
        self._map: dict[str, int] = {}
        for n in names:
            self.index(n)

    def index(self, name: str) -> int:
        return self._map.setdefault(name, len(self._map))

    def colour(self, name: str) -> str:
        if name.startswith("("):  # reference series, e.g. "(copy: CREATE TABLE AS)"
            return REFERENCE
        return PALETTE[self.index(name) % len(PALETTE)]

    def marker(self, name: str) -> str:
        return MARKERS[(self.index(name) // len(PALETTE) + self.index(name)) % len(MARKERS)]


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.3g}M"
    if a >= 1e4:
        return f"{v / 1e3:.3g}k"
    if a < 0.001:
        return f"{v:.0e}".replace("e-0", "e-")
    if a >= 100:
        return f"{v:.0f}"
    if a >= 1:
        return f"{v:.3g}"
    return f"{v:.2g}"


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (1, 2, 5 times a power of ten apart)."""
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(n - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks, t = [], start
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 12))
        t += step
    if ticks[-1] < hi:
        ticks.append(round(t, 12))
    return ticks


def log_ticks(lo: float, hi: float) -> list[float]:
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    ticks = [10.0 ** e for e in range(a, b + 1)]
    if len(ticks) <= 3:
        ticks = sorted({m * 10.0 ** e for e in range(a, b + 1) for m in (1, 2, 5)})
        ticks = [t for t in ticks if 10.0 ** a <= t <= 10.0 ** b]
    return ticks


class _Axis:
    def __init__(self, values, log, lo_zero, pixels, flip=False):
        vals = [v for v in values if v is not None and math.isfinite(v) and (v > 0 or not log)]
        self.log = log and bool(vals)
        if not vals:
            vals = [0.0, 1.0]
        lo, hi = min(vals), max(vals)
        if self.log:
            self.ticks = log_ticks(lo, hi)
        else:
            if lo_zero:
                lo = min(0.0, lo)
            self.ticks = nice_ticks(lo, hi)
        self.lo, self.hi = self.ticks[0], self.ticks[-1]
        if self.hi == self.lo:
            self.hi = self.lo + 1
        self.pixels, self.flip = pixels, flip

    def __call__(self, v: float) -> float:
        if self.log:
            f = (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            f = (v - self.lo) / (self.hi - self.lo)
        a, b = self.pixels
        return b - f * (b - a) if self.flip else a + f * (b - a)


def _marker(kind: str, x: float, y: float, colour: str, tip: str) -> str:
    t = f"<title>{escape(tip)}</title>"
    if kind == "square":
        return f'<rect class="mark" x="{x - 3.5:.1f}" y="{y - 3.5:.1f}" width="7" height="7" fill="{colour}">{t}</rect>'
    if kind == "diamond":
        pts = f"{x:.1f},{y - 4.5:.1f} {x + 4.5:.1f},{y:.1f} {x:.1f},{y + 4.5:.1f} {x - 4.5:.1f},{y:.1f}"
        return f'<polygon class="mark" points="{pts}" fill="{colour}">{t}</polygon>'
    if kind == "triangle":
        pts = f"{x:.1f},{y - 4.5:.1f} {x + 4.5:.1f},{y + 3.5:.1f} {x - 4.5:.1f},{y + 3.5:.1f}"
        return f'<polygon class="mark" points="{pts}" fill="{colour}">{t}</polygon>'
    return f'<circle class="mark" cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}">{t}</circle>'


def _frame(width, height, total_h, title, x_label, y_label, left, right, top, bottom, xs, ys, x_fmt, y_fmt):
    """Title, grid, ticks and axis labels of a plot area `height` high in an SVG `total_h` high
    (the legend goes below the plot area)."""
    out = [f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {total_h}" '
           f'width="{width}" height="{total_h}" role="img" aria-label="{escape(title)}">',
           f"<title>{escape(title)}</title>",
           f'<text class="ptitle" x="{left}" y="18">{escape(title)}</text>']
    for t in ys.ticks:
        y = ys(t)
        out.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text class="tick" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(y_fmt(t))}</text>')
    for t in xs.ticks:
        x = xs(t)
        out.append(f'<line class="tickmark" x1="{x:.1f}" x2="{x:.1f}" y1="{height - bottom}" y2="{height - bottom + 4}"/>')
        out.append(f'<text class="tick" x="{x:.1f}" y="{height - bottom + 16}" text-anchor="middle">{escape(x_fmt(t))}</text>')
    out.append(f'<line class="axis" x1="{left}" x2="{width - right}" y1="{height - bottom}" y2="{height - bottom}"/>')
    out.append(f'<line class="axis" x1="{left}" x2="{left}" y1="{top}" y2="{height - bottom}"/>')
    out.append(f'<text class="alabel" x="{(left + width - right) / 2:.0f}" y="{height - 6}" text-anchor="middle">'
               f'{escape(x_label)}</text>')
    out.append(f'<text class="alabel" transform="translate(13 {(top + height - bottom) / 2:.0f}) rotate(-90)" '
               f'text-anchor="middle">{escape(y_label)}</text>')
    return out


def _legend(names, colours, x0, y0, width):
    out, x, y = [], x0, y0
    for n in names:
        w = 22 + 7 * len(n)
        if x + w > width - 8 and x > x0:
            x, y = x0, y + 16
        out.append(f'<rect x="{x}" y="{y - 8}" width="12" height="10" fill="{colours.colour(n)}"/>'
                   f'<text class="legend" x="{x + 16}" y="{y + 1}">{escape(n)}</text>')
        x += w
    return out, y


def line_chart(series, *, title, x_label, y_label, colours, log_x=False, log_y=False, width=470, height=310,
               y_zero=True, x_fmt=_fmt, y_fmt=_fmt, empty="no data") -> str:
    """series: [{'name': str, 'points': [(x, y), ...], 'dashed': bool}]; points with y None are
    gaps.  A series of one point is drawn as a marker only."""
    names = [s["name"] for s in series]
    left, right, top, bottom = 58, 14, 30, 42
    legend, ly = _legend(names, colours, left, height + 4, width)
    total_h = height + max(ly - height + 12, 0) + 8
    xs_all = [x for s in series for x, y in s["points"] if y is not None]
    ys_all = [y for s in series for x, y in s["points"] if y is not None]
    xs = _Axis(xs_all, log_x, False, (left + 6, width - right - 6))
    ys = _Axis(ys_all, log_y, y_zero, (top, height - bottom), flip=True)
    out = _frame(width, height, total_h, title, x_label, y_label, left, right, top, bottom, xs, ys, x_fmt, y_fmt)
    if not ys_all:
        out.append(f'<text class="empty" x="{width / 2:.0f}" y="{height / 2:.0f}" text-anchor="middle">{escape(empty)}</text>')
    for s in series:
        c = colours.colour(s["name"])
        pts = [(x, y) for x, y in s["points"] if y is not None and (not ys.log or y > 0) and (not xs.log or x > 0)]
        if len(pts) > 1:
            path = " ".join(f"{'M' if i == 0 else 'L'}{xs(x):.1f},{ys(y):.1f}" for i, (x, y) in enumerate(pts))
            dash = ' stroke-dasharray="5 4"' if s.get("dashed") else ""
            out.append(f'<path class="line" d="{path}" stroke="{c}"{dash}/>')
        for x, y in pts:
            out.append(_marker(colours.marker(s["name"]), xs(x), ys(y), c,
                               f"{s['name']}: {x_label} {x_fmt(x)}, {y_label} {y_fmt(y)}"))
    out += legend
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(categories, series, *, title, y_label, colours, log_y=False, width=470, height=310, y_fmt=_fmt,
              x_label="", baseline=None, empty="no data") -> str:
    """Grouped bars: one group per category, one bar per series ({'name', 'values'} aligned with
    categories; None leaves a gap).  baseline: optional {category: value} drawn as a dash."""
    names = [s["name"] for s in series]
    left, right, top = 58, 14, 30
    bottom = 72 if len(categories) > 8 else 56  # room for slanted labels
    legend, ly = _legend(names, colours, left, height + 4, width)
    total_h = height + max(ly - height + 12, 0) + 8
    vals = [v for s in series for v in s["values"] if v is not None]
    if baseline:
        vals += [v for v in baseline.values() if v is not None]
    ys = _Axis(vals, log_y, True, (top, height - bottom), flip=True)
    out = [f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {total_h}" width="{width}" '
           f'height="{total_h}" role="img" aria-label="{escape(title)}">', f"<title>{escape(title)}</title>",
           f'<text class="ptitle" x="{left}" y="18">{escape(title)}</text>']
    for t in ys.ticks:
        y = ys(t)
        out.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text class="tick" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(y_fmt(t))}</text>')
    n_cat, n_ser = max(len(categories), 1), max(len(series), 1)
    band = (width - left - right) / n_cat
    bw = min(26.0, band * 0.8 / n_ser)
    floor = ys(ys.lo) if ys.log else ys(max(0.0, ys.lo))
    if not vals:
        out.append(f'<text class="empty" x="{width / 2:.0f}" y="{height / 2:.0f}" text-anchor="middle">{escape(empty)}</text>')
    for ci, cat in enumerate(categories):
        x0 = left + ci * band + (band - bw * n_ser) / 2
        for si, s in enumerate(series):
            v = s["values"][ci]
            if v is None or (ys.log and v <= 0):
                continue
            y = ys(v)
            out.append(f'<rect class="mark" x="{x0 + si * bw:.1f}" y="{min(y, floor):.1f}" width="{bw - 1:.1f}" '
                       f'height="{abs(floor - y):.1f}" fill="{colours.colour(s["name"])}">'
                       f"<title>{escape(s['name'])}: {escape(str(cat))} {escape(y_fmt(v))}</title></rect>")
        if baseline and baseline.get(cat) is not None:
            y = ys(baseline[cat])
            out.append(f'<line class="baseline" x1="{x0 - 3:.1f}" x2="{x0 + bw * n_ser + 3:.1f}" y1="{y:.1f}" '
                       f'y2="{y:.1f}"><title>no release: {escape(y_fmt(baseline[cat]))}</title></line>')
        label = str(cat)
        label = label if len(label) <= 14 else label[:13] + "…"
        cx = left + ci * band + band / 2
        if n_cat > 8:  # crowded: slanted labels
            out.append(f'<text class="tick" transform="translate({cx:.1f} {height - bottom + 12}) rotate(-35)" '
                       f'text-anchor="end">{escape(label)}</text>')
        else:
            out.append(f'<text class="tick" x="{cx:.1f}" y="{height - bottom + 16}" text-anchor="middle">'
                       f'{escape(label)}</text>')
    out.append(f'<line class="axis" x1="{left}" x2="{width - right}" y1="{height - bottom}" y2="{height - bottom}"/>')
    out.append(f'<line class="axis" x1="{left}" x2="{left}" y1="{top}" y2="{height - bottom}"/>')
    if x_label:
        out.append(f'<text class="alabel" x="{(left + width - right) / 2:.0f}" y="{height - 6}" '
                   f'text-anchor="middle">{escape(x_label)}</text>')
    out.append(f'<text class="alabel" transform="translate(13 {(top + height - bottom) / 2:.0f}) rotate(-90)" '
               f'text-anchor="middle">{escape(y_label)}</text>')
    out += legend
    out.append("</svg>")
    return "\n".join(out)


CSS = """
svg.plot { background: #fff; font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; }
svg.plot .ptitle { font-size: 13px; font-weight: 600; fill: #222; }
svg.plot .tick { font-size: 10px; fill: #555; }
svg.plot .alabel { font-size: 11px; fill: #333; }
svg.plot .legend { font-size: 10.5px; fill: #222; }
svg.plot .grid { stroke: #e6e6e6; }
svg.plot .axis, svg.plot .tickmark { stroke: #888; }
svg.plot .line { fill: none; stroke-width: 2; }
svg.plot .baseline { stroke: #222; stroke-width: 2; stroke-dasharray: 3 2; }
svg.plot .empty { font-size: 12px; fill: #999; }
svg.plot .mark:hover { stroke: #000; stroke-width: 1.5; }
"""
