"""Drawings of a planar mechanism at one configuration, and animations of a trajectory.

Each body is a link through the global points where its elements attach, r + A(phi) s
(seed 001, eq. 40): a bar when the points are collinear, a plate (their convex hull) otherwise,
a block when they coincide. Pairs go on top, each named: revolutes as pins (on a hatched support
when one side is the ground), translational and pin-in-slot pairs as a block on a guide line
(hatched when the ground guides), knife edges as a blade across their normal n, drivers in
orange, welds, distances, springs and bushings (a grey ring round a pin); other pairs as a
dotted line between their bodies.

With solvability flags (`mb.solvability`, seed 001 section 3) every pair gets a ring: solid
green when its reaction is unique, dashed red with the label "NAME (not unique)" when it is one
of infinitely many (method-dependent). Time histories live in `jaxmb.plotting`; `overview`
puts the drawing next to them.

Artists carry gids for programmatic checks: "body:NAME" (links), "com:NAME" (centres of mass),
"pin:PAIR" (circles centred on the joint), "support:PAIR" and "guide:PAIR" (ground hatching),
"slider:PAIR", "knife:PAIR", "driver:PAIR", "weld:PAIR", "link:PAIR" (distance), "pair:PAIR"
(other pairs), "force:NAME" (force elements), "flag:PAIR" (solvability rings), "label:NAME".
"""

import contextlib
import functools
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.artist  # noqa: E402
import matplotlib.axes  # noqa: E402
import matplotlib.figure  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.text  # noqa: E402
import numpy as np  # noqa: E402
import PIL.Image  # noqa: E402
from matplotlib import animation as mpl_animation  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.markers import MarkerStyle  # noqa: E402
from matplotlib.patches import Circle, FancyArrowPatch, Patch, Polygon  # noqa: E402
from matplotlib.ticker import FixedLocator  # noqa: E402
from numpy.typing import ArrayLike  # noqa: E402

from . import plotting  # noqa: E402
from .elements import (  # noqa: E402
    AbsoluteDriver,
    Bushing,
    Distance,
    Force,
    Gravity,
    KnifeEdge,
    PinInSlot,
    RelativeAngleDriver,
    Revolute,
    RotationalSpringDamper,
    SpringDamper,
    Torque,
    Translational,
    TranslationalDriver,
    Weld,
)

if TYPE_CHECKING:
    from ._analyses.reactions import Reactions
    from ._analyses.solvability import SolvabilityReport
    from ._formulations.trajectory import Trajectory
    from ._model.model import Model

__all__ = ["animate", "draw_mechanism", "frame_indices", "overview", "save_drawing"]

UNIQUE_COLOR = "#2b8a3e"
NOT_UNIQUE_COLOR = "#c92a2a"
NOT_UNIQUE = "not unique"
DRIVER_COLOR = "#d9480f"
FORCE_COLOR = "#1864ab"
MAX_FRAMES = 120
"""Default frame cap of `animate`: an 8 in wide GIF at 100 dpi stays under a few MB."""

# symbol sizes as fractions of the mechanism's size (`scale`)
_PIN = 0.018
_SUPPORT = 0.05
_BOX = (0.09, 0.05)
_BLADE = 0.075
_MOTOR = 0.055


# ----- geometry (numpy: drawings are not differentiated) -------------------------------------
def _rotation(phi):
    c, s = np.cos(phi), np.sin(phi)
    return np.array([[c, -s], [s, c]])


def _pose(q, body):
    if body.is_ground:
        return np.zeros(2), 0.0
    k = 3 * body.index
    return q[k : k + 2], float(q[k + 2])


def _point(q, body, s):
    """r + A(phi) s (seed 001, eq. 40); ground points are global."""
    r, phi = _pose(q, body)
    return r + _rotation(phi) @ np.asarray(s, float)


def _direction(q, body, v):
    """The global unit vector of the body-frame vector v."""
    v = np.asarray(v, float)
    return _rotation(_pose(q, body)[1]) @ (v / np.linalg.norm(v))


def _perp(v):
    return np.array([-v[1], v[0]])


def _anchors(element):
    """The (body, body-frame point) pairs where `element` attaches: (i, s_i) and (j, s_j), or
    (body, s); the centre (0, 0) of each of its bodies when it has no attachment points."""
    if hasattr(element, "s_i") and hasattr(element, "s_j"):
        return ((element.i, np.asarray(element.s_i)), (element.j, np.asarray(element.s_j)))
    if hasattr(element, "s") and hasattr(element, "body"):
        return ((element.body, np.asarray(element.s)),)
    return tuple((b, np.zeros(2)) for b in element.bodies())


def _body_points(model, q):
    """{body name: its centre, then the global points where its links attach}, and the ground's
    attachment points. Drivers, and the guide side of sliders (drawn as a guide line), are not
    links and add no points."""
    points = {name: [q[3 * k : 3 * k + 2]] for k, name in enumerate(model.body_names)}
    ground = []
    for element in (*model.pairs, *model.force_elements):
        if isinstance(element, (Gravity, RelativeAngleDriver, TranslationalDriver, AbsoluteDriver)):
            continue
        ends = _anchors(element)
        if isinstance(element, Translational):
            ends = ends[:1]
        elif isinstance(element, PinInSlot):
            ends = ends[1:]
        for body, s in ends:
            (ground if body.is_ground else points[body.name]).append(_point(q, body, s))
    return points, ground


def _all_points(model, q):
    points, ground = _body_points(model, q)
    return np.array([p for ps in points.values() for p in ps] + ground).reshape(-1, 2)


def mechanism_size(model, q):
    """Size of the mechanism: the diagonal of the box around all attachment points."""
    size = float(np.hypot(*np.ptp(_all_points(model, q), axis=0)))
    return size if size > 0 else 1.0


def _cross(a, b):
    return a[0] * b[1] - a[1] * b[0]


def _hull(points):
    """Convex hull, counter-clockwise (Andrew's monotone chain)."""
    pts = sorted({(round(float(x), 12), round(float(y), 12)) for x, y in points})

    def half(seq):
        out = []
        for p in seq:
            while (
                len(out) >= 2
                and _cross(np.subtract(out[-1], out[-2]), np.subtract(p, out[-2])) <= 0
            ):
                out.pop()
            out.append(p)
        return out[:-1]

    return np.array(half(pts) + half(pts[::-1]))


