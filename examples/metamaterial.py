"""A mechanical metamaterial at scale: the rotating-squares (auxetic) linkage of n x n plates.

    python examples/metamaterial.py [--quick] [--n 20] [--out out]

The n x n grid of square plates hinged at shared corners (`jaxmb.models.rotating_squares`,
plate (0, 0) held) has one finite degree of freedom, the auxetic mode, and (n - 2)^2 redundant
constraint rows (324 for 20 x 20), so most of its hinge forces are not unique in the rigid model.

1. Solvability (`mb.solvability(..., method="sparse")`): which hinge reactions are unique, and
   how far each is from unique (|B_X|, seed 001 eq. 27): metamaterial_solvability.png.
2. Hinge forces: the grid pulled outwards at its left and right edges (1 N per edge plate)
   with its mode held ("mode" driver: a structure). The forces its ligaments carry depend on
   their stiffness (`mb.Compliance`, every hinge its own, log-uniform over a decade); the
   minimum-norm answer is what the rigid model alone says: metamaterial_forces.png.
3. Motion: the free grid pulled at the same edges for 1 s opens along its mode (Poisson's ratio
   -1: it widens and heightens alike). Energy balance: the kinetic energy equals the pull's
   work (checked here): metamaterial_motion.png and metamaterial.gif.
4. Inverse design: the plate sizes and hinge offsets (ligament positions) that lower the peak
   hinge force (the 8-norm of the hinge forces, a smooth maximum) at a fixed opening angle,
   by reverse-mode gradients through the Compliance statics (checked against central
   differences on its largest entries) and Adam (optax): metamaterial_design.png. Generic
   sizes and offsets close the auxetic mode (the designed pattern has dof 0 without the
   driver: said in the output), so the optimizer learns to carry the pull through the
   ligaments rather than through the driver that holds the mode.

`main(argv)` returns every number it prints.
"""

import argparse
import os
import time
import warnings

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import optax
from matplotlib import animation
from matplotlib.collections import PolyCollection

import jaxmb as mb  # first: float64 and the XLA CPU flags
from jaxmb import plotting
from jaxmb.models import auxetic

THETA = 0.3
PULL = 1.0  # N per edge plate
DESIGN_POWER = 8  # the p-norm used as a smooth maximum of the hinge forces
SIZE_BOUNDS = (0.8, 1.2)  # plate side relative to the nominal one
OFFSET_BOUND = 0.1  # hinge offset, relative to the nominal side


def say(text):
    print(text, flush=True)


def stiffness(n, seed=0):
    """Every hinge its own ligament stiffness, log-uniform over 1e6 to 1e7 N/m."""
    rng = np.random.default_rng(seed)
    return {name: float(10 ** rng.uniform(6, 7)) for name, *_ in auxetic.hinges(n, n)}


# ----- drawing -----------------------------------------------------------------------------
def plates(model, q, sizes=None):
    """The plates' corner polygons at q (plates, 4, 2)."""
    q = np.asarray(q).reshape(-1, 3)
    sizes = np.ones(len(q)) if sizes is None else np.asarray(sizes)
    corners = np.array([auxetic.CORNERS[c] for c in ("tr", "tl", "bl", "br")]) / 2
    c, s = np.cos(q[:, 2]), np.sin(q[:, 2])
    R = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)  # (plates, 2, 2)
    return q[:, None, :2] + np.einsum("pij,kj->pki", R, corners) * sizes[:, None, None]


def hinge_positions(model, q):
    """The hinges' global points at q (hinges, 2)."""
    q = np.asarray(q)
    out = []
    for name, *_ in auxetic.hinges(*grid_size(model)):
        pair = model.pair(name)
        k = model.body_names.index(pair.i.name)
        x, y, phi = q[3 * k : 3 * k + 3]
        s = np.asarray(pair.s_i)
        out.append(
            [
                x + np.cos(phi) * s[0] - np.sin(phi) * s[1],
                y + np.sin(phi) * s[0] + np.cos(phi) * s[1],
            ]
        )
    return np.asarray(out)


def grid_size(model):
    n = int(round(np.sqrt(model.num_bodies)))
    return n, n


def draw_grid(ax, model, q, values, label, cmap="viridis", norm=None, sizes=None, marker=None):
    """Plates in light grey, one dot per hinge coloured by `values`; a colour bar."""
    ax.add_collection(
        PolyCollection(plates(model, q, sizes), facecolor="0.88", edgecolor="0.55", linewidth=0.4)
    )
    points = hinge_positions(model, q)
    size = max(4.0, 900.0 / len(points) ** 0.8)
    dots = ax.scatter(
        points[:, 0],
        points[:, 1],
        c=values,
        s=size,
        cmap=cmap,
        norm=norm,
        marker=marker or "o",
        zorder=3,
        linewidths=0,
    )
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.set_xticks([])
    ax.set_yticks([])
    plt.colorbar(dots, ax=ax, shrink=0.8, label=label)
    return dots


