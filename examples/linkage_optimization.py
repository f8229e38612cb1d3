"""Four-bar dimension optimization by gradient: coupler curve, driving torque, joint reactions.

A crank-rocker four-bar is driven at constant crank speed (driver "motor", ground -> crank).
Its nine dimensions p = (a, b, c, O2x, O2y, O4x, O4y, u, v) -- crank, coupler and rocker
lengths, the two ground pivots, and the coupler point (u, v) in the coupler frame (origin at
the middle of AB, x axis from A to B) -- are tuned to minimise

    L(p) = E_path + w_tau * smax_t |tau(t)| + w_R * smax_{t, X solvable} |F_X(t)| + P_grashof

- E_path: mean squared distance (in cm^2) between the coupler point at prescribed crank angles
  and six targets (taken from the coupler curve of a reference linkage, so a perfect match
  exists; the start is a poor, perturbed design);
- tau(t): the driving torque and F_X(t) the force of the solvable revolute joints, from
  `mb.inverse_dynamics` at N crank angles of one revolution (links are slender rods whose mass
  is proportional to their length, so heavier, longer links cost torque); smax is the p-norm
  (mean x^8)^(1/8), a smooth stand-in for the maximum;
- P_grashof: a quadratic penalty once a margin of the crank-rocker condition (see
  `four_bar.grashof_margins`) falls under 1 cm, so the linkage keeps assembling over the whole
  revolution. The optimizer also rejects (halves) a step that would break the condition.

Gradients come from `jax.grad` through the implicit derivative of `assemble`, the velocity and
acceleration solves and the multipliers; the optimizer is Adam (optax) with a cosine-decayed
learning rate.

    python examples/linkage_optimization.py            # 48 crank angles, 1000 iterations
    python examples/linkage_optimization.py --quick    # 12 crank angles, 300 iterations
"""

import argparse
import dataclasses
import functools
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

import jaxmb as mb  # first: float64 and the XLA CPU flags
from jaxmb.models import four_bar

PARAM_NAMES = ("a", "b", "c", "O2x", "O2y", "O4x", "O4y", "u", "v")
"""Order of the entries of the parameter vector p (metres)."""

REFERENCE = np.array([0.10, 0.30, 0.28, 0.0, 0.0, 0.30, 0.05, 0.06, 0.12])
"""The linkage whose coupler curve supplies the targets."""

INITIAL = np.array([0.07, 0.36, 0.22, 0.04, -0.05, 0.34, 0.12, 0.0, 0.04])
"""A poor starting design (still a Grashof crank-rocker)."""