def _flags(model, solvable):
    """Pair name -> bool from a SolvabilityReport or a dict (None: no flags)."""
    if solvable is None:
        return None
    flags = solvable.solvable_dict() if hasattr(solvable, "solvable_dict") else dict(solvable)
    unknown = sorted(set(flags) - set(model.pair_names))
    if unknown:
        raise ValueError(
            f"draw_mechanism: solvable names unknown pairs {unknown}; the pairs "
            f"are {list(model.pair_names)}"
        )
    return {name: bool(v) for name, v in flags.items()}


# ----- primitives ----------------------------------------------------------------------------
def _draw_body(ax, name, pts, color, scale, block):
    """A bar through collinear points, else a plate (convex hull); a block when they coincide
    (`block`: False where a slider box is drawn there instead)."""
    pts = np.asarray(pts)
    spread = pts - pts.mean(axis=0)
    sv, vt = np.linalg.svd(spread, full_matrices=False)[1:]
    if sv[0] < 1e-9 * scale:
        if block:
            _box(
                ax,
                pts[0],
                np.array([1.0, 0.0]),
                _BOX[0] * scale,
                _BOX[1] * scale,
                color,
                2,
                f"body:{name}",
            )
        return
    if sv[1] < 1e-6 * sv[0]:
        t = spread @ vt[0]
        xy = pts.mean(axis=0) + np.outer([t.min(), t.max()], vt[0])
        ax.plot(
            *xy.T,
            color=color,
            lw=7,
            alpha=0.85,
            solid_capstyle="round",
            zorder=2,
            gid=f"body:{name}",
        )
        return
    plate = Polygon(
        _hull(pts),
        closed=True,
        facecolor=color,
        alpha=0.35,
        edgecolor=color,
        lw=2.5,
        joinstyle="round",
        zorder=2,
    )
    plate.set_gid(f"body:{name}")
    ax.add_patch(plate)


def _xy(p) -> tuple[float, float]:
    """A point as matplotlib's patches take it."""
    return float(p[0]), float(p[1])


def _box(ax, centre, axis, w, h, color, zorder, gid):
    normal = _perp(axis)
    corners = [
        centre + a * w / 2 * axis + n * h / 2 * normal
        for a, n in ((-1, -1), (1, -1), (1, 1), (-1, 1))
    ]
    patch = Polygon(corners, closed=True, facecolor=color, edgecolor="black", lw=1.3, zorder=zorder)
    patch.set_gid(gid)
    ax.add_patch(patch)


def _hatch(ax, start, end, side, depth, gid):
    """Ground: a line start-end with a hatched strip of `depth` on the side `side` (unit)."""
    strip = Polygon(
        [start, end, end + depth * side, start + depth * side],
        closed=True,
        fill=False,
        hatch="////",
        lw=0,
        edgecolor="0.35",
        zorder=1,
    )
    strip.set_gid(gid)
    ax.add_patch(strip)
    ax.plot(*np.array([start, end]).T, color="0.2", lw=1.5, zorder=1)


def _curved_arrow(ax, centre, radius, color, gid, start=200.0, end=340.0):
    """An arc arrow about `centre`; returns the middle of the arc."""
    a = np.radians([start, end, (start + end) / 2])
    p0, p1, mid = (centre + radius * np.array([np.cos(x), np.sin(x)]) for x in a)
    arrow = FancyArrowPatch(
        p0,
        p1,
        connectionstyle=f"arc3,rad={np.tan((a[1] - a[0]) / 4):.4f}",
        arrowstyle="-|>",
        mutation_scale=11,
        color=color,
        lw=1.8,
        zorder=6,
    )
    arrow.set_gid(gid)
    ax.add_patch(arrow)
    return mid


def _arrow(ax, p0, p1, color, gid, style="-|>", ls="-"):
    arrow = FancyArrowPatch(
        p0, p1, arrowstyle=style, mutation_scale=11, color=color, lw=1.8, ls=ls, zorder=6
    )
    arrow.set_gid(gid)
    ax.add_patch(arrow)


def _zigzag(p, r, scale, turns=6):
    d = r - p
    length = np.linalg.norm(d)
    if length == 0:
        return np.array([p, r])
    u, n = d / length, _perp(d / length)
    ts = np.linspace(0.15 * length, 0.85 * length, 2 * turns + 1)
    amp = 0.015 * scale * np.array([0] + [(-1) ** k for k in range(1, 2 * turns)] + [0])
    return np.vstack([p, p + np.outer(ts, u) + np.outer(amp, n), r])


# ----- pairs: each draws its symbol and returns (legend kind, anchor point of its label) -----
def _draw_revolute(ax, pair, q, scale):
    (bi, pi), (bj, pj) = ((b, _point(q, b, s)) for b, s in _anchors(pair))
    p = pj if bi.is_ground else pi
    ground = bi.is_ground or bj.is_ground
    if ground:
        h = _SUPPORT * scale
        ax.add_patch(
            Polygon(
                [p, p + [-0.6 * h, -h], p + [0.6 * h, -h]],
                closed=True,
                facecolor="0.85",
                edgecolor="0.2",
                lw=1.3,
                zorder=1,
            )
        )
        _hatch(
            ax,
            p + [-0.9 * h, -h],
            p + [0.9 * h, -h],
            np.array([0.0, -1.0]),
            0.35 * h,
            f"support:{pair.name}",
        )
    pin = Circle(_xy(p), _PIN * scale, facecolor="white", edgecolor="black", lw=1.5, zorder=5)
    pin.set_gid(f"pin:{pair.name}")
    ax.add_patch(pin)
    return ("ground pivot" if ground else "revolute"), p


def _draw_slider(ax, pair, q, scale):
    """Guide line through the guiding body's point along the sliding axis, a box at the moving
    point. Translational: body j guides, the axis is perpendicular to v; pin-in-slot: body i
    guides along a_i."""
    if isinstance(pair, Translational):
        guide, base, p = pair.j, _point(q, pair.j, pair.s_j), _point(q, pair.i, pair.s_i)
        axis = _direction(q, pair.j, _perp(np.asarray(pair.v)))
    else:
        guide, base, p = pair.i, _point(q, pair.i, pair.s_i), _point(q, pair.j, pair.s_j)
        axis = _direction(q, pair.i, np.asarray(pair.a_i))
    w, h = _BOX[0] * scale, _BOX[1] * scale
    along = (p - base) @ axis
    foot = base + along * axis  # the moving point's foot on the guide line
    start, end = foot - (max(along, 0.0) + w) * axis, foot + (max(-along, 0.0) + w) * axis
    ax.plot(*np.array([start, end]).T, color="0.2", lw=1.2, ls="-.", zorder=1.5)
    if guide.is_ground:
        side = -_perp(axis) if _perp(axis)[1] >= 0 else _perp(axis)
        offset = (h / 2 + (p - foot) @ side) * side
        _hatch(ax, start + offset, end + offset, side, 0.35 * h, f"guide:{pair.name}")
    _box(ax, p, axis, w, h, "#e9ecef", 4, f"slider:{pair.name}")
    return "slider on guide", p