# ----- 1. solvability ----------------------------------------------------------------------
def solvability(n, out):
    model = auxetic.build(n, theta=THETA)
    start = time.perf_counter()
    report = mb.solvability(model, model.q0, method="sparse")
    seconds = time.perf_counter() - start
    _, rows, rank, p, dof = auxetic.counts(n)
    assert (int(report.rank), int(report.redundancy), int(report.dof)) == (rank, p, dof)
    names = [h[0] for h in auxetic.hinges(n, n)]
    solvable = report.solvable_dict()
    unique = [h for h in names if solvable[h]]
    b = dict(zip(report.pair_names, np.asarray(report.b_norm)))
    say(
        f"1. solvability of the {n} x {n} grid ({model.num_bodies} plates, {rows} rows): "
        f"rank {rank}, p = {p}, dof = {dof}; unique: the weld 'hold' "
        f"{'and ' + str(len(unique)) + ' hinges' if unique else 'and no hinge'} "
        f"({seconds:.2f} s with compilation, method 'sparse')"
    )
    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    values = np.asarray([b[h] for h in names])
    draw_grid(ax, model, model.q0, values, "|B_X| (0: unique; seed 001 eq. 27)", cmap="magma_r")
    ax.set_title(
        f"{n} x {n} rotating squares: how far each hinge force is from unique\n"
        f"(p = {p} self-stresses; no hinge is unique with one plate held)",
        fontsize=10,
    )
    path = plotting.save_figure(fig, os.path.join(out, "metamaterial_solvability.png"))
    return dict(
        rank=int(report.rank),
        p=int(report.redundancy),
        dof=int(report.dof),
        unique_hinges=unique,
        seconds=seconds,
        figure=path,
    )


# ----- 2. hinge forces under load ----------------------------------------------------------
def hinge_forces(n, out):
    model = auxetic.build(n, theta=THETA, pull=PULL, lock_mode=True)
    k = stiffness(n)
    start = time.perf_counter()
    compliant = mb.statics(model, model.q0, method=mb.Compliance(k, default=1e7))
    seconds = time.perf_counter() - start
    with warnings.catch_warnings():  # shown as what it is: one answer of infinitely many
        warnings.simplefilter("ignore", mb.NonUniqueReactionWarning)
        rigid = mb.statics(model, model.q0)
    fc = np.asarray(auxetic.hinge_forces(model, compliant.lam))
    fr = np.asarray(auxetic.hinge_forces(model, rigid.lam))
    mode_torque = float(np.asarray(compliant.lam)[model.rows("mode")][0])
    say(
        f"2. hinge forces, pulled at two edges ({PULL} N per plate), mode held (torque "
        f"{mode_torque:.4g} N m, unique): largest {fc.max():.4g} N with the ligaments' "
        f"stiffness, {fr.max():.4g} N by min-norm; they differ by up to "
        f"{np.max(np.abs(fc - fr)):.3g} N ({seconds:.2f} s with compilation)"
    )
    fig, axes = plt.subplots(1, 2, figsize=(11.5, 5.0))
    norm = plt.Normalize(0.0, max(fc.max(), fr.max()))
    draw_grid(axes[0], model, model.q0, fc, "hinge force (N)", norm=norm)
    axes[0].set_title("set by the ligaments' stiffness (mb.Compliance)", fontsize=10)
    draw_grid(axes[1], model, model.q0, fr, "hinge force (N)", norm=norm)
    axes[1].set_title("minimum-norm multipliers (rigid model: one of infinitely many)", fontsize=10)
    fig.suptitle(f"{n} x {n} grid pulled outwards at left and right edges, mode held", fontsize=11)
    path = plotting.save_figure(fig, os.path.join(out, "metamaterial_forces.png"))
    return dict(
        model=model,
        stiffness=k,
        compliance=compliant,
        min_norm=rigid,
        largest_compliance=float(fc.max()),
        largest_min_norm=float(fr.max()),
        mode_torque=mode_torque,
        seconds=seconds,
        figure=path,
    )


