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


def nice_ticks(lo: float, hi: float, n: int = 5, integer: bool = False) -> list[float]:
    """Round tick values covering [lo, hi] (1, 2, 5 times a power of ten apart; 2.5 too unless
    `integer`: an axis of counts, k or l never gets a tick between two whole numbers)."""
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(n - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in ((1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10)) if m * mag >= raw)
    if integer:
        step = max(1, round(step))
    start = math.floor(lo / step) * step
    ticks, t = [], start
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 12))
        t += step
    if ticks[-1] < hi:
        ticks.append(round(t, 12))
    return [int(round(t)) for t in ticks] if integer else ticks


def log_ticks(lo: float, hi: float) -> list[float]:
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    ticks = [10.0 ** e for e in range(a, b + 1)]
    if len(ticks) <= 3:
        ticks = sorted({m * 10.0 ** e for e in range(a, b + 1) for m in (1, 2, 5)})
        ticks = [t for t in ticks if 10.0 ** a <= t <= 10.0 ** b]
    return ticks


def is_integer_axis(values) -> bool:
    """An axis whose values are all whole numbers given as int (k, l, rows, counts)."""
    vals = [v for v in values if v is not None]
    return bool(vals) and all(isinstance(v, int) and not isinstance(v, bool) for v in vals)


class _Axis:
    def __init__(self, values, log, lo_zero, pixels, flip=False, integer=None):
        values = list(values)
        self.integer = is_integer_axis(values) if integer is None else integer
        vals = [v for v in values if v is not None and math.isfinite(v) and (v > 0 or not log)]
        self.log = log and bool(vals)
        if not vals:
            vals = [0.0, 1.0]
        lo, hi = min(vals), max(vals)
        if self.log:
            self.ticks = log_ticks(lo, hi)
            if self.integer:
                self.ticks = [int(t) for t in self.ticks if t >= 1] or [1, 10]
        else:
            if lo_zero:
                lo = min(0.0, lo)
            self.ticks = nice_ticks(lo, hi, integer=self.integer)
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


def _marker(kind: str, x: float, y: float, colour: str, tip: str, cls: str = "mark") -> str:
    t = f"<title>{escape(tip)}</title>"
    if kind == "square":
        return f'<rect class="{cls}" x="{x - 3.5:.1f}" y="{y - 3.5:.1f}" width="7" height="7" fill="{colour}">{t}</rect>'
    if kind == "diamond":
        pts = f"{x:.1f},{y - 4.5:.1f} {x + 4.5:.1f},{y:.1f} {x:.1f},{y + 4.5:.1f} {x - 4.5:.1f},{y:.1f}"
        return f'<polygon class="{cls}" points="{pts}" fill="{colour}">{t}</polygon>'
    if kind == "triangle":
        pts = f"{x:.1f},{y - 4.5:.1f} {x + 4.5:.1f},{y + 3.5:.1f} {x - 4.5:.1f},{y + 3.5:.1f}"
        return f'<polygon class="{cls}" points="{pts}" fill="{colour}">{t}</polygon>'
    return f'<circle class="{cls}" cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}">{t}</circle>'


# Text metrics for laying out labels without a browser: the widest character of the 10 px tick
# font is about 6.2 px, a line of it 12 px high. Margins are computed from the labels so axis
# titles never overlap tick labels.
TICK_CHAR, TICK_H = 6.2, 12
TITLE_H = 13  # the axis titles' line (11 px font)
LEGEND_GAP = 16  # from the bottom of the plot area (the x-axis title's baseline is 6 above it) to the legend's first line


def _text_width(text: str, char: float = TICK_CHAR) -> float:
    return char * len(text)


def _left_margin(labels) -> int:
    """Room for the y tick labels (right-aligned 6 px left of the axis) and, left of them, the
    rotated y-axis title."""
    widest = max((_text_width(t) for t in labels), default=0)
    return int(max(50, 6 + widest + 6 + TITLE_H + 6))


def _x_tick_labels(xs, fmt):
    """Tick labels of the x axis, every second (third ...) one left out when neighbours would
    touch: [(tick, text or None)]."""
    ticks = xs.ticks
    texts = [fmt(t) for t in ticks]
    if len(ticks) < 2:
        return list(zip(ticks, texts))
    gap = min(abs(xs(b) - xs(a)) for a, b in zip(ticks, ticks[1:]))
    widest = max(_text_width(t) for t in texts) + 6
    every = max(1, math.ceil(widest / gap)) if gap > 0 else len(ticks)
    return [(t, s if i % every == 0 else None) for i, (t, s) in enumerate(zip(ticks, texts))]


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
        out.append(f'<text class="tick y" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(y_fmt(t))}</text>')
    for t, text in _x_tick_labels(xs, x_fmt):
        x = xs(t)
        out.append(f'<line class="tickmark" x1="{x:.1f}" x2="{x:.1f}" y1="{height - bottom}" y2="{height - bottom + 4}"/>')
        if text is not None:
            out.append(f'<text class="tick x" x="{x:.1f}" y="{height - bottom + 16}" text-anchor="middle">'
                       f'{escape(text)}</text>')
    out.append(f'<line class="axis" x1="{left}" x2="{width - right}" y1="{height - bottom}" y2="{height - bottom}"/>')
    out.append(f'<line class="axis" x1="{left}" x2="{left}" y1="{top}" y2="{height - bottom}"/>')
    out.append(f'<text class="alabel" x="{(left + width - right) / 2:.0f}" y="{height - 6}" text-anchor="middle">'
               f'{escape(x_label)}</text>')
    out.append(_y_title(y_label, top, height - bottom))
    return out