def _draw_knife(ax, pair, q, scale):
    p = _point(q, pair.body, pair.s)
    blade = _direction(q, pair.body, _perp(np.asarray(pair.n))) * _BLADE * scale / 2
    ax.plot(
        *np.array([p - blade, p + blade]).T,
        color="0.1",
        lw=5.5,
        solid_capstyle="round",
        zorder=4,
        gid=f"knife:{pair.name}",
    )
    return "knife edge", p


def _draw_driver(ax, model, pair, q, scale):
    gid = f"driver:{pair.name}"
    if isinstance(pair, RelativeAngleDriver):
        pin = next(
            (p for p in model.pairs if isinstance(p, Revolute) and {p.i, p.j} == {pair.i, pair.j}),
            None,
        )
        centre = _pose(q, pair.j)[0] if pin is None else _pair_point(pin, q)
        return "driver", _curved_arrow(ax, centre, _MOTOR * scale, DRIVER_COLOR, gid, 30, 150)
    if isinstance(pair, TranslationalDriver):
        pi, pj = _point(q, pair.i, pair.s_i), _point(q, pair.j, pair.s_j)
        d = pj - pi
        shift = 0.03 * scale * _perp(d / np.linalg.norm(d)) if np.linalg.norm(d) > 0 else 0
        _arrow(ax, pi + shift, pj + shift, DRIVER_COLOR, gid, "<|-|>", "--")
        return "driver", pi + 0.25 * d + shift
    r = _pose(q, pair.body)[0]
    if pair.coordinate == 2:
        return "driver", _curved_arrow(ax, r, _MOTOR * scale, DRIVER_COLOR, gid)
    tip = r + np.eye(2)[pair.coordinate] * 0.08 * scale
    _arrow(ax, r, tip, DRIVER_COLOR, gid)
    return "driver", tip


def _pair_point(pair, q):
    """The point a pair is drawn at: its point on a moving body (the first one)."""
    ends = [(b, _point(q, b, s)) for b, s in _anchors(pair)]
    return next((p for b, p in ends if not b.is_ground), ends[0][1])


def _draw_pair(ax, model, pair, q, scale):
    if isinstance(pair, Revolute):
        return _draw_revolute(ax, pair, q, scale)
    if isinstance(pair, (Translational, PinInSlot)):
        return _draw_slider(ax, pair, q, scale)
    if isinstance(pair, KnifeEdge):
        return _draw_knife(ax, pair, q, scale)
    if isinstance(pair, (RelativeAngleDriver, TranslationalDriver, AbsoluteDriver)):
        return _draw_driver(ax, model, pair, q, scale)
    p = _pair_point(pair, q)
    if isinstance(pair, Weld):
        ax.plot(*p, marker="s", ms=7, color="black", zorder=5, gid=f"weld:{pair.name}")
        return "weld", p
    xy = np.array([_point(q, b, s) for b, s in _anchors(pair)])
    if isinstance(pair, Distance):
        ax.plot(
            *xy.T,
            color="0.25",
            lw=1.5,
            marker="o",
            ms=4,
            mfc="white",
            zorder=4,
            gid=f"link:{pair.name}",
        )
        return "distance", xy.mean(axis=0)
    ax.plot(*xy.T, color="0.4", lw=1.0, ls=":", zorder=3, gid=f"pair:{pair.name}")
    return "other pair", xy.mean(axis=0)


def _draw_bushing(ax, element, q, scale):
    """A rubber ring (grey annulus) around a pin at P_i, a zigzag to P_j when they differ."""
    pi, pj = _point(q, element.i, element.s_i), _point(q, element.j, element.s_j)
    gid = f"force:{element.name}"
    ring = Circle(
        _xy(pi), 2.1 * _PIN * scale, facecolor="0.6", edgecolor="0.25", lw=1.2, zorder=4.5
    )
    ring.set_gid(gid)
    ax.add_patch(ring)
    ax.add_patch(
        Circle(_xy(pi), _PIN * scale, facecolor="white", edgecolor="black", lw=1.2, zorder=4.6)
    )
    if np.linalg.norm(pj - pi) > 1e-9 * scale:
        ax.plot(*_zigzag(pi, pj, scale).T, color="0.3", lw=1.3, zorder=3, gid=f"{gid}:link")
    return "bushing", pi


def _draw_force(ax, element, q, t, scale):
    """Draw a force element; returns (legend kind, label anchor), or None (gravity)."""
    gid = f"force:{element.name}"
    if isinstance(element, SpringDamper):
        pi, pj = _point(q, element.i, element.s_i), _point(q, element.j, element.s_j)
        ax.plot(*_zigzag(pi, pj, scale).T, color="0.3", lw=1.3, zorder=3, gid=gid)
        return "spring-damper", (pi + pj) / 2
    if isinstance(element, Bushing):
        return _draw_bushing(ax, element, q, scale)
    if isinstance(element, RotationalSpringDamper):
        centre = _pose(q, element.j)[0]
        return "spring-damper", _curved_arrow(ax, centre, 0.04 * scale, "0.3", gid, 30, 150)
    if isinstance(element, Force):
        p = _point(q, element.body, element.s)
        f = np.asarray(element.f(t), float)
        tip = p + (f / np.linalg.norm(f) * 0.1 * scale if np.linalg.norm(f) > 0 else 0)
        _arrow(ax, p, tip, FORCE_COLOR, gid)
        return "applied force", tip
    if isinstance(element, Torque):
        centre = _pose(q, element.body)[0]
        return "applied force", _curved_arrow(ax, centre, 0.04 * scale, FORCE_COLOR, gid, 20, 160)
    return None  # gravity: an entry of the legend


# ----- labels and flags ----------------------------------------------------------------------
def _stack_index(seen, p, scale):
    """How many earlier rings sit at the point p; registers p."""
    key = tuple(np.round(np.asarray(p) / (1e-3 * scale)).astype(int))
    seen[key] = seen.get(key, -1) + 1
    return seen[key]


def _ring(ax, name, p, flag, k, scale):
    """Solvability ring around a pair's symbol (the k-th at that point a bit larger): solid
    green when the reaction is unique, dashed red when it is not."""
    ring = Circle(
        p,
        (1.8 + 0.7 * k) * _PIN * scale,
        fill=False,
        lw=1.5,
        zorder=5.5,
        edgecolor=UNIQUE_COLOR if flag else NOT_UNIQUE_COLOR,
        ls="-" if flag else "--",
    )
    ring.set_gid(f"flag:{name}")
    ax.add_patch(ring)


