"""Matplotlib pictures of motion and reactions.

Reactions of pairs that the solvability analysis flags unsolvable are drawn dashed and labelled
"method-dependent": they are one of infinitely many answers, not a property of the mechanism.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ._geometry import point  # noqa: E402

METHOD_DEPENDENT = "method-dependent"


def point_path(model, q_traj, body_name, s):
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


def plot_paths(ax, paths: dict, title="paths"):
    """Draw named planar paths {label: (T, 2) array}; start marked with a dot."""
    for label, xy in paths.items():
        xy = np.asarray(xy)
        (line,) = ax.plot(xy[:, 0], xy[:, 1], label=label)
        ax.plot(xy[0, 0], xy[0, 1], "o", color=line.get_color(), ms=3)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title(title)
    ax.legend(fontsize="small")
    return ax


def reaction_magnitude(rx, pair_name, body_name):
    """|F| (N) of the force pair `pair_name` applies to `body_name`, over time."""
    fx, fy, _ = rx.on_body(pair_name, body_name)
    return np.hypot(np.asarray(fx), np.asarray(fy))


def plot_reaction(ax, ts, variants: dict, pair_name, body_name, solvable):
    """One panel: |F| of a pair on a body for several methods {label: Reactions}. Unsolvable
    pairs are dashed and titled as method-dependent."""
    style = "-" if solvable else "--"
    for label, rx in variants.items():
        ax.plot(np.asarray(ts), reaction_magnitude(rx, pair_name, body_name), style, label=label)
    kind = "unique" if solvable else f"NOT unique ({METHOD_DEPENDENT})"
    ax.set_title(f"{pair_name} on {body_name}: {kind}", fontsize="medium")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("|F| (N)")
    ax.legend(fontsize="x-small")
    return ax


def save_figure(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def new_figure(rows=1, cols=1, size=(6.0, 4.5)):
    fig, axes = plt.subplots(rows, cols, figsize=(size[0] * cols, size[1] * rows), squeeze=False)
    return fig, axes
