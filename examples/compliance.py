"""Compliance-resolved joint reactions (issue 20): what the bearings and tyres really carry.

    python examples/compliance.py [--quick] [--out out]

1. The mobile robot of seed 001 over its manoeuvre: the reactions of the wheel holder's bearing B
   and of the tyres W1-W4 (not unique in the rigid model) by the four rigid variants of seed 001
   section 4.4 (min-norm and the three eliminations) and by `mb.Compliance` with plausible tyre
   and bearing stiffness (`mobile_robot.STIFFNESS`): robot_compliance.png.
2. The rigid limit: the compliant models of `jaxmb.rigid_limit` (bushings s K for revolutes,
   tyres s D for knife edges) against the Compliance reactions of the rigid ones, error against
   s on log-log axes with the 1/s slope (benchmarks/results/rigid_limit.json when present, else
   the parallelogram's statics computed here): rigid_limit.png.
3. Units: the propped cantilever (a beam clamped at one end, propped at the other, p = 2) in
   m, kg and in mm, t (forces in N in both): Compliance's reactions transform as physics says
   (forces equal, moments times 1000), the minimum-norm ones do not. Printed as a table.
"""

import argparse
import json
import os
import time
import warnings

import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import jaxmb as mb  # first: float64 and the XLA CPU flags
from jaxmb import plotting, rigid_limit
from jaxmb.models import mobile_robot
from jaxmb.studies import PAPER_VARIANTS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results", "rigid_limit.json")
ROBOT_PAIRS = ("B", "C", "W1", "W2", "W3", "W4")
"""The robot's pairs whose rigid reactions are not unique (seed 001, section 4.2)."""


# ----- 1. the robot -------------------------------------------------------------------------
def robot_reactions(t_end=20.0, num_saves=201, compliance=None):
    """Simulate the robot once (null-space formulation) and compute its reactions by every rigid
    variant of seed 001 section 4.4 and by `compliance` (default `mobile_robot.compliance()`).

    **Returns:** dict with `model`, `ts`, `trajectory`, `reactions` {label: Reactions}."""
    model = mobile_robot.build(t_end=t_end)
    ts = jnp.linspace(0.0, t_end, num_saves)
    traj = mb.simulate(model, model.q0, mobile_robot.initial_velocity(model), t_end, ts=ts)
    methods = {
        label: ("min_norm" if f == "null_space" else f) for label, f in PAPER_VARIANTS.items()
    }
    methods["Compliance (tyres 500 N s/m, bearings 2e7 N/m)"] = (
        mobile_robot.compliance() if compliance is None else compliance
    )
    with warnings.catch_warnings():  # the rigid variants are shown as what they are
        warnings.simplefilter("ignore", mb.NonUniqueReactionWarning)
        rxs = {label: mb.reactions(model, traj, method=m) for label, m in methods.items()}
    return dict(model=model, ts=np.asarray(ts), trajectory=traj, reactions=rxs)


def plot_robot(result, path):
    """Six panels: the lateral force of B on holder W1 (global y) and of C on holder W2, and
    the tyre forces W1-W4, by every method; Compliance in black."""
    model, ts, rxs = result["model"], result["ts"], result["reactions"]
    fig, axes = plotting.new_figure(2, 3, size=(5.0, 3.6))
    panels = [
        ("B", "holder_W1", "force of bearing B on holder W1, y (N)"),
        ("C", "holder_W2", "force of bearing C on holder W2, y (N)"),
    ]
    panels += [(w, None, f"tyre {w}: lateral force (N)") for w in ROBOT_PAIRS[2:]]
    for ax, (pair, body, title) in zip(axes.ravel(), panels):
        for k, (label, rx) in enumerate(rxs.items()):
            physical = label.startswith("Compliance")
            y = (
                np.asarray(rx.on_body(pair, body)[1])
                if body
                else np.asarray(rx.lam[:, model.rows(pair)])[:, 0]
            )
            ax.plot(
                ts,
                y,
                color="black" if physical else plt.get_cmap("tab10")(k),
                lw=2.2 if physical else 1.0,
                ls="-" if physical else "--",
                label=label,
            )
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("t (s)")
        ax.grid(True, color="0.9")
    axes[0, 0].legend(fontsize=7, loc="best")
    fig.suptitle(
        "Mobile robot (seed 001): reactions that are not unique in the rigid model; "
        "dashed: the rigid variants, black: set by the joints' compliance",
        fontsize=10,
    )
    return plotting.save_figure(fig, path)