def _label_style(name, flag, color):
    """(text, style): a pair flagged solvable is green bold, a non-solvable one red italic
    "NAME (not unique)"; unflagged names in `color`."""
    if flag is None:
        return name, dict(color=color)
    if flag:
        return name, dict(color=UNIQUE_COLOR, fontweight="bold")
    return f"{name} ({NOT_UNIQUE})", dict(color=NOT_UNIQUE_COLOR, fontstyle="italic")


_DIRECTIONS = np.array([[np.cos(a), np.sin(a)] for a in np.arange(8) * np.pi / 4])
_LABEL_PAD = 2.0  # px of white around a label's text (its bbox's pad)
_SAMPLE_PX = 5.0  # spacing of the points sampled along the symbols, in pixels


def _sample_polyline(xy, step):
    """Points every `step` along the polyline xy (k, 2), both ends included."""
    seg = np.diff(xy, axis=0)
    lengths = np.hypot(seg[:, 0], seg[:, 1])
    counts = np.maximum(np.ceil(lengths / step).astype(int), 1)
    parts = [xy[i] + np.outer(np.arange(c) / c, seg[i]) for i, c in enumerate(counts)]
    return np.concatenate([*parts, xy[-1:]]) if parts else xy


def _anchor(lo, hi, point, low_side, high_side):
    """(coordinate, alignment) of a label's text along one axis: on the side of its box
    [lo, hi] that faces `point` (where a leader starts), or centred when the box spans it."""
    if lo >= point:
        return lo + _LABEL_PAD, low_side
    if hi <= point:
        return hi - _LABEL_PAD, high_side
    return (lo + hi) / 2, "center"


def _symbol_points(artists, dpi):
    """Points (display coordinates) along every line and patch outline drawn, with the half
    width each covers there (line width and marker size), px: (points (k, 2), radii (k,))."""
    points, radii = [], []
    for artist in artists:
        if not artist.get_visible():
            continue
        if isinstance(artist, Line2D):
            xy = artist.get_transform().transform(np.asarray(artist.get_xydata(), float))
            xy = xy[np.all(np.isfinite(xy), axis=1)]
            if len(xy) == 0:
                continue
            half = artist.get_linewidth() * dpi / 144.0
            if artist.get_linestyle() not in ("None", "", " ") and len(xy) > 1:
                sampled = _sample_polyline(xy, _SAMPLE_PX)
                points.append(sampled)
                radii.append(np.full(len(sampled), max(half, 1.5)))
            if artist.get_marker() not in ("None", "", " ", None):
                points.append(xy)
                radii.append(np.full(len(xy), artist.get_markersize() * dpi / 144.0))
        elif hasattr(artist, "get_path") and hasattr(artist, "get_linewidth"):
            path = artist.get_transform().transform_path(artist.get_path())
            half = max(artist.get_linewidth() * dpi / 144.0, 1.0)
            for polygon in path.to_polygons(closed_only=False):
                if len(polygon):
                    sampled = _sample_polyline(np.asarray(polygon, float), _SAMPLE_PX)
                    points.append(sampled)
                    radii.append(np.full(len(sampled), half))
    if not points:
        return np.zeros((0, 2)), np.zeros(0)
    return np.concatenate(points), np.concatenate(radii)


