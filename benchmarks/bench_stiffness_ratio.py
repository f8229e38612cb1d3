"""Where `mb.Compliance` degrades as the stiffness ratio grows (the measurement behind
MAX_STIFFNESS_RATIO and MAX_DAMPING_RATIO in jaxmb/_reaction_methods/compliance.py).

    PYTHONPATH=. python benchmarks/bench_stiffness_ratio.py   # this checkout's jaxmb

On the redundant built-in models (the parallelogram with a load, the seed-001 robot pushed at
rest, the N-four-bar with a rigid coupler, N = 3), each pair in turn is made r times stiffer
and r times softer than all the others, r = 1e6 .. 1e20; the multipliers of the formula
`compliance_multipliers` (called directly, past the limits) are compared with an exact
null-space reference (lambda_p and N in float64, the weighted p x p solves in Fractions). It
prints, per model and ratio, the largest error relative to the largest reaction and the draw
that gave it, and writes them to benchmarks/results/stiffness_ratio.txt.
"""

import os

import _common  # noqa: F401  (first: float64, the XLA flags, jaxmb from the checkout)
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from oracle.exact_compliance import exact_reference

import jaxmb as mb
from jaxmb._reaction_methods.compliance import compliance_multipliers
from jaxmb.models import mobile_robot, n_four_bar, parallelogram

RATIOS = 10.0 ** np.arange(6, 20.5, 0.5)


def models():
    robot = mobile_robot.build()
    push = mb.Force("push", robot.pair("W3").body, s=(0.1, 0.05), f=(4.0, 10.0))
    return {
        "parallelogram": parallelogram.build(load=(3.0, -5.0)),
        "mobile_robot": eqx.tree_at(lambda m: m.force_elements, robot, (push,)),
        "n_four_bar(N=3, rigid coupler)": n_four_bar.build(N=3, angle0=1.0, rigid_coupler=True),
    }


def main():
    lines = []
    for name, model in models().items():
        q, qd = model.q0, jnp.zeros(model.n)
        qdd = mb.accelerations(model, q, qd)
        C = np.asarray(model.C(q, 0.0))
        f = np.asarray(model.forces(q, qd, 0.0) - model.mass_matrix() @ qdd)
        holonomic = np.asarray(model.holonomic_rows)
        pair_of_row = np.asarray(model.row_pair_index)
        lam = jax.jit(
            lambda k: compliance_multipliers(jnp.asarray(C), jnp.asarray(f), k, holonomic)
        )
        lines.append(f"{name}: {C.shape[0]} rows, n = {C.shape[1]}")
        print(lines[-1], flush=True)
        for r in RATIOS:
            worst, which = 0.0, ""
            for index, pair in enumerate(model.pair_names):
                for label, inside, outside in (("stiff", r, 1.0), ("soft", 1.0, r)):
                    k = np.where(pair_of_row == index, inside, outside)
                    ref = exact_reference(C, f, k, holonomic)
                    err = np.max(np.abs(np.asarray(lam(jnp.asarray(k))) - ref))
                    if err / np.max(np.abs(ref)) > worst:
                        worst, which = err / np.max(np.abs(ref)), f"{label} {pair}"
            lines.append(f"  ratio {r:8.2e}  largest error {worst:9.2e}  ({which})")
            print(lines[-1], flush=True)
    path = os.path.join(os.path.dirname(__file__), "results", "stiffness_ratio.txt")
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
