"""Matplotlib pictures of motion and reactions.

Reactions of pairs that the solvability analysis flags unsolvable are drawn dashed and labelled
"method-dependent": they are one of infinitely many answers, not a property of the mechanism.
Curves of one panel get pairwise distinct styles (`curve_styles`: colour, then dash pattern,
then marker), so that fourteen reactions stay apart.
"""

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from numpy.typing import ArrayLike  # noqa: E402

from .elements.geometry import point  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.colorbar import Colorbar
    from matplotlib.figure import Figure

    from ._analyses.reactions import Reactions
    from ._model.model import Model

__all__ = [
    "curve_styles",
    "new_figure",
    "pair_body",
    "pair_styles",
    "plot_fan",
    "plot_pair_reactions",
    "plot_paths",
    "plot_reaction",
    "point_path",
    "reaction_magnitude",
    "save_figure",
]

METHOD_DEPENDENT = "method-dependent"

COLORS = plt.get_cmap("tab10").colors  # pyright: ignore[reportAttributeAccessIssue]
"""The colours of the curves of a panel, in order."""

DASHES = ("-", (0, (6, 2)), (0, (1.2, 1.6)), (0, (6, 2, 1.2, 2)))
"""Line styles after the colours: solid, dashed, dotted, dash-dotted."""

MARKERS = ("", "o", "s", "^", "v", "D", "P", "X")
"""Markers after the colours (and, where the dash carries meaning, instead of the dashes)."""