class _Labels(matplotlib.artist.Artist):
    """The names of a drawing's pairs and force elements, placed when the drawing is drawn, in
    display coordinates (so they keep clear of each other whatever the figure's size, limits
    and dpi): each label goes next to its point, or farther out on a leader line, in the
    one of 8 directions (above and below also shifted to either side, beside also up or down)
    where its text box covers the fewest symbols (points sampled along every line and outline
    drawn, and the leaders placed before), overlaps no label placed before it, stays inside
    the axes and its leader crosses no label; ties go away from the mechanism's centre. Long
    labels are placed first."""

    def __init__(self, ax, labels, symbols, centre, ring):
        super().__init__()
        self._ax = ax
        self.labels = labels  # [(Annotation, anchor point in data coordinates)]
        self.symbols = symbols  # the artists the labels keep clear of
        self.centre = np.asarray(centre, float)
        self.ring = ring  # radius (data units) of the rings around a pair's point
        self.set_zorder(6.95)  # before the labels (7): they are drawn where placed
        self.set_in_layout(False)
        self.set_gid("labels")

    def draw(self, renderer):
        self.place(renderer)

    def place(self, renderer):
        ax = self._ax
        if not self.labels:
            return
        to_px = ax.transData.transform
        anchors = to_px(np.array([p for _, p in self.labels], float))
        ring = abs(to_px(self.labels[0][1] + [self.ring, 0.0])[0] - anchors[0][0])
        ring = max(ring, 4.0)
        points, radii = _symbol_points(self.symbols, ax.figure.dpi)
        limits = ax.bbox.extents + [3.0, 3.0, -3.0, -3.0]  # a label keeps 3 px inside
        out_all = anchors - to_px(self.centre)
        placed = []  # boxes (x0, y0, x1, y1) in px
        sizes = []
        for label, _ in self.labels:
            extent = matplotlib.text.Text.get_window_extent(label, renderer)
            sizes.append((extent.width + 2 * _LABEL_PAD, extent.height + 2 * _LABEL_PAD))
        order = sorted(range(len(self.labels)), key=lambda k: -sizes[k][0])
        reach = np.array(
            [1.25 * ring + 2.0, 2.2 * ring + 14.0, 3.0 * ring + 30.0, 3.8 * ring + 48.0]
        )
        # an option: the text's anchor `reach` out in direction d, the text on the far side
        # of it (left-aligned to the right, ...); above or below the point it may also run
        # to either side, beside it also sit above or below (ha, va: offsets in box sizes)
        options = []
        for k, r in enumerate(reach):
            for d in _DIRECTIONS:
                ha = 0.0 if d[0] > 0.3 else -1.0 if d[0] < -0.3 else -0.5
                va = 0.0 if d[1] > 0.3 else -1.0 if d[1] < -0.3 else -0.5
                options.append((d, r, k, ha, va, False))
                if ha == -0.5:
                    options += [(d, r, k, -0.1, va, True), (d, r, k, -0.9, va, True)]
                if va == -0.5:
                    options += [(d, r, k, ha, -0.15, True), (d, r, k, ha, -0.85, True)]
        dirs = np.array([o[0] for o in options])
        reaches = np.array([o[1] for o in options])
        far = np.array([o[2] for o in options], float)
        ha = np.array([o[3] for o in options])
        va = np.array([o[4] for o in options])
        shifted = np.array([o[5] for o in options], float)
        for k in order:
            label, _ = self.labels[k]
            w, h = sizes[k]
            p = anchors[k]
            out = out_all[k]
            norm = np.hypot(*out)
            out = out / norm if norm > 1e-9 else np.array([0.0, 1.0])
            x0 = p[0] + reaches * dirs[:, 0] + ha * w
            y0 = p[1] + reaches * dirs[:, 1] + va * h
            boxes = np.stack([x0, y0, x0 + w, y0 + h], axis=1)
            # symbols covered: points (with their half widths) inside a box
            inside = (
                (points[None, :, 0] > boxes[:, None, 0] - radii)
                & (points[None, :, 0] < boxes[:, None, 2] + radii)
                & (points[None, :, 1] > boxes[:, None, 1] - radii)
                & (points[None, :, 1] < boxes[:, None, 3] + radii)
            )
            covered = inside.sum(axis=1)
            # a leader runs from the point to the nearest point of its box: samples along it
            ends = np.clip(p, boxes[:, :2], boxes[:, 2:])
            leaders = p + np.linspace(0.2, 0.95, 6)[None, :, None] * (ends - p)[:, None, :]
            overlap = np.zeros(len(options))
            crossed = np.zeros(len(options))
            for b in placed:
                dx = np.minimum(boxes[:, 2], b[2]) - np.maximum(boxes[:, 0], b[0])
                dy = np.minimum(boxes[:, 3], b[3]) - np.maximum(boxes[:, 1], b[1])
                overlap += np.clip(dx + 4.0, 0, None) * np.clip(dy + 4.0, 0, None)
                crossed += np.sum(
                    (leaders[..., 0] > b[0])
                    & (leaders[..., 0] < b[2])
                    & (leaders[..., 1] > b[1])
                    & (leaders[..., 1] < b[3]),
                    axis=1,
                )
            outside = (
                np.clip(limits[0] - boxes[:, 0], 0, None)
                + np.clip(boxes[:, 2] - limits[2], 0, None)
            ) * h + (
                np.clip(limits[1] - boxes[:, 1], 0, None)
                + np.clip(boxes[:, 3] - limits[3], 0, None)
            ) * w
            score = (
                100.0 * overlap / (w * h)
                + 3000.0 * outside / (w * h)
                + covered
                + 4.0 * crossed * (far > 0)
                + 1.5 * far
                - 1.0 * (dirs @ out)
                + 0.3 * shifted
            )
            best = int(np.argmin(score))
            x0, y0, x1, y1 = box = boxes[best]
            placed.append(box)
            if far[best] > 0:  # later labels keep clear of this leader too
                points = np.concatenate([points, leaders[best]])
                radii = np.concatenate([radii, np.full(len(leaders[best]), 1.5)])
            # the text is anchored on the side of its box that faces the point (where a
            # leader starts)
            x, halign = _anchor(x0, x1, p[0], "left", "right")
            y, valign = _anchor(y0, y1, p[1], "bottom", "top")
            label.xyann = tuple(ax.transData.inverted().transform((x, y)))
            label.set_horizontalalignment(halign)
            label.set_verticalalignment(valign)
            if label.arrow_patch is not None:
                label.arrow_patch.set_visible(far[best] > 0)
                label.arrow_patch.shrinkB = ring * 72.0 / ax.figure.dpi


def _place_labels(ax, requests, symbols, centre, scale):
    """One annotation per (name, point, flag, color) request, placed by a `_Labels` artist
    when the figure is drawn; returns that artist."""
    labels = []
    # patchA=None: the leader starts at the text's anchor (its edge facing the point)
    # instead of being clipped to the text box (slow: design measurement D7); it ends at the
    # ring around the point (shrinkB, set in `_Labels.place`)
    for name, p, flag, color in requests:
        text, style = _label_style(name, flag, color)
        leader = dict(arrowstyle="-", color="0.55", lw=0.7, shrinkA=0, shrinkB=0, patchA=None)
        label = ax.annotate(
            text,
            xy=p,
            xytext=p,
            textcoords="data",
            fontsize=9,
            zorder=7,
            arrowprops=leader,
            annotation_clip=False,
            bbox=dict(
                boxstyle=f"round,pad={_LABEL_PAD / 9:.3f}", fc="white", ec="none", alpha=0.75
            ),
            **style,
        )
        label.set_gid(f"label:{name}")
        labels.append((label, np.asarray(p, float)))
    layout = _Labels(ax, labels, symbols, centre, 1.8 * _PIN * scale)
    ax.add_artist(layout)
    return layout


@functools.cache
def _com_marker():
    """The centre-of-mass symbol, a mathtext marker typeset once (each typesetting costs
    milliseconds, seven times per animation frame of the robot: design measurement D7)."""
    return MarkerStyle("$\\oplus$")


