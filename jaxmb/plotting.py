"""Matplotlib pictures of motion and reactions.

Reactions of pairs that the solvability analysis flags unsolvable are drawn dashed and labelled
"method-dependent": they are one of infinitely many answers, not a property of the mechanism.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .elements.geometry import point  # noqa: E402

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


def pair_body(model, pair_name):
    """The body a pair's reaction is shown on: its first moving body."""
    return next(b.name for b in model.pair(pair_name).bodies() if not b.is_ground)


def plot_pair_reactions(ax, ts, rx, model, solvable=None, torque=False, legend=True):
    """One panel, every pair: |F| (N), or with `torque` the torque about the centre of mass
    (N m), that the pair applies to `pair_body` over time. `solvable`: pair name -> bool
    (default: `rx.solvable` at every time); non-unique reactions are dashed and labelled
    method-dependent. Pair k always gets the same colour (tab20 beyond 10 pairs)."""
    names = model.pair_names
    colors = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    for k, name in enumerate(names):
        body = pair_body(model, name)
        unique = bool(np.all(rx.solvable[name]) if solvable is None else solvable[name])
        fx, fy, tau = (np.asarray(v) for v in rx.on_body(name, body))
        label = f"{name} on {body}" + ("" if unique else f" ({METHOD_DEPENDENT})")
        ax.plot(np.asarray(ts), tau if torque else np.hypot(fx, fy), "-" if unique else "--",
                color=colors(k % colors.N), label=label)
    ax.set_title("reaction torques about the centres of mass" if torque
                 else "reaction forces; dashed: NOT unique", fontsize="medium")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("torque (N m)" if torque else "|F| (N)")
    if legend:
        ax.legend(fontsize="x-small", ncol=2 if len(names) > 6 else 1)
    return ax