def _y_title(y_label, top, bottom_y):
    return (f'<text class="alabel" transform="translate(13 {(top + bottom_y) / 2:.0f}) rotate(-90)" '
            f'text-anchor="middle">{escape(y_label)}</text>')


def _legend(names, colours, x0, y0, width, extra=()):
    """Legend rows below the plot; `extra`: (label, svg of its swatch at (x, y)) entries."""
    out, x, y = [], x0, y0
    entries = [(n, f'<rect x="{{x}}" y="{{y}}" width="12" height="10" fill="{colours.colour(n)}"/>') for n in names]
    entries += list(extra)
    for n, swatch in entries:
        w = 22 + 7 * len(n)
        if x + w > width - 8 and x > x0:
            x, y = x0, y + 16
        out.append(swatch.format(x=x, y=y - 8, cx=x + 6, cy=y - 3, x2=x + 12) +
                   f'<text class="legend" x="{x + 16}" y="{y + 1}">{escape(n)}</text>')
        x += w
    return out, y


def _axes(xs_all, ys_all, *, log_x, log_y, y_zero, x_zero, width, height, right, top, bottom, y_fmt,
          x_integer=None, y_integer=None):
    """Both axes, the left margin sized to the y tick labels."""
    ys = _Axis(ys_all, log_y, y_zero, (top, height - bottom), flip=True, integer=y_integer)
    left = _left_margin([y_fmt(t) for t in ys.ticks])
    xs = _Axis(xs_all, log_x, x_zero, (left + 6, width - right - 6), integer=x_integer)
    return xs, ys, left


def line_chart(series, *, title, x_label, y_label, colours, log_x=False, log_y=False, width=470, height=310,
               y_zero=True, x_fmt=_fmt, y_fmt=_fmt, empty="no data", x_integer=None) -> str:
    """series: [{'name': str, 'points': [(x, y), ...], 'dashed': bool}]; points with y None are
    gaps.  A series of one point is drawn as a marker only.  An x axis of ints (k, l, rows) gets
    whole-number ticks (x_integer forces it either way)."""
    names = [s["name"] for s in series]
    right, top, bottom = 14, 30, 42
    xs_all = [x for s in series for x, y in s["points"] if y is not None]
    ys_all = [y for s in series for x, y in s["points"] if y is not None]
    xs, ys, left = _axes(xs_all, ys_all, log_x=log_x, log_y=log_y, y_zero=y_zero, x_zero=False, width=width,
                         height=height, right=right, top=top, bottom=bottom, y_fmt=y_fmt, x_integer=x_integer)
    legend, ly = _legend(names, colours, left, height + LEGEND_GAP, width)
    total_h = ly + 10
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


def pareto_front(points) -> list[int]:
    """Indices of the points (x, y) no other point beats: none has x and y both lower or equal
    and one of them lower (lower is better on both axes, loss and risk). Ties are all kept."""
    front = []
    for i, (x, y) in enumerate(points):
        if not any((a <= x and b <= y) and (a < x or b < y) for j, (a, b) in enumerate(points) if j != i):
            front.append(i)
    return front