# ----- the drawing ---------------------------------------------------------------------------
def draw_mechanism(
    model: "Model",
    q: ArrayLike,
    ax: matplotlib.axes.Axes | None = None,
    *,
    t: float = 0.0,
    labels: bool = True,
    solvable: "SolvabilityReport | Mapping[str, bool] | None" = None,
    scale: float | None = None,
    legend: bool | matplotlib.axes.Axes = True,
    frame: bool = True,
) -> matplotlib.axes.Axes:
    """Draw `model` at the configuration `q` (time `t`, for applied forces).

    **Arguments:**
    - `model`: a built `Model`.
    - `q`: the configuration (n,).
    - `ax`: the matplotlib axes to draw in; None: a new figure.
    - `t`: time (s), for applied forces that depend on it.
    - `labels`: name every pair and force element next to its symbol (or on a leader line
      where the space next to it is taken).
    - `solvable`: a `SolvabilityReport` or a dict pair name -> bool (e.g.
      `mb.solvability(model, q)`): unique reactions get a solid green ring and label,
      non-unique ones a dashed red ring and "NAME (not unique)"; None: no rings.
    - `scale`: the length (m) symbols are proportional to (default: the diagonal of the box
      around all attachment points; pass one value to keep the frames of an animation alike).
    - `legend`: a legend of the symbols: True right of the axes, or an axes to hold it (as
      `overview` gives it one below the drawing); False: none.
    - `frame`: also set up the axes (equal aspect, limits around the drawing, axis labels,
      grid); False leaves the axes as they are, as `animate` does for every frame.

    **Returns:** the axes.

    ```python
    ax = draw_mechanism(model, model.q0, solvable=mb.solvability(model, model.q0))
    ax.figure.savefig("mechanism.png")
    ```
    """
    q = np.asarray(q, float)
    if q.shape != (model.n,):
        raise ValueError(f"draw_mechanism: q must have shape ({model.n},), got {q.shape}")
    flags = _flags(model, solvable)
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 5.5))
    scale = mechanism_size(model, q) if scale is None else float(scale)
    before = set(ax.get_children())
    points, _ = _body_points(model, q)
    sliders = {p.i.name for p in model.pairs if isinstance(p, Translational)}
    sliders |= {p.j.name for p in model.pairs if isinstance(p, PinInSlot)}
    for k, name in enumerate(model.body_names):
        _draw_body(
            ax, name, points[name], plt.get_cmap("tab10")(k % 10), scale, name not in sliders
        )
        ax.plot(
            *points[name][0], marker=_com_marker(), ms=9, color="black", zorder=6, gid=f"com:{name}"
        )
    kinds, requests, rings = set(), [], {}
    for pair in model.pairs:
        kind, p = _draw_pair(ax, model, pair, q, scale)
        kinds.add(kind)
        flag = None if flags is None else flags.get(pair.name)
        if flag is not None:
            _ring(ax, pair.name, p, flag, _stack_index(rings, p, scale), scale)
        requests.append((pair.name, p, flag, DRIVER_COLOR if kind == "driver" else "black"))
    for element in model.force_elements:
        drawn = _draw_force(ax, element, q, t, scale)
        if drawn is not None:
            kinds.add(drawn[0])
            requests.append((element.name, drawn[1], None, "0.3"))
    if frame:
        ax.set_aspect("equal", adjustable="box")
        ax.margins(0.1)
        ax.autoscale_view()
        _widen(ax)
        ax.set_xlabel("x (m)")
        ax.set_ylabel("y (m)")
        ax.grid(True, color="0.92", lw=0.6, zorder=0)
    if labels:
        symbols = [
            a for a in ax.get_children() if a not in before and isinstance(a, (Line2D, Patch))
        ]
        _place_labels(ax, requests, symbols, _all_points(model, q).mean(axis=0), scale)
    if legend is not False and legend is not None:
        _legend(ax, model, kinds, flags is not None, legend)
    return ax


_LEGEND = {
    "revolute": dict(marker="o", ls="", mfc="white", mec="black", ms=7),
    "ground pivot": dict(marker="^", ls="", mfc="0.85", mec="0.2", ms=8),
    "slider on guide": dict(marker="s", ls="-.", color="0.2", mfc="#e9ecef", mec="black", ms=8),
    "knife edge": dict(ls="-", color="0.1", lw=4.5, solid_capstyle="round"),
    "driver": dict(ls="--", color=DRIVER_COLOR, lw=1.8),
    "weld": dict(marker="s", ls="", color="black", ms=6),
    "distance": dict(marker="o", ls="-", color="0.25", mfc="white", ms=4),
    "spring-damper": dict(ls="-", color="0.3", lw=1.3, marker="$\\sim$", ms=10),
    "bushing": dict(marker="o", ls="", mfc="0.6", mec="0.25", ms=10),
    "applied force": dict(ls="-", color=FORCE_COLOR, lw=2.0),
    "other pair": dict(ls=":", color="0.4"),
}


def _legend(ax, model, kinds, with_flags, where: bool | matplotlib.axes.Axes = True):
    handles = [Line2D([], [], label=k, **_LEGEND[k]) for k in _LEGEND if k in kinds]
    for g in (np.asarray(e.g, float) for e in model.force_elements if isinstance(e, Gravity)):
        angle = np.degrees(np.arctan2(g[1], g[0])) - 90.0  # the marker (3, 0, 0) points up
        handles.append(
            Line2D(
                [],
                [],
                ls="",
                marker=(3, 0, angle),
                color="0.3",
                ms=8,
                label=f"gravity g = ({g[0]:g}, {g[1]:g}) m/s²",
            )
        )
    if with_flags:
        handles += [
            Line2D(
                [],
                [],
                ls="-",
                marker="o",
                mfc="none",
                color=UNIQUE_COLOR,
                ms=9,
                label="reaction unique",
            ),
            Line2D(
                [],
                [],
                ls="--",
                marker="o",
                mfc="none",
                color=NOT_UNIQUE_COLOR,
                ms=9,
                label=f"reaction {NOT_UNIQUE} ({plotting.METHOD_DEPENDENT})",
            ),
        ]
    handles.append(
        Line2D([], [], ls="", marker="$\\oplus$", color="black", ms=9, label="centre of mass")
    )
    if isinstance(where, matplotlib.axes.Axes):
        where.legend(
            handles=handles,
            loc="center",
            ncol=3,
            fontsize="small",
            frameon=False,
            borderaxespad=0.0,
        )
    else:
        ax.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            fontsize="small",
            frameon=False,
            borderaxespad=0.0,
        )


_NARROWEST = 0.35
"""The least ratio of the shorter side of a drawing's axes to the longer (a hanging pendulum
would otherwise get a sliver of axes, its tick labels run together)."""


def _widen(ax):
    """Widen the shorter of ax's data ranges to `_NARROWEST` times the longer, centred."""
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    least = _NARROWEST * max(x1 - x0, y1 - y0)
    if x1 - x0 < least:
        ax.set_xlim((x0 + x1 - least) / 2, (x0 + x1 + least) / 2)
    if y1 - y0 < least:
        ax.set_ylim((y0 + y1 - least) / 2, (y0 + y1 + least) / 2)


def _extent(model, q, scale):
    """(width, height) of the box around the drawing of `model` at q, with its margins (the
    shorter at least `_NARROWEST` times the longer, as `_widen` makes the axes)."""
    xy = _all_points(model, q)
    width, height = np.ptp(xy, axis=0) + 0.3 * scale
    least = _NARROWEST * max(width, height)
    return float(max(width, least)), float(max(height, least))