# ----- 2. the rigid limit -------------------------------------------------------------------
def convergence(quick=False, path=RESULTS):
    """{study: dict(title, scales, errors, rates)}: the benchmark's sweeps when its results
    file exists, else the parallelogram's statics (`rigid_limit.parallelogram_statics`)."""
    if os.path.exists(path):
        with open(path) as fh:
            data = json.load(fh)
        return {k: v for k, v in data.items() if isinstance(v, dict)}
    scales = [10.0, 100.0, 1000.0] if quick else [1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0]
    r = rigid_limit.parallelogram_statics(scales)
    return {
        "statics": dict(
            title="(a) parallelogram statics, bushings s K",
            scales=r["scales"].tolist(),
            errors=r["errors"].tolist(),
            rates=r["rates"].tolist(),
        )
    }


def plot_convergence(studies, path):
    """Relative error against the stiffness scale s, log-log, with a 1/s guide."""
    fig, axes = plotting.new_figure(1, 1, size=(7.0, 4.8))
    ax = axes[0, 0]
    for k, study in enumerate(studies.values()):
        s, e = np.asarray(study["scales"]), np.asarray(study["errors"])
        rate = np.mean(study["rates"][-2:])
        ax.loglog(
            s, e, "o-", color=plt.get_cmap("tab10")(k), label=f"{study['title']}: rate {rate:+.3f}"
        )
        ax.loglog(s, e[0] * s[0] / s, ":", color=plt.get_cmap("tab10")(k), lw=0.8)
    ax.set_xlabel("stiffness scale s")
    ax.set_ylabel("max |compliant force - Compliance reaction| / max |reaction|")
    ax.set_title(
        "The rigid limit: compliant models converge to mb.Compliance as 1/s (dotted)", fontsize=10
    )
    ax.grid(True, which="both", color="0.9")
    ax.legend(fontsize=8)
    return plotting.save_figure(fig, path)


# ----- 3. units -----------------------------------------------------------------------------
CANTILEVER_SI = dict(
    L=2.0, a=1.3, load=(3.0, -40.0), mass=4.0, g=9.81, clamp=(3e6, 5e6, 2e5), prop=(4e6, 1e6)
)
"""Lengths m, mass kg, forces N; stiffness N/m, N/m, N m/rad (clamp), N/m (prop)."""


def in_millimetres(c):
    """The same cantilever in mm, t, s (forces still in N): lengths x 1000, masses / 1000,
    gravity 9810 mm/s^2, stiffness N/mm (/ 1000) and N mm/rad (x 1000)."""
    (kx, ky, kp), (px, py) = c["clamp"], c["prop"]
    return dict(
        L=1e3 * c["L"],
        a=1e3 * c["a"],
        load=c["load"],
        mass=1e-3 * c["mass"],
        g=1e3 * c["g"],
        clamp=(kx / 1e3, ky / 1e3, kp * 1e3),
        prop=(px / 1e3, py / 1e3),
    )


def cantilever(L, a, load, mass, g, **_):
    """A beam of length L welded to the ground at x = 0 ("clamp"), pinned at x = L ("prop"),
    loaded by `load` at x = a and by gravity."""
    m = mb.Mechanism()
    beam = m.body("beam", mass=mass, inertia=mass * L**2 / 12, q=(L / 2, 0.0, 0.0))
    m.add(mb.Weld("clamp", m.ground, beam, s_i=(0.0, 0.0), s_j=(-L / 2, 0.0)))
    m.add(mb.Revolute("prop", m.ground, beam, s_i=(L, 0.0), s_j=(L / 2, 0.0)))
    m.add(mb.Force("P", beam, s=(a - L / 2, 0.0), f=load))
    m.add(mb.Gravity((0.0, -g)))
    return m.build()


