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

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import PIL.Image  # noqa: E402
from matplotlib import animation as mpl_animation  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.markers import MarkerStyle  # noqa: E402
from matplotlib.patches import Circle, FancyArrowPatch, Polygon  # noqa: E402
from matplotlib.ticker import FixedLocator  # noqa: E402

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

UNIQUE_COLOR = "#2b8a3e"
NOT_UNIQUE_COLOR = "#c92a2a"
NOT_UNIQUE = "not unique"
DRIVER_COLOR = "#d9480f"
FORCE_COLOR = "#1864ab"
MAX_FRAMES = 120
"""Default frame cap of `animate`: an 8 x 6 in GIF at 80 dpi stays under a few MB."""

# symbol sizes as fractions of the mechanism's size (`scale`)
_PIN = 0.018
_SUPPORT = 0.05
_BOX = (0.09, 0.05)
_BLADE = 0.075
_MOTOR = 0.055
_CHAR = 0.018  # rough width of a label character
_REACH = (2.3, 6.0)  # label distances from their point, in pin radii: next to it, on a leader


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
        if isinstance(element, (Gravity, RelativeAngleDriver, TranslationalDriver,
                                AbsoluteDriver)):
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


def _scale(model, q):
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
            while len(out) >= 2 and _cross(np.subtract(out[-1], out[-2]),
                                           np.subtract(p, out[-2])) <= 0:
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
        raise ValueError(f"draw_mechanism: solvable names unknown pairs {unknown}; the pairs "
                         f"are {list(model.pair_names)}")
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
            _box(ax, pts[0], np.array([1.0, 0.0]), *np.multiply(_BOX, scale), color, 2,
                 f"body:{name}")
        return
    if sv[1] < 1e-6 * sv[0]:
        t = spread @ vt[0]
        xy = pts.mean(axis=0) + np.outer([t.min(), t.max()], vt[0])
        ax.plot(*xy.T, color=color, lw=7, alpha=0.85, solid_capstyle="round", zorder=2,
                gid=f"body:{name}")
        return
    plate = Polygon(_hull(pts), closed=True, facecolor=color, alpha=0.35, edgecolor=color,
                    lw=2.5, joinstyle="round", zorder=2)
    plate.set_gid(f"body:{name}")
    ax.add_patch(plate)


def _box(ax, centre, axis, w, h, color, zorder, gid):
    normal = _perp(axis)
    corners = [centre + a * w / 2 * axis + n * h / 2 * normal
               for a, n in ((-1, -1), (1, -1), (1, 1), (-1, 1))]
    patch = Polygon(corners, closed=True, facecolor=color, edgecolor="black", lw=1.3,
                    zorder=zorder)
    patch.set_gid(gid)
    ax.add_patch(patch)


def _hatch(ax, start, end, side, depth, gid):
    """Ground: a line start-end with a hatched strip of `depth` on the side `side` (unit)."""
    strip = Polygon([start, end, end + depth * side, start + depth * side], closed=True,
                    fill=False, hatch="////", lw=0, edgecolor="0.35", zorder=1)
    strip.set_gid(gid)
    ax.add_patch(strip)
    ax.plot(*np.array([start, end]).T, color="0.2", lw=1.5, zorder=1)


def _curved_arrow(ax, centre, radius, color, gid, start=200.0, end=340.0):
    """An arc arrow about `centre`; returns the middle of the arc."""
    a = np.radians([start, end, (start + end) / 2])
    p0, p1, mid = (centre + radius * np.array([np.cos(x), np.sin(x)]) for x in a)
    arrow = FancyArrowPatch(p0, p1, connectionstyle=f"arc3,rad={np.tan((a[1] - a[0]) / 4):.4f}",
                            arrowstyle="-|>", mutation_scale=11, color=color, lw=1.8, zorder=6)
    arrow.set_gid(gid)
    ax.add_patch(arrow)
    return mid


def _arrow(ax, p0, p1, color, gid, style="-|>", ls="-"):
    arrow = FancyArrowPatch(p0, p1, arrowstyle=style, mutation_scale=11, color=color, lw=1.8,
                            ls=ls, zorder=6)
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
        ax.add_patch(Polygon([p, p + [-0.6 * h, -h], p + [0.6 * h, -h]], closed=True,
                             facecolor="0.85", edgecolor="0.2", lw=1.3, zorder=1))
        _hatch(ax, p + [-0.9 * h, -h], p + [0.9 * h, -h], np.array([0.0, -1.0]), 0.35 * h,
               f"support:{pair.name}")
    pin = Circle(p, _PIN * scale, facecolor="white", edgecolor="black", lw=1.5, zorder=5)
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
    ax.plot(*np.array([p - blade, p + blade]).T, color="0.1", lw=5.5, solid_capstyle="round",
            zorder=4, gid=f"knife:{pair.name}")
    return "knife edge", p