JOINTS = (("O2", "crank"), ("A", "coupler"), ("B", "coupler"), ("O4", "rocker"))
"""Revolute joints and the body on which their reaction is measured."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """Problem constants (hashable: a static argument of the jitted functions): crank speed,
    cycle sampling, link density, weights of the loss terms, and whether to compile the
    gradient with `FAST_COMPILE`."""

    num_samples: int = 48
    num_targets: int = 6
    omega: float = 2.0 * np.pi
    theta0: float = 0.3
    density: float = 6.0
    w_torque: float = 2e-3
    w_reaction: float = 2e-4
    p_norm: float = 8.0
    margin_min: float = 0.01
    w_margin: float = 10.0
    path_scale: float = 0.01
    fast_compile: bool = False

    def __post_init__(self):
        if self.num_samples % self.num_targets:
            raise ValueError(
                f"Settings: num_samples ({self.num_samples}) must be a multiple of "
                f"num_targets ({self.num_targets})"
            )

    @property
    def period(self):
        return 2.0 * np.pi / self.omega

    @property
    def ts(self):
        """One crank revolution, num_samples instants (the last one excluded: periodic)."""
        return jnp.arange(self.num_samples, dtype=jnp.float64) * (self.period / self.num_samples)

    @property
    def target_index(self):
        """Cycle samples at which the targets are prescribed (equally spaced crank angles)."""
        return np.arange(self.num_targets) * (self.num_samples // self.num_targets)


def build(p, s):
    """The driven four-bar of parameter vector p."""
    a, b, c, x2, y2, x4, y4 = (p[k] for k in range(7))
    return four_bar.build_pivots(
        a,
        b,
        c,
        jnp.stack([x2, y2]),
        jnp.stack([x4, y4]),
        density=s.density,
        theta0=s.theta0,
        omega=s.omega,
    )


def cycle(p, s):
    """Inverse dynamics over one revolution: q, max |Phi| per sample, coupler point, driving
    torque, joint forces (samples x joints, zero where a reaction is not solvable) and the
    solvable mask."""
    model = build(p, s)
    traj, rx = mb.inverse_dynamics(model, s.ts)
    point = four_bar.coupler_point(traj.q, p[7], p[8])
    torque = rx.on_body("motor", "crank")[2]
    forces, solvable = [], []
    for pair, body in JOINTS:
        fx, fy, _ = rx.on_body(pair, body)
        ok = rx.solvable[pair]
        forces.append(jnp.where(ok, jnp.sqrt(fx**2 + fy**2), 0.0))
        solvable.append(ok)
    phi = jax.vmap(model.phi)(traj.q, traj.ts)
    return dict(
        ts=traj.ts,
        q=traj.q,
        max_phi=jnp.max(jnp.abs(phi), axis=1),
        point=point,
        torque=torque,
        forces=jnp.stack(forces, axis=1),
        solvable=jnp.stack(solvable, axis=1),
    )


def smooth_max(x, p_norm):
    """(mean x^p)^(1/p) of non-negative x (not all zero): between the mean and the maximum,
    smooth; scaled by the (constant) maximum so that x^p cannot overflow."""
    scale = jax.lax.stop_gradient(jnp.max(x))
    return scale * jnp.mean((x / scale) ** p_norm) ** (1.0 / p_norm)


def targets(s):
    """Target points: the reference linkage's coupler point at the prescribed crank angles
    (closed form, `four_bar.configuration_pivots`)."""
    thetas = s.theta0 + s.omega * np.asarray(s.ts)[s.target_index]
    q = closed_form(REFERENCE, thetas)
    return four_bar.coupler_point(jnp.asarray(q), REFERENCE[7], REFERENCE[8])


def margins(p):
    """Crank-rocker (Grashof) margins of design p, metres; all positive: full revolution."""
    d = jnp.sqrt((p[5] - p[3]) ** 2 + (p[6] - p[4]) ** 2)
    return four_bar.grashof_margins(p[0], p[1], p[2], d)


def loss_terms(p, target_points, s):
    """(L(p), terms): path error in cm^2, smooth peak torque (N m) and solvable joint force
    (N), Grashof penalty, and the `cycle` arrays under "cycle"."""
    out = cycle(p, s)
    err = out["point"][s.target_index] - target_points
    path = jnp.mean(jnp.sum(err**2, axis=1)) / s.path_scale**2
    torque = smooth_max(jnp.abs(out["torque"]), s.p_norm)
    reaction = smooth_max(out["forces"].reshape(-1), s.p_norm)
    shortfall = jax.nn.relu(s.margin_min - margins(p)) / s.margin_min
    penalty = s.w_margin * jnp.sum(shortfall**2)
    total = path + s.w_torque * torque + s.w_reaction * reaction + penalty
    return total, dict(path=path, torque=torque, reaction=reaction, penalty=penalty, cycle=out)


def loss(p, target_points, s):
    """The scalar loss L(p) (for jax.grad / jax.jit with s static)."""
    return loss_terms(p, target_points, s)[0]


FAST_COMPILE = {"xla_backend_optimization_level": 0}
"""XLA options used when `Settings.fast_compile`: the reverse pass through the implicit
assemble, the kinematics scan and the reactions is a large graph, and skipping LLVM's
optimizations cuts its compile time from about 30 s to 18 s (2 busy cores) for a run about 2x
slower (12 crank angles: 15 against 8 ms per evaluation; 48: 59 against 28 ms). Worth it for
the quick problem and its tests, not for the 1000 iterations of the full one."""

_VALUE_AND_GRAD = {
    flag: jax.jit(
        jax.value_and_grad(loss_terms, has_aux=True),
        static_argnums=2,
        compiler_options=FAST_COMPILE if flag else {},
    )
    for flag in (False, True)
}


def value_and_grad(p, target_points, s):
    """((L, terms), dL/dp) at (p, target_points, s), jitted and compiled once per Settings
    (the one expensive compilation: everything else reads its outputs)."""
    return _VALUE_AND_GRAD[s.fast_compile](p, target_points, s)


def feasible(p, s):
    """Every crank-rocker margin above a quarter of margin_min (closed form, no solve)."""
    return bool(np.all(np.asarray(margins(np.asarray(p))) > 0.25 * s.margin_min))


def optimize(p0, target_points, s, num_iterations, learning_rate=0.02, log_every=0):
    """Adam with a cosine-decayed step; a step that would break the crank-rocker condition
    is halved until it does not. Returns (p, loss history with the final loss last,
    seconds). Raises on a non-finite gradient.

    b2 = 0.9 (not 0.999): the gradient shrinks by orders of magnitude as the path error
    vanishes and the second-moment estimate must follow it (quick problem, 300 iterations:
    loss down 17000x, against 3000x with the default)."""
    schedule = optax.cosine_decay_schedule(learning_rate, num_iterations, alpha=0.01)
    opt = optax.adam(schedule, b2=0.9)
    p = jnp.asarray(p0, jnp.float64)
    state = opt.init(p)
    history = []
    start = time.perf_counter()
    for k in range(num_iterations):
        (value, _), grad = value_and_grad(p, target_points, s)
        if not np.all(np.isfinite(np.asarray(grad))):
            raise FloatingPointError(f"non-finite gradient at iteration {k}: {grad}")
        history.append(float(value))
        updates, state = opt.update(grad, state, p)
        for _ in range(30):
            if feasible(p + updates, s):
                break
            updates = 0.5 * updates
        p = p + updates
        if log_every and k % log_every == 0:
            print(f"  iteration {k:4d}: loss {float(value):.6g}", flush=True)
    history.append(float(value_and_grad(p, target_points, s)[0][0]))
    return p, np.asarray(history), time.perf_counter() - start


def assembly_check(p, out, s):
    """max |Phi| over the cycle samples (after assemble; `out` is p's `cycle`), the smallest
    crank-rocker margin (positive: the linkage closes at every crank angle, not only at the
    samples) and the largest deviation of the assembled q from the closed-form open branch."""
    thetas = s.theta0 + s.omega * np.asarray(out["ts"])
    dq = np.abs(np.asarray(out["q"]) - closed_form(p, thetas))
    dq = np.minimum(dq, 2 * np.pi - dq)
    return dict(
        max_phi=float(np.max(out["max_phi"])),
        min_margin=float(np.min(margins(np.asarray(p)))),
        branch_deviation=float(np.max(dq)),
    )


def closed_form(p, thetas):
    """q (open branch) at the crank angles thetas from `four_bar.configuration_pivots`."""
    return np.asarray(_closed_form(jnp.asarray(p, jnp.float64), jnp.asarray(thetas)))


@jax.jit
@functools.partial(jax.vmap, in_axes=(None, 0))
def _closed_form(p, theta):
    return jnp.concatenate(four_bar.configuration_pivots(theta, p[0], p[1], p[2], p[3:5], p[5:7]))


def plot(designs, cycles, target_points, s, out_dir):
    """Before/after figures (PNG in out_dir): coupler curve with the targets (dense, closed
    form), driving torque and solvable joint forces at the cycle samples (`cycles`: label ->
    `cycle` output)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {"initial": dict(color="tab:red", ls="--"), "optimized": dict(color="tab:blue")}
    dense = s.theta0 + np.linspace(0.0, 2 * np.pi, 361)
    crank_deg = np.degrees(s.theta0 + s.omega * np.asarray(s.ts))
    crank_deg = np.append(crank_deg, crank_deg[0] + 360.0)
    paths = {}

    fig, ax = plt.subplots(figsize=(6, 5))
    for label, p in designs.items():
        p = np.asarray(p)
        q = closed_form(p, dense)
        pt = np.asarray(four_bar.coupler_point(q, p[7], p[8]))
        ax.plot(pt[:, 0], pt[:, 1], label=f"{label} coupler curve", **styles[label])
        A, B = 2 * q[0, 0:2] - p[3:5], 2 * q[0, 6:8] - p[5:7]
        P = pt[0]
        chain = np.array([p[3:5], A, P, B, A, B, p[5:7]])
        ax.plot(chain[:, 0], chain[:, 1], "o-", lw=1, ms=3, alpha=0.5, color=styles[label]["color"])
    tp = np.asarray(target_points)
    ax.plot(tp[:, 0], tp[:, 1], "k*", ms=11, label="targets")
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title(f"Coupler curve (linkage at crank angle {np.degrees(s.theta0):.0f} deg)")
    ax.legend(fontsize=8)
    paths["coupler_curve"] = _save(fig, out_dir, "coupler_curve.png")

    outs = {label: jax.tree_util.tree_map(np.asarray, out) for label, out in cycles.items()}

    def closed(x):  # repeat the first sample after a full revolution
        return np.concatenate([x, x[:1]])

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, out in outs.items():
        ax.plot(crank_deg, closed(out["torque"]), marker=".", label=label, **styles[label])
    ax.set_xlabel("crank angle [deg]")
    ax.set_ylabel("driving torque [N m]")
    ax.set_title(f"Motor torque over one revolution ({s.num_samples} samples)")
    ax.legend()
    paths["torque"] = _save(fig, out_dir, "torque.png")

    fig, axes = plt.subplots(2, 2, figsize=(9, 6), sharex=True)
    for ax, (k, (pair, body)) in zip(axes.ravel(), enumerate(JOINTS)):
        for label, out in outs.items():
            f = np.where(out["solvable"][:, k], out["forces"][:, k], np.nan)
            ax.plot(crank_deg, closed(f), marker=".", label=label, **styles[label])
        ax.set_title(f"joint {pair}: force on the {body}", fontsize=9)
        ax.set_ylabel("|F| [N]")
    for ax in axes[1]:
        ax.set_xlabel("crank angle [deg]")
    axes[0, 0].legend()
    fig.suptitle("Solvable joint reactions over one revolution (unsolvable samples omitted)")
    paths["reactions"] = _save(fig, out_dir, "reactions.png")
    return paths


def _save(fig, out_dir, name):
    import matplotlib.pyplot as plt

    path = os.path.join(out_dir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def settings_for(quick):
    """(Settings, iterations): 12 crank angles and 300 iterations with quick, else 48 and 1000."""
    if quick:
        return Settings(num_samples=12, fast_compile=True), 300
    return Settings(num_samples=48), 1000


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="12 crank angles, 300 iterations")
    parser.add_argument("--out", default="out", help="folder for the figures (default out/)")
    parser.add_argument("--iterations", type=int, default=None, help="override the count")
    args = parser.parse_args(argv)
    mb.log_progress()  # say on stderr what compiles, and for how long
    s, iterations = settings_for(args.quick)
    iterations = args.iterations or iterations
    os.makedirs(args.out, exist_ok=True)
    print(
        f"four-bar synthesis: {s.num_samples} crank angles, {s.num_targets} targets, "
        f"{iterations} Adam iterations"
    )
    print("  compiling the loss and its gradient ...", flush=True)

    start = time.perf_counter()
    target_points = targets(s)
    p0 = jnp.asarray(INITIAL)
    (_, before), _ = value_and_grad(p0, target_points, s)
    cycles = {"initial": before.pop("cycle")}
    print(f"  compiled in {time.perf_counter() - start:.1f} s")
    print(f"  optimizing: {iterations} iterations ...", flush=True)
    p, history, seconds = optimize(
        p0, target_points, s, iterations, log_every=max(iterations // 6, 1)
    )
    (_, after), _ = value_and_grad(p, target_points, s)
    cycles["optimized"] = after.pop("cycle")
    (loss_reference, reference), _ = value_and_grad(jnp.asarray(REFERENCE), target_points, s)
    reference.pop("cycle")
    check = assembly_check(p, cycles["optimized"], s)
    figures = plot({"initial": p0, "optimized": p}, cycles, target_points, s, args.out)

    print(
        f"loss {history[0]:.6g} -> {history[-1]:.6g}: reduced {history[0] / history[-1]:.4g}x "
        f"in {iterations} iterations, {seconds:.1f} s"
    )
    print(f"{'term':<10}{'initial':>12}{'optimized':>12}{'reference':>12}")
    rows = [("loss", history[0], history[-1], float(loss_reference))]
    rows += [(k, float(before[k]), float(after[k]), float(reference[k])) for k in before]
    for name, *values in rows:
        print(f"{name:<10}" + "".join(f"{v:>12.5g}" for v in values))
    print(f"{'param [m]':<10}{'initial':>12}{'optimized':>12}{'reference':>12}")
    for k, nm in enumerate(PARAM_NAMES):
        print(f"{nm:<10}{float(p0[k]):>12.5f}{float(p[k]):>12.5f}{REFERENCE[k]:>12.5f}")
    print(
        f"assembly over the cycle: max|Phi| = {check['max_phi']:.2e} at the samples, "
        f"smallest Grashof margin {check['min_margin']:.4f} m, |q - closed form| <= "
        f"{check['branch_deviation']:.1e}"
    )
    print("figures: " + ", ".join(figures.values()))
    return dict(
        loss_initial=history[0],
        loss_final=history[-1],
        history=history,
        terms_initial={k: float(v) for k, v in before.items()},
        terms_final={k: float(v) for k, v in after.items()},
        terms_reference={k: float(v) for k, v in reference.items()},
        params_initial=np.asarray(p0),
        params_final=np.asarray(p),
        param_names=PARAM_NAMES,
        target_points=np.asarray(target_points),
        assembly=check,
        figures=figures,
        seconds=seconds,
        settings=s,
    )


if __name__ == "__main__":
    main()