def save_drawing(
    model: "Model",
    q: ArrayLike,
    path: str | os.PathLike,
    *,
    t: float = 0.0,
    solvable: "SolvabilityReport | Mapping[str, bool] | None" = None,
    title: str | None = None,
    dpi: float = 130,
    **kwargs: Any,
) -> str | os.PathLike:
    """`draw_mechanism` into a new figure saved to `path`: its axes 7 in along the longer side
    of the drawing, the legend beside them, margins trimmed.

    **Arguments:**
    - `model`, `q`, `t`, `solvable`: as `draw_mechanism`.
    - `path`: the image file (any format matplotlib writes: .png, .pdf, .svg, ...).
    - `title`: above the drawing; None: none.
    - `dpi`: pixels per inch of a raster image.
    - `**kwargs`: further keywords of `draw_mechanism` (`labels`, `scale`, `legend`).

    **Returns:** `path`."""
    width, height = _extent(
        model, np.asarray(q, float), mechanism_size(model, np.asarray(q, float))
    )
    side = 7.0 / max(width, height)
    fig, ax = plt.subplots(figsize=(max(width * side, 3.0) + 3.5, max(height * side, 3.0) + 1.0))
    draw_mechanism(model, q, ax, t=t, solvable=solvable, **kwargs)
    if title:
        ax.set_title(title)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return path


def overview(
    model: "Model",
    traj: "Trajectory",
    rx: "Reactions",
    solvable: "SolvabilityReport | Mapping[str, bool] | None",
    path: str | os.PathLike | None = None,
) -> matplotlib.figure.Figure:
    """One figure: the mechanism at traj.q[0] with its solvability flags, the paths of the body
    centres, and the reactions on each pair's first moving body over time (non-unique ones
    dashed and labelled method-dependent, every curve in its own style:
    `jaxmb.plotting.pair_styles`). The drawing's panel is shaped like the drawing, so it fills
    it: across the figure above the three time panels when the drawing is wide, else beside
    the paths above the two reaction panels. `jaxmb plot` draws this figure.

    **Arguments:**
    - `model`: a built `Model`.
    - `traj`: its `Trajectory` (or anything with `ts` and `q`).
    - `rx`: the `Reactions` along `traj` (`mb.reactions(model, traj)`).
    - `solvable`: the flags of the rings and labels, as `draw_mechanism` takes them.
    - `path`: an image file to save the figure to (then closed); None: not saved.

    **Returns:** the figure."""
    ts, qs = np.asarray(traj.ts), np.asarray(traj.q)
    width, height = _extent(model, qs[0], mechanism_size(model, qs[0]))
    rows = -(-len(model.pair_names) // 3)  # of the reactions' legend
    bottom = 0.3 + 0.2 * rows  # in, for that legend
    if height / width < 0.5:  # wide: the drawing across the figure
        top = float(np.clip(13.0 * height / width, 1.6, 5.0))
        fig = plt.figure(figsize=(15.0, top + 0.9 + 4.2 + bottom + 0.6))
        grid = fig.add_gridspec(3, 3, height_ratios=(top, 0.7, 4.2))
        cells = grid[0, :], grid[1, :], grid[2, 0], grid[2, 1], grid[2, 2]
    else:
        top = float(np.clip(6.5 * height / width, 3.0, 7.0))
        fig = plt.figure(figsize=(14.5, top + 0.9 + 4.2 + bottom + 0.6))
        grid = fig.add_gridspec(3, 2, height_ratios=(top, 0.7, 4.2))
        cells = grid[0, 0], grid[1, 0], grid[0:2, 1], grid[2, 0], grid[2, 1]
    mechanism, legend, paths_cell, forces_cell, torques_cell = (fig.add_subplot(c) for c in cells)
    legend.set_axis_off()
    draw_mechanism(model, qs[0], mechanism, t=float(ts[0]), solvable=solvable, legend=legend)
    mechanism.set_title(f"the mechanism at t = {ts[0]:g} s")
    paths = {f"{name} centre": qs[:, 3 * k : 3 * k + 2] for k, name in enumerate(model.body_names)}
    plotting.plot_paths(
        paths_cell, paths, title=f"paths of the centres of mass, t = {ts[0]:g} to {ts[-1]:g} s"
    )
    flags = _flags(model, solvable)
    plotting.plot_pair_reactions(forces_cell, ts, rx, model, flags, legend=False)
    plotting.plot_pair_reactions(torques_cell, ts, rx, model, flags, torque=True, legend=False)
    fig.legend(
        *forces_cell.get_legend_handles_labels(),
        loc="lower center",
        ncol=3,
        fontsize="small",
        frameon=False,
        title="reactions on each pair's first moving body",
    )
    fig.tight_layout(rect=(0.0, bottom / fig.get_figheight(), 1.0, 1.0))
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


# ----- animation -----------------------------------------------------------------------------
def _animation_axes(ax, model, q, scale, xlim, ylim):
    """Set ax up once for every frame (limits, fixed ticks, axis labels, grid, an empty
    title), so that a frame replaces only the mechanism's artists; returns the set of artists
    a frame keeps."""
    draw_mechanism(model, q, ax, labels=False, scale=scale, legend=False)  # the axis setup
    for artist in [*ax.lines, *ax.patches, *ax.texts, *ax.collections]:
        artist.remove()
    ax.set_aspect("equal", adjustable="box")
    ax.set_autoscale_on(False)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.xaxis.set_major_locator(FixedLocator(ax.get_xticks()))
    ax.yaxis.set_major_locator(FixedLocator(ax.get_yticks()))
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_title("")
    return set(ax.get_children())


@contextlib.contextmanager
def _fixed_data_limits(ax):
    """Artists added to ax without growing its data limits (an animation frame, whose limits
    are fixed): the extent of a curved patch is costly, dozens of times per frame (design
    measurement D7).
    (Shadows two private Axes methods on this instance; where a matplotlib release renamed
    them, nothing changes but the speed.)"""
    ax._update_patch_limits = lambda patch: None
    ax._update_line_limits = lambda line: None
    try:
        yield
    finally:
        del ax._update_patch_limits, ax._update_line_limits


def frame_indices(num_saves: int, frames: int = MAX_FRAMES) -> np.ndarray:
    """Indices of the saved states shown: all of them up to `frames`, else `frames` evenly
    spread ones, first and last included."""
    if frames < 1:
        raise ValueError(f"animate: frames must be >= 1, got {frames}")
    if num_saves <= frames:
        return np.arange(num_saves)
    return np.round(np.linspace(0, num_saves - 1, frames)).astype(int)


def _writer(path, fps):
    """None for a .gif (written by `_write_gif`); matplotlib's FFMpegWriter for an .mp4."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".gif":
        return None
    if suffix == ".mp4":
        if not mpl_animation.FFMpegWriter.isAvailable():
            raise RuntimeError(
                f"animate: writing {path!r} needs ffmpeg, which is not on the "
                "PATH; install it or write a .gif instead"
            )
        return mpl_animation.FFMpegWriter(fps=fps)
    raise ValueError(f"animate: {path!r}: expected a .gif or .mp4 file name")


def _blit(fig, ax, background, kept):
    """The figure as an RGB image: the stored `background` (the axes, rendered once) with the
    artists not in `kept` (the frame's mechanism, in drawing order) and the title drawn over
    it. Unlike a full redraw, the mechanism lies above the axes' spines and ticks."""
    fig.canvas.restore_region(background)
    for artist in sorted(
        (a for a in ax.get_children() if a not in kept), key=lambda a: a.get_zorder()
    ):  # stable: insertion order in a tie
        ax.draw_artist(artist)
    ax.draw_artist(ax.title)
    return PIL.Image.fromarray(np.array(fig.canvas.buffer_rgba())[..., :3])


def _write_gif(path, images, fps):
    """Save RGB images as a looping GIF: each frame quantized to its own 256 colours (fast
    octree, no dithering: ten times faster than PIL's default adaptive palette of an RGBA
    frame, design measurement D7)."""
    frames = [
        im.quantize(256, method=PIL.Image.Quantize.FASTOCTREE, dither=PIL.Image.Dither.NONE)
        for im in images
    ]
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=int(1000 / fps), loop=0)


def _limits(model, qs, scale):
    xy = np.concatenate([_all_points(model, q) for q in qs])
    pad = 0.15 * scale
    return (xy[:, 0].min() - pad, xy[:, 0].max() + pad), (
        xy[:, 1].min() - pad,
        xy[:, 1].max() + pad,
    )


def _figsize(xlim, ylim, width=8.0):
    """A figure `width` in wide whose equal-aspect axes with limits xlim, ylim fill it: the
    height follows the drawing (3 to 10 in), with room for the title and axis labels."""
    aspect = (ylim[1] - ylim[0]) / (xlim[1] - xlim[0])
    return width, float(np.clip((width - 1.0) * aspect + 1.0, 3.0, 10.0))


def _crop_box(fig, pad=6):
    """The pixel box (left, upper, right, lower) of an RGB image of `fig` that holds its
    drawn content (axes, ticks, labels, title) with `pad` pixels around it."""
    renderer = fig.canvas.get_renderer()
    box = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans)
    width, height = fig.canvas.get_width_height()
    return (
        max(int(box.x0) - pad, 0),
        max(int(height - box.y1) - pad, 0),
        min(int(np.ceil(box.x1)) + pad, width),
        min(int(np.ceil(height - box.y0)) + pad, height),
    )