def _draw_driver(ax, model, pair, q, scale):
    gid = f"driver:{pair.name}"
    if isinstance(pair, RelativeAngleDriver):
        pin = next((p for p in model.pairs if isinstance(p, Revolute)
                    and {p.i, p.j} == {pair.i, pair.j}), None)
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
        ax.plot(*xy.T, color="0.25", lw=1.5, marker="o", ms=4, mfc="white", zorder=4,
                gid=f"link:{pair.name}")
        return "distance", xy.mean(axis=0)
    ax.plot(*xy.T, color="0.4", lw=1.0, ls=":", zorder=3, gid=f"pair:{pair.name}")
    return "other pair", xy.mean(axis=0)


def _draw_bushing(ax, element, q, scale):
    """A rubber ring (grey annulus) around a pin at P_i, a zigzag to P_j when they differ."""
    pi, pj = _point(q, element.i, element.s_i), _point(q, element.j, element.s_j)
    gid = f"force:{element.name}"
    ring = Circle(pi, 2.1 * _PIN * scale, facecolor="0.6", edgecolor="0.25", lw=1.2, zorder=4.5)
    ring.set_gid(gid)
    ax.add_patch(ring)
    ax.add_patch(Circle(pi, _PIN * scale, facecolor="white", edgecolor="black", lw=1.2,
                        zorder=4.6))
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
    ring = Circle(p, (1.8 + 0.7 * k) * _PIN * scale, fill=False, lw=1.5, zorder=5.5,
                  edgecolor=UNIQUE_COLOR if flag else NOT_UNIQUE_COLOR, ls="-" if flag else "--")
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


def _text_box(p, d, reach, text, scale):
    """Where a label of `text` goes `reach` pin radii off point p in direction d: (xy, ha, va,
    points sampled over its approximate extent)."""
    xy = p + reach * _PIN * scale * d
    ha = "left" if d[0] > 0.3 else "right" if d[0] < -0.3 else "center"
    va = "bottom" if d[1] > 0.3 else "top" if d[1] < -0.3 else "center"
    width = _CHAR * scale * len(text)
    x0 = {"left": 0.0, "right": -width, "center": -width / 2}[ha]
    dy = {"bottom": 0.015, "top": -0.015, "center": 0.0}[va] * scale
    return xy, ha, va, [xy + [x, dy] for x in np.linspace(x0, x0 + width, 8)]


@functools.cache
def _text_offsets(length):
    """The samples of `_text_box` for every option (reach outer, direction inner) of a label
    of `length` characters around the origin, in units of scale: (options, 8, 2)."""
    dirs = np.array([[np.cos(a), np.sin(a)] for a in np.arange(8) * np.pi / 4])
    return np.asarray([_text_box(np.zeros(2), d, reach, "x" * length, 1.0)[3]
                       for reach in _REACH for d in dirs])


def _text_samples(p, text, scale):
    """`_text_box`'s samples of every option for `text` at point p: (options, 8, 2)."""
    return p + scale * _text_offsets(len(text))