def curve_styles(count: int, dashes: bool = True) -> list[dict]:
    """`count` pairwise distinct styles for the curves of one panel, as keyword dicts of
    `ax.plot`: the 10 colours first, then each colour again with the next dash pattern (with
    `dashes`; without, where the caller's dash means something, with the next marker), then
    with markers. A marker is drawn at about 12 points of its curve (`markevery`)."""
    styles = []
    for k in range(count):
        color, cycle = COLORS[k % len(COLORS)], k // len(COLORS)
        if dashes:
            dash, marker = DASHES[cycle % len(DASHES)], MARKERS[cycle // len(DASHES) % len(MARKERS)]
        else:
            dash, marker = None, MARKERS[cycle % len(MARKERS)]
        style = dict(color=color)
        if dash is not None:
            style["linestyle"] = dash
        if marker:
            style.update(marker=marker, markevery=0.08, ms=4.5, mfc="white")
        styles.append(style)
    return styles


def point_path(model: "Model", q_traj: ArrayLike, body_name: str, s: ArrayLike) -> np.ndarray:
    """Global path (T, 2) of the body point `s` (body frame) along the configurations q_traj."""
    import jax

    body = next(p for p in _bodies(model) if p.name == body_name)
    return np.asarray(jax.vmap(lambda q: point(q, body, np.asarray(s, float)))(q_traj))


def _bodies(model):
    seen = {}
    for p in model.pairs:
        for b in p.bodies():
            if not b.is_ground:
                seen[b.name] = b
    return list(seen.values())


def plot_paths(ax: "Axes", paths: Mapping[str, ArrayLike], title: str = "paths") -> "Axes":
    """Draw named planar paths {label: (T, 2) array} in distinct styles (`curve_styles`), the
    start of each marked with a dot and its end with an arrowhead; equal axes in metres."""
    for (label, xy), style in zip(paths.items(), curve_styles(len(paths))):
        xy = np.asarray(xy)
        (line,) = ax.plot(xy[:, 0], xy[:, 1], label=label, **style)
        ax.plot(xy[0, 0], xy[0, 1], "o", color=line.get_color(), ms=3.5)
        if len(xy) > 1 and np.any(xy[-1] != xy[-2]):
            ax.annotate(
                "",
                xy=xy[-1],
                xytext=xy[-2],
                arrowprops=dict(
                    arrowstyle="-|>", color=line.get_color(), lw=1.2, mutation_scale=10
                ),
            )
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title(title)
    ax.legend(fontsize="small", loc="best")
    return ax


def reaction_magnitude(rx: "Reactions", pair_name: str, body_name: str) -> np.ndarray:
    """|F| (N) of the force pair `pair_name` applies to `body_name`, over time."""
    fx, fy, _ = rx.on_body(pair_name, body_name)
    return np.hypot(np.asarray(fx), np.asarray(fy))


def plot_reaction(
    ax: "Axes",
    ts: ArrayLike,
    variants: Mapping[str, "Reactions"],
    pair_name: str,
    body_name: str,
    solvable: bool,
) -> "Axes":
    """One panel: |F| of a pair on a body for several methods {label: Reactions}. Unsolvable
    pairs are dashed and titled as method-dependent. The curves are drawn from wide to narrow,
    so where the methods agree (a unique reaction) every colour stays visible."""
    style = "-" if solvable else "--"
    widest = 4.0 if solvable else 2.2  # a unique reaction's curves coincide: nested widths
    widths = np.linspace(widest, 1.2, len(variants)) if len(variants) > 1 else [1.5]
    for (label, rx), color, lw in zip(variants.items(), curve_styles(len(variants)), widths):
        ax.plot(
            np.asarray(ts),
            reaction_magnitude(rx, pair_name, body_name),
            style,
            label=label,
            color=color["color"],
            lw=lw,
            alpha=0.9,
        )
    kind = "unique" if solvable else f"NOT unique ({METHOD_DEPENDENT})"
    ax.set_title(f"{pair_name} on {body_name}: {kind}", fontsize="medium")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("|F| (N)")
    ax.legend(fontsize="x-small")
    return ax


def save_figure(fig: "Figure", path: str) -> str:
    """Lay `fig` out tightly, save it to `path` at 120 dpi and close it; returns `path`."""
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def new_figure(
    rows: int = 1, cols: int = 1, size: tuple[float, float] = (6.0, 4.5)
) -> tuple["Figure", np.ndarray]:
    """A figure of rows x cols panels of `size` inches each: (figure, axes array (rows, cols))."""
    fig, axes = plt.subplots(rows, cols, figsize=(size[0] * cols, size[1] * rows), squeeze=False)
    return fig, axes


def pair_body(model: "Model", pair_name: str) -> str:
    """The body a pair's reaction is shown on: its first moving body."""
    return next(b.name for b in model.pair(pair_name).bodies() if not b.is_ground)


def pair_styles(names: Sequence[str], unique: Mapping[str, bool]) -> dict[str, dict]:
    """{pair name: plot style} for the reaction curves of `names`: solid where `unique[name]`,
    dashed where not, and within each kind pairwise distinct colours and markers
    (`curve_styles` without dashes), so that every curve differs from every other."""
    styles = {}
    for flag, dash in ((True, "-"), (False, "--")):
        group = [n for n in names if bool(unique[n]) == flag]
        for name, style in zip(group, curve_styles(len(group), dashes=False)):
            styles[name] = dict(style, linestyle=dash)
    return styles


def plot_pair_reactions(
    ax: "Axes",
    ts: ArrayLike,
    rx: "Reactions",
    model: "Model",
    solvable: Mapping[str, bool] | None = None,
    torque: bool = False,
    legend: bool = True,
) -> "Axes":
    """One panel, every pair: |F| (N), or with `torque` the torque about the centre of mass
    (N m), that the pair applies to `pair_body` over time. Non-unique reactions are dashed
    and labelled method-dependent; every curve has its own style (`pair_styles`), the same in
    the force and the torque panel.

    **Arguments:**
    - `ax`: the matplotlib axes.
    - `ts`: the times (s) of `rx`.
    - `rx`: `Reactions` along a trajectory (a leading time axis).
    - `model`: the built `Model`.
    - `solvable`: pair name -> bool; None: `rx.solvable` at every time.
    - `torque`: the torques (N m) instead of the force magnitudes (N).
    - `legend`: a legend in the panel."""
    names = model.pair_names
    unique = {
        name: bool(np.all(rx.solvable[name]) if solvable is None else solvable[name])
        for name in names
    }
    styles = pair_styles(names, unique)
    for name in names:
        body = pair_body(model, name)
        fx, fy, tau = (np.asarray(v) for v in rx.on_body(name, body))
        label = f"{name} on {body}" + ("" if unique[name] else f" ({METHOD_DEPENDENT})")
        ax.plot(
            np.asarray(ts), tau if torque else np.hypot(fx, fy), label=label, lw=1.4, **styles[name]
        )
    ax.set_title(
        "reaction torques about the centres of mass"
        if torque
        else "reaction forces; dashed: NOT unique",
        fontsize="medium",
    )
    ax.set_xlabel("t (s)")
    ax.set_ylabel("torque (N m)" if torque else "|F| (N)")
    if legend:
        ax.legend(fontsize="x-small", ncol=2 if len(names) > 6 else 1)
    return ax


def plot_fan(
    ax: "Axes",
    paths: ArrayLike,
    values: ArrayLike,
    label: str,
    cmap: str = "coolwarm",
    max_paths: int | None = None,
    center: float | None = None,
) -> "Colorbar":
    """Planar paths coloured by one number each, with a colour bar that reads the colours
    back; equal axes in metres.

    **Arguments:**
    - `ax`: the matplotlib axes.
    - `paths`: (k, T, 2), in metres.
    - `values`: (k,), one number per path.
    - `label`: the colour bar's title (with the unit of `values`).
    - `cmap`: the colour map.
    - `max_paths`: draw only the first ones; None: all.
    - `center`: a value the colour scale is symmetric about (the middle colour of a diverging
      `cmap`); None: the range of `values`.

    **Returns:** the colour bar."""
    paths, values = np.asarray(paths, float), np.asarray(values, float)
    if max_paths is not None:
        paths, values = paths[:max_paths], values[:max_paths]
    lines = LineCollection(list(paths), array=values, cmap=cmap, linewidths=0.8)
    if center is not None:
        reach = float(np.max(np.abs(values - center))) or 1.0
        lines.set_clim(center - reach, center + reach)
    ax.add_collection(lines)
    ax.autoscale_view()
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    bar = ax.figure.colorbar(lines, ax=ax, shrink=0.85)
    bar.set_label(label)
    return bar