def animate(
    model: "Model",
    traj: "Trajectory",
    path: str | os.PathLike,
    *,
    frames: int = MAX_FRAMES,
    fps: float | None = None,
    trace: Sequence[str] = (),
    labels: bool = True,
    solvable: "SolvabilityReport | Mapping[str, bool] | None" = None,
    figsize: tuple[float, float] | None = None,
    dpi: float = 100,
) -> dict:
    """Write an animation of `traj` to `path`.

    A .gif is written with PIL, each frame drawn over the axes rendered once (`_blit`) and
    cropped to the drawn content (a few pixels of margin); an .mp4 with matplotlib's
    FFMpegWriter, which needs ffmpeg (a RuntimeError suggests .gif when it is missing). Each
    frame is drawn by `draw_mechanism` with one symbol scale and fixed axis limits, titled
    with its time.

    **Arguments:**
    - `model`: a built `Model`.
    - `traj`: a `Trajectory`, or anything with `ts` (T,) and `q` (T, n).
    - `path`: the .gif or .mp4 file.
    - `frames`: the most frames: at most this many evenly spread saved states are shown
      (`frame_indices`).
    - `fps`: frames per second; None: real time (clipped to 1-30).
    - `trace`: pair names whose points (on a moving body) leave a path.
    - `labels`, `solvable`: as `draw_mechanism`.
    - `figsize`: the figure's size (in); None: 8 in wide, as tall as the drawing needs.
    - `dpi`: pixels per inch of the frames.

    **Returns:** dict with `path`, `frames` (indices into traj.ts), `times`, `size_bytes`.
    """
    ts, qs = np.asarray(traj.ts, float), np.asarray(traj.q, float)
    if qs.ndim != 2 or qs.shape[1] != model.n or ts.shape != (qs.shape[0],):
        raise ValueError(
            f"animate: expected q of shape (T, {model.n}) and ts of shape (T,), "
            f"got {qs.shape} and {ts.shape}"
        )
    shown = frame_indices(len(ts), frames)
    if fps is None:
        span = ts[shown[-1]] - ts[shown[0]]
        fps = float(np.clip((len(shown) - 1) / span, 1, 30)) if span > 0 else 10.0
    writer = _writer(os.fspath(path), fps)
    scale = mechanism_size(model, qs[0])
    paths = {name: np.array([_pair_point(model.pair(name), q) for q in qs]) for name in trace}
    xlim, ylim = _limits(model, qs[shown], scale)
    fig, ax = plt.subplots(figsize=figsize or _figsize(xlim, ylim), dpi=dpi)
    try:
        kept = _animation_axes(ax, model, qs[shown[0]], scale, xlim, ylim)
        ax.set_title(f"t = {ts[shown[-1]]:.3f} s", fontsize=12)  # its room in the layout
        fig.tight_layout(pad=0.3)

        def draw_frame(k):
            for artist in [a for a in ax.get_children() if a not in kept]:
                artist.remove()
            with _fixed_data_limits(ax):
                draw_mechanism(
                    model,
                    qs[k],
                    ax,
                    t=float(ts[k]),
                    labels=labels,
                    solvable=solvable,
                    scale=scale,
                    legend=False,
                    frame=False,
                )
                for m, xy in enumerate(paths.values()):
                    ax.plot(*xy[: k + 1].T, color=plt.get_cmap("Dark2")(m % 8), lw=1.4, zorder=1)
            ax.set_title(f"t = {ts[k]:.3f} s", fontsize=12)

        if writer is None:  # a GIF: the axes rendered once, each frame blitted over them
            fig.canvas.draw()
            crop = _crop_box(fig)
            ax.set_title("")
            fig.canvas.draw()
            background = fig.canvas.copy_from_bbox(fig.bbox)  # pyright: ignore[reportAttributeAccessIssue]
            images = []
            for k in shown:
                draw_frame(k)
                images.append(_blit(fig, ax, background, kept).crop(crop))
            _write_gif(os.fspath(path), images, fps)
        else:
            with writer.saving(fig, os.fspath(path), dpi):
                for k in shown:
                    draw_frame(k)
                    writer.grab_frame()
    finally:
        plt.close(fig)
    return dict(
        path=os.fspath(path), frames=shown, times=ts[shown], size_bytes=os.path.getsize(path)
    )