def _place_labels(ax, requests, obstacles, centre, scale):
    """Put each (name, point, flag, color) label next to its point, or farther out on a leader
    line, in the one of 8 directions where its text stays clearest of the symbols, links and
    labels already there (other than its own point); ties go away from the mechanism's
    centre. Long labels go first, the short ones fit in between."""
    obstacles = np.asarray(obstacles).reshape(-1, 2)
    dirs = np.array([[np.cos(a), np.sin(a)] for a in np.arange(8) * np.pi / 4])
    texts = [_label_style(name, flag, color) for name, _, flag, color in requests]
    for k in sorted(range(len(requests)), key=lambda k: -len(texts[k][0])):
        (name, p, _, _), (text, style) = requests[k], texts[k]
        out = p - centre
        out = out / np.linalg.norm(out) if np.linalg.norm(out) > 1e-9 * scale else dirs[2]
        others = obstacles[np.linalg.norm(obstacles - p, axis=1) > 1e-6 * scale]
        options = [(d, reach) for reach in _REACH for d in dirs]
        samples = _text_samples(p, text, scale).reshape(len(options), -1, 2)  # in order
        # squared distances of every sample to every obstacle, |a|^2 + |b|^2 - 2 a.b
        squared = (np.sum(samples**2, axis=2)[:, :, None] + np.sum(others**2, axis=1)
                   - 2.0 * samples @ others.T)
        clearance = np.sqrt(np.maximum(np.min(squared, axis=(1, 2), initial=scale**2), 0.0))
        score = (np.minimum(clearance, 0.06 * scale)
                 + 0.01 * scale * np.array([d @ out - (reach > _REACH[0]) for d, reach in options]))
        best = int(np.argmax(score))
        xy, ha, va, samples = _text_box(p, *options[best], text, scale)
        obstacles = np.concatenate([obstacles, samples])
        # patchA=None: the leader starts at the text's anchor (its edge facing the point)
        # instead of being clipped to the text box (slow: design measurement D7)
        leader = dict(arrowstyle="-", color="0.55", lw=0.7, shrinkA=0, shrinkB=0, patchA=None)
        label = ax.annotate(
            text, xy=p, xytext=xy, textcoords="data", fontsize=9, ha=ha, va=va, zorder=7,
            arrowprops=leader if options[best][1] > _REACH[0] else None,
            bbox=dict(boxstyle="round,pad=0.12", fc="white", ec="none", alpha=0.75), **style)
        label.set_gid(f"label:{name}")


@functools.cache
def _com_marker():
    """The centre-of-mass symbol, a mathtext marker typeset once (each typesetting costs
    milliseconds, seven times per animation frame of the robot: design measurement D7)."""
    return MarkerStyle("$\\oplus$")


def _obstacles(points, anchors_drawn):
    """Points a label should keep clear of: symbols, and samples along every link."""
    samples = [c + s * (p - c) for c, *pts in points.values() for p in pts
               for s in np.linspace(0.0, 1.0, 7)]
    return [*anchors_drawn, *samples]