# ----- 3. motion ---------------------------------------------------------------------------
def motion(n, out, frames):
    pull = 4.0 * PULL * n  # strong enough to open the grid visibly in 1 s
    model = auxetic.build(n, theta=THETA, pull=pull)
    ts = jnp.linspace(0.0, 1.0, frames)
    start = time.perf_counter()
    traj = mb.simulate(model, model.q0, jnp.zeros(model.n), 1.0, ts=ts, rtol=1e-10, atol=1e-12)
    seconds = time.perf_counter() - start
    q, qd = np.asarray(traj.q), np.asarray(traj.qd)
    kinetic = 0.5 * np.sum(np.asarray(model.mass_diagonal()) * qd**2, axis=1)
    left = [3 * (n * j) for j in range(n)]
    right = [3 * (n - 1 + n * j) for j in range(n)]
    work = pull * (
        np.sum(q[:, right] - q[0, right], axis=1) - np.sum(q[:, left] - q[0, left], axis=1)
    )
    balance = float(np.max(np.abs(kinetic - work)) / np.max(kinetic))
    opening = (q[:, 5] - q[:, 2]) / 2  # half the angle between plates (1, 0) and (0, 0)
    width = q[:, 3 * (n - 1)] - q[:, 0]
    top = 3 * n * (n - 1)
    height = q[:, top + 1] - q[:, 1]
    poisson = -float(((height[-1] / height[0]) - 1) / ((width[-1] / width[0]) - 1))
    say(
        f"3. motion under the edge pull ({pull:g} N per plate), 1 s: theta {opening[0]:.3f} -> "
        f"{opening[-1]:.3f} rad, {int(traj.num_steps)} steps ({seconds:.2f} s with "
        f"compilation); kinetic energy = work of the pull to {balance:.1e}; Poisson's ratio "
        f"{poisson:.4f}"
    )
    fig, axes = plotting.new_figure(1, 2, size=(5.2, 3.8))
    axes = axes.ravel()
    axes[0].plot(ts, opening, color="C0")
    axes[0].set_xlabel("t (s)")
    axes[0].set_ylabel("theta (rad)")
    axes[0].set_title("opening angle of the mode", fontsize=10)
    axes[1].plot(ts, kinetic, color="black", lw=2.0, label="kinetic energy")
    axes[1].plot(ts, work, color="C1", ls="--", label="work of the pull")
    axes[1].set_xlabel("t (s)")
    axes[1].set_ylabel("J")
    axes[1].legend(fontsize=8)
    axes[1].set_title(f"energy balance (max difference {balance:.1e} relative)", fontsize=10)
    for ax in axes:
        ax.grid(True, color="0.9")
    path = plotting.save_figure(fig, os.path.join(out, "metamaterial_motion.png"))
    gif = animate(model, q, np.asarray(ts), os.path.join(out, "metamaterial.gif"))
    return dict(
        theta=(float(opening[0]), float(opening[-1])),
        energy_balance=balance,
        poisson=poisson,
        steps=int(traj.num_steps),
        seconds=seconds,
        figure=path,
        gif=gif,
    )


def animate(model, q, ts, path):
    """The grid's plates over time, framed on the last (widest) configuration."""
    fig, ax = plt.subplots(figsize=(4.2, 4.2))
    fig.subplots_adjust(0.01, 0.01, 0.99, 0.93)
    last = plates(model, q[-1]).reshape(-1, 2)
    pad = 0.05 * np.ptp(last, axis=0).max()
    ax.set_xlim(last[:, 0].min() - pad, last[:, 0].max() + pad)
    ax.set_ylim(last[:, 1].min() - pad, last[:, 1].max() + pad)
    ax.set_aspect("equal")
    ax.axis("off")
    polys = PolyCollection(plates(model, q[0]), facecolor="0.8", edgecolor="0.3", lw=0.4)
    ax.add_collection(polys)
    title = ax.set_title("", fontsize=10)

    def frame(k):
        polys.set_verts(plates(model, q[k]))
        title.set_text(f"rotating squares pulled at two edges, t = {ts[k]:.2f} s")
        return polys, title

    anim = animation.FuncAnimation(fig, frame, frames=len(ts), blit=False)
    anim.save(path, writer=animation.PillowWriter(fps=12), dpi=90)
    plt.close(fig)
    return path


# ----- 4. inverse design -------------------------------------------------------------------
def design_loss(n, k):
    """The 8-norm of the hinge forces of the pulled, held grid with plate sizes and hinge
    offsets `params` (relative to the nominal side 1): a smooth maximum."""
    method = mb.Compliance(k, default=1e7)  # made once: its numbers are constants of the program

    def loss(params):
        sizes, offsets = params
        model = auxetic.build(
            n, theta=THETA, pull=PULL, lock_mode=True, sizes=sizes, offsets=offsets
        )
        rx = mb.statics(model, model.q0, method=method)
        forces = auxetic.hinge_forces(model, rx.lam)
        return jnp.sum(forces**DESIGN_POWER) ** (1.0 / DESIGN_POWER), forces

    return loss


def project(params):
    sizes, offsets = params
    return (jnp.clip(sizes, *SIZE_BOUNDS), jnp.clip(offsets, -OFFSET_BOUND, OFFSET_BOUND))