def units_table(si=CANTILEVER_SI):
    """Rows (quantity, SI unit, Compliance in m, Compliance in mm converted to SI, min-norm in m,
    min-norm in mm converted): the clamp's and the prop's forces on the beam (global x, y) and
    the clamp's moment on the beam."""
    values = {}
    for label, c in (("m", si), ("mm", in_millimetres(si))):
        model = cantilever(**c)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mb.NonUniqueReactionWarning)
            for method in ("Compliance", "min-norm"):
                m = (
                    mb.Compliance({"clamp": c["clamp"], "prop": c["prop"]})
                    if method == "Compliance"
                    else mb.MinNorm()
                )
                lam = np.asarray(mb.statics(model, model.q0, method=m).lam)
                to_si = np.array([1.0, 1.0, 1e-3, 1.0, 1.0]) if label == "mm" else 1.0
                # on the beam: the position rows' multipliers, minus the angle row's
                values[method, label] = lam * to_si * np.array([1.0, 1.0, -1.0, 1.0, 1.0])
    quantities = [
        ("clamp Fx", "N"),
        ("clamp Fy", "N"),
        ("clamp moment", "N m"),
        ("prop Fx", "N"),
        ("prop Fy", "N"),
    ]
    return [
        (q, u, *(values[m, lab][k] for m in ("Compliance", "min-norm") for lab in ("m", "mm")))
        for k, (q, u) in enumerate(quantities)
    ]


def print_units_table(rows):
    print(
        "Propped cantilever in m and in mm (reactions in SI units, the mm model's converted "
        "back): Compliance transforms as physics says, the minimum norm does not"
    )
    print(
        f"  {'quantity':<14}{'unit':<6}{'Compliance m':>14}{'Compliance mm':>15}"
        f"{'min-norm m':>13}{'min-norm mm':>13}"
    )
    for q, u, a, b, c, d in rows:
        print(f"  {q:<14}{u:<6}{a:>14.6g}{b:>15.6g}{c:>13.6g}{d:>13.6g}")


# ----- main ---------------------------------------------------------------------------------
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a shorter robot run")
    parser.add_argument("--out", default="out", help="folder for the figures (default out/)")
    args = parser.parse_args(argv)
    mb.log_progress()  # say on stderr what compiles, and for how long
    os.makedirs(args.out, exist_ok=True)
    start = time.perf_counter()
    print("robot: simulating the manoeuvre and resolving its reactions 5 ways ...", flush=True)
    robot = robot_reactions(*((5.0, 51) if args.quick else (20.0, 201)))
    figures = [plot_robot(robot, os.path.join(args.out, "robot_compliance.png"))]
    print(f"robot: reactions by 5 methods along the manoeuvre, {time.perf_counter() - start:.1f} s")
    print("rigid limit: compliance studies at decreasing flexibility ...", flush=True)
    studies = convergence(args.quick)
    figures.append(plot_convergence(studies, os.path.join(args.out, "rigid_limit.png")))
    for study in studies.values():
        rates = ", ".join(f"{r:+.3f}" for r in study["rates"])
        print(
            f"{study['title']}: errors {study['errors'][0]:.2e} (s = {study['scales'][0]:g}) "
            f"to {study['errors'][-1]:.2e} (s = {study['scales'][-1]:g}); rates {rates}"
        )
    rows = units_table()
    print_units_table(rows)
    for path in figures:
        print(f"wrote {path}")
    return dict(robot=robot, studies=studies, units=rows, figures=figures)


if __name__ == "__main__":
    main()