# ----- the drawing ---------------------------------------------------------------------------
def draw_mechanism(model, q, ax=None, *, t=0.0, labels=True, solvable=None, scale=None,
                   legend=True, frame=True):
    """Draw `model` at the configuration `q` (time `t`, for applied forces).

    **Arguments:** `model`; `q` (n,); `ax` (a new figure when None); `labels`: name every pair
    and force element next to its symbol; `solvable`: a `SolvabilityReport` or a dict pair
    name -> bool (e.g. `mb.solvability(model, q)`): unique reactions get a solid green ring
    and label, non-unique ones a dashed red ring and "NAME (not unique)"; `scale`: the length
    symbols are proportional to (default: the diagonal of the box around all attachment
    points; pass one value to keep the frames of an animation alike); `legend`; `frame`:
    also set up the axes (equal aspect, limits around the drawing, axis labels, grid; False
    leaves the axes as they are, as `animate` does for every frame).

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
    scale = _scale(model, q) if scale is None else float(scale)
    points, _ = _body_points(model, q)
    sliders = {p.i.name for p in model.pairs if isinstance(p, Translational)}
    sliders |= {p.j.name for p in model.pairs if isinstance(p, PinInSlot)}
    for k, name in enumerate(model.body_names):
        _draw_body(ax, name, points[name], plt.get_cmap("tab10")(k % 10), scale,
                   name not in sliders)
        ax.plot(*points[name][0], marker=_com_marker(), ms=9, color="black", zorder=6,
                gid=f"com:{name}")
    kinds, requests, rings, supports = set(), [], {}, []
    for pair in model.pairs:
        kind, p = _draw_pair(ax, model, pair, q, scale)
        kinds.add(kind)
        if kind == "ground pivot":
            supports += [p - [0.0, f * _SUPPORT * scale] for f in (0.5, 1.0)]
        flag = None if flags is None else flags.get(pair.name)
        if flag is not None:
            _ring(ax, pair.name, p, flag, _stack_index(rings, p, scale), scale)
        requests.append((pair.name, p, flag, DRIVER_COLOR if kind == "driver" else "black"))
    for element in model.force_elements:
        drawn = _draw_force(ax, element, q, t, scale)
        if drawn is not None:
            kinds.add(drawn[0])
            requests.append((element.name, drawn[1], None, "0.3"))
    if labels:
        centre = _all_points(model, q).mean(axis=0)
        obstacles = _obstacles(points, [r[1] for r in requests] + supports)
        _place_labels(ax, requests, obstacles, centre, scale)
    if frame:
        ax.set_aspect("equal", adjustable="datalim")
        ax.autoscale_view()
        ax.margins(0.12)
        ax.set_xlabel("x (m)")
        ax.set_ylabel("y (m)")
        ax.grid(True, color="0.92", lw=0.6, zorder=0)
    if legend:
        _legend(ax, model, kinds, flags is not None)
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


def _legend(ax, model, kinds, with_flags):
    handles = [Line2D([], [], label=k, **_LEGEND[k]) for k in _LEGEND if k in kinds]
    for g in (np.asarray(e.g, float) for e in model.force_elements if isinstance(e, Gravity)):
        angle = np.degrees(np.arctan2(g[1], g[0])) - 90.0  # the marker (3, 0, 0) points up
        handles.append(Line2D([], [], ls="", marker=(3, 0, angle), color="0.3", ms=8,
                              label=f"gravity g = ({g[0]:g}, {g[1]:g}) m/s²"))
    if with_flags:
        handles += [
            Line2D([], [], ls="-", marker="o", mfc="none", color=UNIQUE_COLOR, ms=9,
                   label="reaction unique"),
            Line2D([], [], ls="--", marker="o", mfc="none", color=NOT_UNIQUE_COLOR, ms=9,
                   label=f"reaction {NOT_UNIQUE} ({plotting.METHOD_DEPENDENT})"),
        ]
    handles.append(Line2D([], [], ls="", marker="$\\oplus$", color="black", ms=9,
                          label="centre of mass"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small",
              frameon=False, borderaxespad=0.0)


def save_drawing(model, q, path, *, t=0.0, solvable=None, title=None, dpi=130, **kwargs):
    """`draw_mechanism` into a new figure saved to `path`; returns `path`."""
    fig, ax = plt.subplots(figsize=(8.0, 5.5))
    draw_mechanism(model, q, ax, t=t, solvable=solvable, **kwargs)
    if title:
        ax.set_title(title)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return path


def overview(model, traj, rx, solvable, path=None):
    """One figure: the mechanism at traj.q[0] with its solvability flags, the paths of the body
    centres, and the reactions on each pair's first moving body over time (`rx`: `Reactions`
    along `traj`; non-unique ones dashed and labelled method-dependent, `jaxmb.plotting`).
    Saved to `path` (then closed) when given; **returns** the figure."""
    ts, qs = np.asarray(traj.ts), np.asarray(traj.q)
    fig = plt.figure(figsize=(15.0, 10.0))
    grid = fig.add_gridspec(2, 3, height_ratios=(1.2, 1.0))
    ax = draw_mechanism(model, qs[0], fig.add_subplot(grid[0, :]), t=float(ts[0]),
                        solvable=solvable)
    ax.set_title(f"the mechanism at t = {ts[0]:g} s")
    paths = {f"{name} centre": qs[:, 3 * k : 3 * k + 2] for k, name in enumerate(model.body_names)}
    plotting.plot_paths(fig.add_subplot(grid[1, 0]), paths, title="paths of the centres of mass")
    flags = _flags(model, solvable)
    forces = plotting.plot_pair_reactions(fig.add_subplot(grid[1, 1]), ts, rx, model, flags,
                                          legend=False)
    plotting.plot_pair_reactions(fig.add_subplot(grid[1, 2]), ts, rx, model, flags, torque=True,
                                 legend=False)
    rows = -(-len(model.pair_names) // 4)
    fig.legend(*forces.get_legend_handles_labels(), loc="lower center", ncol=4,
               fontsize="small", frameon=False, title="reactions on each pair's first moving body")
    fig.tight_layout(rect=(0.0, 0.022 * rows + 0.04, 1.0, 1.0))
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


def frame_indices(num_saves, frames=MAX_FRAMES):
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
            raise RuntimeError(f"animate: writing {path!r} needs ffmpeg, which is not on the "
                               "PATH; install it or write a .gif instead")
        return mpl_animation.FFMpegWriter(fps=fps)
    raise ValueError(f"animate: {path!r}: expected a .gif or .mp4 file name")


def _blit(fig, ax, background, kept):
    """The figure as an RGB image: the stored `background` (the axes, rendered once) with the
    artists not in `kept` (the frame's mechanism, in drawing order) and the title drawn over
    it. Unlike a full redraw, the mechanism lies above the axes' spines and ticks."""
    fig.canvas.restore_region(background)
    for artist in sorted((a for a in ax.get_children() if a not in kept),
                         key=lambda a: a.get_zorder()):  # stable: insertion order in a tie
        ax.draw_artist(artist)
    ax.draw_artist(ax.title)
    return PIL.Image.fromarray(np.array(fig.canvas.buffer_rgba())[..., :3])


def _write_gif(path, images, fps):
    """Save RGB images as a looping GIF: each frame quantized to its own 256 colours (fast
    octree, no dithering: ten times faster than PIL's default adaptive palette of an RGBA
    frame, design measurement D7)."""
    frames = [im.quantize(256, method=PIL.Image.Quantize.FASTOCTREE,
                          dither=PIL.Image.Dither.NONE) for im in images]
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=int(1000 / fps),
                   loop=0)