def inverse_design(n, out, steps):
    k = stiffness(n)
    loss = design_loss(n, k)
    value_and_grad = jax.jit(jax.value_and_grad(loss, has_aux=True))
    hinges = len(auxetic.hinges(n, n))
    params = (jnp.ones(n * n), jnp.zeros((hinges, 2)))
    start = time.perf_counter()
    (value, forces0), grads = value_and_grad(params)
    first = time.perf_counter() - start
    # the gradient against central differences on its three largest entries of each kind
    # (relative to the largest: far from the load the entries are round-off)
    h = 1e-5  # central differences: truncation h^2, round-off eps / h, both near 1e-10
    checks = []
    for kind in (0, 1):
        g = np.asarray(grads[kind])
        for flat in np.argsort(-np.abs(g).ravel())[:3]:
            index = np.unravel_index(flat, g.shape)
            e = jnp.zeros_like(params[kind]).at[index].set(h)
            shifted = [
                (params[0] + s * e, params[1]) if kind == 0 else (params[0], params[1] + s * e)
                for s in (1.0, -1.0)
            ]
            fd = (value_and_grad(shifted[0])[0][0] - value_and_grad(shifted[1])[0][0]) / (2 * h)
            checks.append(abs(float(g[index]) - float(fd)) / np.max(np.abs(g)))
    say(
        f"4. inverse design: {n * n} plate sizes and {2 * hinges} hinge offsets; gradient "
        f"(reverse mode, {first:.1f} s with compilation) against central differences: "
        f"largest difference {max(checks):.1e} of the largest entry"
    )
    optimizer = optax.adam(0.01)
    state = optimizer.init(params)
    history = [float(value)]
    start = time.perf_counter()
    for _ in range(steps):
        with jax.numpy_dtype_promotion("standard"):  # optax mixes its int32 step count in
            updates, state = optimizer.update(grads, state, params)
        params = project(optax.apply_updates(params, updates))
        (value, forces), grads = value_and_grad(params)
        history.append(float(value))
    seconds = time.perf_counter() - start
    peak0, peak1 = float(jnp.max(forces0)), float(jnp.max(forces))
    say(
        f"   {steps} Adam steps ({seconds:.2f} s): 8-norm {history[0]:.4g} -> {history[-1]:.4g}"
        f" N, largest hinge force {peak0:.4g} -> {peak1:.4g} N"
    )
    model0 = auxetic.build(n, theta=THETA)
    model1 = auxetic.build(n, theta=THETA, sizes=params[0], offsets=params[1])
    dof = int(mb.solvability(model1, model1.q0, method="sparse").dof)
    say(
        f"   the designed pattern without the mode driver: dof = {dof}"
        + (
            " (generic sizes and offsets close the auxetic mode: the pull is then carried by "
            "the ligaments as a structure, not by the driver)"
            if dof == 0
            else ""
        )
    )
    fig, axes = plt.subplots(1, 3, figsize=(15.0, 4.6))
    axes[0].plot(history, marker="o", ms=3)
    axes[0].set_xlabel("Adam step")
    axes[0].set_ylabel("8-norm of the hinge forces (N)")
    axes[0].grid(True, color="0.9")
    axes[0].set_title("smooth peak hinge force", fontsize=10)
    norm = plt.Normalize(0.0, max(peak0, peak1))
    draw_grid(axes[1], model0, model0.q0, np.asarray(forces0), "hinge force (N)", norm=norm)
    axes[1].set_title("nominal pattern", fontsize=10)
    draw_grid(
        axes[2],
        model1,
        model1.q0,
        np.asarray(forces),
        "hinge force (N)",
        norm=norm,
        sizes=params[0],
    )
    axes[2].set_title("designed plate sizes and ligament positions", fontsize=10)
    path = plotting.save_figure(fig, os.path.join(out, "metamaterial_design.png"))
    return dict(
        gradient_check=max(checks),
        history=history,
        peak=(peak0, peak1),
        dof=dof,
        first_call=first,
        seconds=seconds,
        figure=path,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 5 x 5 grid, few steps")
    parser.add_argument("--n", type=int, default=None, help="plates per side (default 20)")
    parser.add_argument("--out", default="out")
    args = parser.parse_args(argv)
    mb.log_progress()  # say on stderr what compiles, and for how long
    n = args.n or (5 if args.quick else 20)
    os.makedirs(args.out, exist_ok=True)
    say(f"rotating squares, {n} x {n} plates (this takes a while the first time: compiling)")
    return dict(
        n=n,
        solvability=solvability(n, args.out),
        forces=hinge_forces(n, args.out),
        motion=motion(n, args.out, frames=9 if args.quick else 41),
        design=inverse_design(n, args.out, steps=3 if args.quick else 30),
    )


if __name__ == "__main__":
    main()