def scatter_chart(series, *, title, x_label, y_label, colours, width=470, height=330, x_fmt=_fmt, y_fmt=_fmt,
                  y_max=None, empty="no data") -> str:
    """Risk against utility: one marker per release, series = [{'name', 'points': [(x, y, tip)]}];
    the Pareto front of all points (lower is better on both axes) is ringed and joined by a
    staircase, the boundary of what the releases shown can reach."""
    names = [s["name"] for s in series]
    right, top, bottom = 14, 30, 42
    flat = [(x, y, tip, s["name"]) for s in series for x, y, tip in s["points"] if x is not None and y is not None]
    xs_all, ys_all = [p[0] for p in flat], [p[1] for p in flat] + ([y_max] if y_max is not None else [])
    xs, ys, left = _axes(xs_all, ys_all, log_x=False, log_y=False, y_zero=True, x_zero=True, width=width,
                         height=height, right=right, top=top, bottom=bottom, y_fmt=y_fmt)
    front = set(pareto_front([(p[0], p[1]) for p in flat]))
    ring = ('<circle cx="{cx}" cy="{cy}" r="6" fill="none" stroke="#111" stroke-width="1.5"/>'
            '<line x1="{x}" x2="{x2}" y1="{cy}" y2="{cy}" stroke="#111" stroke-width="1.5"/>')
    legend, ly = _legend(names, colours, left, height + LEGEND_GAP, width, extra=[("Pareto front", ring)])
    total_h = ly + 10
    out = _frame(width, height, total_h, title, x_label, y_label, left, right, top, bottom, xs, ys, x_fmt, y_fmt)
    if not flat:
        out.append(f'<text class="empty" x="{width / 2:.0f}" y="{height / 2:.0f}" text-anchor="middle">{escape(empty)}</text>')
    steps = sorted({(p[0], p[1]) for i, p in enumerate(flat) if i in front})
    if len(steps) > 1:
        d = f"M{xs(steps[0][0]):.1f},{ys(steps[0][1]):.1f}"
        for (x0, y0), (x1, y1) in zip(steps, steps[1:]):
            d += f" L{xs(x1):.1f},{ys(y0):.1f} L{xs(x1):.1f},{ys(y1):.1f}"
        out.append(f'<path class="front" d="{d}"><title>Pareto front</title></path>')
    for i, (x, y, tip, name) in enumerate(flat):
        on = i in front
        if on:
            out.append(f'<circle class="front-ring" cx="{xs(x):.1f}" cy="{ys(y):.1f}" r="7"/>')
        out.append(_marker(colours.marker(name), xs(x), ys(y), colours.colour(name),
                           f"{tip}: {x_label} {x_fmt(x)}, {y_label} {y_fmt(y)}" + (" (on the Pareto front)" if on else ""),
                           cls="mark front" if on else "mark"))
    out += legend
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(categories, series, *, title, y_label, colours, log_y=False, width=470, height=310, y_fmt=_fmt,
              x_label="", baseline=None, empty="no data") -> str:
    """Grouped bars: one group per category, one bar per series ({'name', 'values'} aligned with
    categories; None leaves a gap).  baseline: optional {category: value} drawn as a dash.
    Category labels are slanted when they would not fit their band, and the bottom margin grows
    to hold them above the axis title."""
    names = [s["name"] for s in series]
    right, top = 14, 30
    labels = [str(c) if len(str(c)) <= 14 else str(c)[:13] + "…" for c in categories]
    vals = [v for s in series for v in s["values"] if v is not None]
    if baseline:
        vals += [v for v in baseline.values() if v is not None]
    n_cat, n_ser = max(len(categories), 1), max(len(series), 1)
    widest = max((_text_width(t) for t in labels), default=0)
    # the band depends on the left margin, which depends on the y ticks: size the y axis first
    probe = _Axis(vals, log_y, True, (0, 1), flip=True)
    left = _left_margin([y_fmt(t) for t in probe.ticks])
    band = (width - left - right) / n_cat
    slant = widest + 4 > band
    drop = (widest * math.sin(math.radians(35)) + TICK_H * math.cos(math.radians(35))) if slant else TICK_H
    bottom = int(10 + drop + (TITLE_H + 8 if x_label else 4))
    bottom = max(bottom, 42 if x_label else 30)
    legend, ly = _legend(names, colours, left, height + LEGEND_GAP, width)
    total_h = ly + 10
    ys = _Axis(vals, log_y, True, (top, height - bottom), flip=True)
    out = [f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {total_h}" width="{width}" '
           f'height="{total_h}" role="img" aria-label="{escape(title)}">', f"<title>{escape(title)}</title>",
           f'<text class="ptitle" x="{left}" y="18">{escape(title)}</text>']
    for t in ys.ticks:
        y = ys(t)
        out.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text class="tick y" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(y_fmt(t))}</text>')
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
        cx = left + ci * band + band / 2
        tip = f"<title>{escape(str(cat))}</title>"
        if slant:
            out.append(f'<text class="tick x" transform="translate({cx:.1f} {height - bottom + 12}) rotate(-35)" '
                       f'text-anchor="end">{escape(labels[ci])}{tip}</text>')
        else:
            out.append(f'<text class="tick x" x="{cx:.1f}" y="{height - bottom + 16}" text-anchor="middle">'
                       f'{escape(labels[ci])}{tip}</text>')
    out.append(f'<line class="axis" x1="{left}" x2="{width - right}" y1="{height - bottom}" y2="{height - bottom}"/>')
    out.append(f'<line class="axis" x1="{left}" x2="{left}" y1="{top}" y2="{height - bottom}"/>')
    if x_label:
        out.append(f'<text class="alabel" x="{(left + width - right) / 2:.0f}" y="{height - 6}" '
                   f'text-anchor="middle">{escape(x_label)}</text>')
    out.append(_y_title(y_label, top, height - bottom))
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
svg.plot .front { fill: none; stroke: #111; stroke-width: 1.5; stroke-dasharray: 4 3; }
svg.plot .front-ring { fill: none; stroke: #111; stroke-width: 1.5; }
"""