def _limits(model, qs, scale):
    xy = np.concatenate([_all_points(model, q) for q in qs])
    pad = 0.15 * scale
    return (xy[:, 0].min() - pad, xy[:, 0].max() + pad), (xy[:, 1].min() - pad,
                                                          xy[:, 1].max() + pad)


def animate(model, traj, path, *, frames=MAX_FRAMES, fps=None, trace=(), labels=True,
            solvable=None, figsize=(8.0, 6.0), dpi=80):
    """Write an animation of `traj` (a `Trajectory`, or anything with `ts` and `q`) to `path`.

    A .gif is written with PIL, each frame drawn over the axes rendered once (`_blit`); an
    .mp4 with matplotlib's FFMpegWriter, which needs ffmpeg (a RuntimeError suggests .gif when
    it is missing). At most `frames` evenly spread saved states are shown
    (`frame_indices`), each drawn by `draw_mechanism` with one symbol scale and fixed axis
    limits, titled with its time. `fps`: default real time (clipped to 1-30 frames per second).
    `trace`: pair names whose points (on a moving body) leave a path.

    **Returns:** dict with `path`, `frames` (indices into traj.ts), `times`, `size_bytes`.
    """
    ts, qs = np.asarray(traj.ts, float), np.asarray(traj.q, float)
    if qs.ndim != 2 or qs.shape[1] != model.n or ts.shape != (qs.shape[0],):
        raise ValueError(f"animate: expected q of shape (T, {model.n}) and ts of shape (T,), "
                         f"got {qs.shape} and {ts.shape}")
    shown = frame_indices(len(ts), frames)
    if fps is None:
        span = ts[shown[-1]] - ts[shown[0]]
        fps = float(np.clip((len(shown) - 1) / span, 1, 30)) if span > 0 else 10.0
    writer = _writer(os.fspath(path), fps)
    scale = _scale(model, qs[0])
    paths = {name: np.array([_pair_point(model.pair(name), q) for q in qs]) for name in trace}
    xlim, ylim = _limits(model, qs[shown], scale)
    fig, ax = plt.subplots(figsize=figsize, dpi=dpi)
    try:
        kept = _animation_axes(ax, model, qs[shown[0]], scale, xlim, ylim)

        def draw_frame(k):
            for artist in [a for a in ax.get_children() if a not in kept]:
                artist.remove()
            with _fixed_data_limits(ax):
                draw_mechanism(model, qs[k], ax, t=ts[k], labels=labels, solvable=solvable,
                               scale=scale, legend=False, frame=False)
                for m, xy in enumerate(paths.values()):
                    ax.plot(*xy[: k + 1].T, color=plt.get_cmap("Dark2")(m % 8), lw=1.4,
                            zorder=1)
            ax.set_title(f"t = {ts[k]:.3f} s")

        if writer is None:  # a GIF: the axes rendered once, each frame blitted over them
            fig.canvas.draw()
            background = fig.canvas.copy_from_bbox(fig.bbox)
            images = []
            for k in shown:
                draw_frame(k)
                images.append(_blit(fig, ax, background, kept))
            _write_gif(os.fspath(path), images, fps)
        else:
            with writer.saving(fig, os.fspath(path), dpi):
                for k in shown:
                    draw_frame(k)
                    writer.grab_frame()
    finally:
        plt.close(fig)
    return dict(path=os.fspath(path), frames=shown, times=ts[shown],
                size_bytes=os.path.getsize(path))
