"""Seed 004 section 5: inverse dynamics of the composed (double) pendulum, jaxmb vs closed forms.

Drives the two rods by phi10(t) = (pi/12)(1 - cos(pi t/6)) and phi21(t) = (pi/6)(1 - cos(pi t/6))
over 0..6 s, computes the multipliers with `mb.inverse_dynamics` and compares with the paper's
closed forms (5.7) (torques M1, M2) and (5.8) (support force f10x), plus the fictitious-mobility
model of section 4 (support O1 freed along the paper's x axis and held by a driver). Writes

    pendulum_angles.png  relative angles phi10, phi21
    pendulum_M1.png      active torque of the first rod (the paper's Fig. 3)
    pendulum_M2.png      active torque of the second rod (Fig. 4)
    pendulum_f10.png     joint force of O1 on rod 1 (Fig. 5): paper-x (vertical, down; eq. 5.8)
                         and paper-y (horizontal) components
    pendulum_f21.png     joint force of O2 on rod 2 (Fig. 6): vertical and horizontal components

into --out (default out/). The paper's frame has x DOWN and y to the right: paper (x, y) =
(-Y, X) in jaxmb's global frame. (Fig. 5's caption says "horizontal" but eq. 5.8, which contains
-(m1 + m2) g, is the vertical component; both are drawn.)

    python examples/composed_pendulum.py            # 601 instants
    python examples/composed_pendulum.py --quick    # 61 instants (the tests use this)
"""

import argparse
import os

import jax
import numpy as np

import jaxmb as mb
from jaxmb.models import composed_pendulum as cp
from jaxmb.plotting import new_figure, save_figure


def _panel(ax, t, computed, closed, title, ylabel, label_closed):
    ax.plot(t, closed, "-", lw=2.5, alpha=0.5, label=label_closed)
    ax.plot(t, computed, "--", lw=1.2, label="jaxmb inverse dynamics")
    ax.set_title(title, fontsize="medium")
    ax.set_xlabel("t (s)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="61 instants instead of 601")
    parser.add_argument("--out", default="out", help="folder for the figures")
    args = parser.parse_args(argv)
    mb.log_progress()  # say on stderr what compiles, and for how long
    os.makedirs(args.out, exist_ok=True)

    ts = np.linspace(0.0, 6.0, 61 if args.quick else 601)
    closed = cp.closed_form(ts)
    solve = jax.jit(lambda m: mb.inverse_dynamics(m, ts))

    model = cp.build()
    print(f"composed pendulum: inverse dynamics at {len(ts)} instants ...", flush=True)
    traj, rx = solve(model)
    q = np.asarray(traj.q)
    fx1, fy1, _ = (np.asarray(a) for a in rx.on_body("O1", "rod1"))
    fx2, fy2, _ = (np.asarray(a) for a in rx.on_body("O2", "rod2"))
    computed = {
        "phi10": q[:, 2] + np.pi / 2,
        "phi21": q[:, 5] - q[:, 2],
        "M1": np.asarray(rx.on_body("M1", "rod1")[2]),  # torque of motor M1 on rod 1
        "M2": np.asarray(rx.on_body("M2", "rod2")[2]),  # torque of motor M2 on rod 2
        "f10x": -fy1,
        "f10y": fx1,
        "f21x": -fy2,
        "f21y": fx2,
    }

    # fictitious mobility (seed 004, section 4): free O1 along the paper's x axis (down)
    fict = cp.build_fictitious(direction=(0.0, -1.0))
    _, rx_f = solve(fict)
    support_weight = float(fict.masses[0]) * cp.G
    computed["f10x_fictitious"] = np.asarray(rx_f.lam[:, fict.rows("X")][:, 0]) + support_weight

    deviation = {
        k: float(np.max(np.abs(computed[k] - closed[k])))
        for k in ("phi10", "phi21", "M1", "M2", "f10x", "f10y", "f21x", "f21y")
    }
    deviation["f10x_fictitious"] = float(
        np.max(np.abs(computed["f10x_fictitious"] - closed["f10x"]))
    )

    t = ts
    figures = []
    fig, axes = new_figure(1, 2, size=(5.0, 3.8))
    _panel(
        axes[0, 0],
        t,
        computed["phi10"],
        closed["phi10"],
        "phi10 (rod 1 vs ground)",
        "rad",
        "drive law (5.11)",
    )
    _panel(
        axes[0, 1],
        t,
        computed["phi21"],
        closed["phi21"],
        "phi21 (rod 2 vs rod 1)",
        "rad",
        "drive law (5.11)",
    )
    figures.append(save_figure(fig, os.path.join(args.out, "pendulum_angles.png")))
    for key, title, fname in (
        ("M1", "Active torque of first rod (Fig. 3)", "pendulum_M1.png"),
        ("M2", "Active torque of second rod (Fig. 4)", "pendulum_M2.png"),
    ):
        fig, axes = new_figure(1, 1, size=(6.0, 4.0))
        _panel(
            axes[0, 0], t, computed[key], closed[key], title, f"{key} (N m)", "closed form (5.7)"
        )
        figures.append(save_figure(fig, os.path.join(args.out, fname)))
    fig, axes = new_figure(1, 2, size=(5.5, 4.0))
    _panel(
        axes[0, 0],
        t,
        computed["f10x"],
        closed["f10x"],
        "O1 on rod 1, paper x (vertical, down)",
        "f10x (N)",
        "closed form (5.8)",
    )
    axes[0, 0].plot(t, computed["f10x_fictitious"], ":", lw=1.2, label="fictitious mobility")
    axes[0, 0].legend(fontsize="small")
    _panel(
        axes[0, 1],
        t,
        computed["f10y"],
        closed["f10y"],
        "O1 on rod 1, paper y (horizontal) (Fig. 5)",
        "f10y (N)",
        "Newton-Euler",
    )
    figures.append(save_figure(fig, os.path.join(args.out, "pendulum_f10.png")))
    fig, axes = new_figure(1, 2, size=(5.5, 4.0))
    _panel(
        axes[0, 0],
        t,
        computed["f21x"],
        closed["f21x"],
        "O2 on rod 2, paper x (vertical, down) (Fig. 6)",
        "f21x (N)",
        "Newton-Euler",
    )
    _panel(
        axes[0, 1],
        t,
        computed["f21y"],
        closed["f21y"],
        "O2 on rod 2, paper y (horizontal)",
        "f21y (N)",
        "Newton-Euler",
    )
    figures.append(save_figure(fig, os.path.join(args.out, "pendulum_f21.png")))

    print(f"Composed pendulum (seed 004), {len(ts)} instants over 0..6 s")
    print(f"{'quantity':<18}{'max |closed form|':>20}{'max |jaxmb - closed|':>24}")
    for key, dev in deviation.items():
        ref = closed["f10x" if key == "f10x_fictitious" else key]
        print(f"{key:<18}{np.max(np.abs(ref)):>20.6g}{dev:>24.2e}")
    for path in figures:
        print(f"wrote {path}")
    return {
        "ts": ts,
        "closed": closed,
        "computed": computed,
        "deviation": deviation,
        "figures": figures,
        "model": model,
    }


if __name__ == "__main__":
    main()
