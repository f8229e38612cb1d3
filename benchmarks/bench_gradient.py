"""Benchmark: reverse-mode gradient of a reaction-based loss through a robot simulation.

    python benchmarks/bench_gradient.py            # 20 s manoeuvre
    python benchmarks/bench_gradient.py --quick    # 5 s

Loss: the mean square of the joint-D reaction force on link 4 over the saved instants,
L(a, masses) = mean_t |F_D(t)|^2, as a function of the length unit a and the seven body masses
(8 parameters: the case for reverse mode). The gradient runs diffrax's recursive-checkpoint
adjoint (reverse mode through the solver) and the reactions' derivative rules; it is timed
against the forward run of the same loss (median of repeats after compilation; compile times
separate) and checked against a central finite difference in a.

Two adjoints: jaxmb's default `diffrax.RecursiveCheckpointAdjoint()` (diffrax sizes its
checkpoints from max_steps = 200,000: 632 states, fewer than the ~1,000 steps of the 20 s run,
so segments of the forward solve are recomputed during the backward pass), and
`RecursiveCheckpointAdjoint(checkpoints=CHECKPOINTS)`, more checkpoints than steps, so each
step is recomputed once: the time/memory trade a user makes with
`mb.simulate(..., adjoint=diffrax.RecursiveCheckpointAdjoint(checkpoints=...))`. XLA's memory
analysis of each compiled gradient (temporary buffers) is printed with it.
"""

import argparse

import diffrax
import jax
import jax.numpy as jnp
from _common import block, compile_timed, machine, median_time, table

import jaxmb as mb
from jaxmb.models import mobile_robot

FORMULATION = "default"  # simulate's formulation (--formulation)
CHECKPOINTS = 2048  # > the steps of the 20 s run (about 1,000 at rtol 1e-8)


def make_loss(t_end, num_saves=101, adjoint=None):
    ts = jnp.linspace(0.0, t_end, num_saves)

    def loss(params):
        a, masses = params
        model = mobile_robot.build(a, masses=masses)
        qd0 = mobile_robot.initial_velocity(model)
        traj = mb.simulate(
            model, model.q0, qd0, t_end, ts=ts, adjoint=adjoint, formulation=FORMULATION
        )
        fx, fy, _ = mb.reactions(model, traj).on_body("D", "link_4")
        return jnp.mean(fx**2 + fy**2)

    return loss


def run(quick=False, repeats=None):
    t_end = 5.0 if quick else 20.0
    repeats = repeats or (3 if quick else 5)
    loss = make_loss(t_end)
    params = (jnp.asarray(0.05), jnp.asarray([10.0, 1.0, 1.0, 1.0, 1.0, 1.0, 5.0]))
    fwd, fwd_trace, fwd_xla = compile_timed(loss, params)
    t_fwd = median_time(lambda: block(fwd(params)), repeats)
    rows, out = [["forward (loss)", t_fwd, 1.0, fwd_trace + fwd_xla, "-"]], {}
    for label, adjoint in (
        ("default", None),
        (f"checkpoints={CHECKPOINTS}", diffrax.RecursiveCheckpointAdjoint(checkpoints=CHECKPOINTS)),
    ):
        grad, grad_trace, grad_xla = compile_timed(
            jax.value_and_grad(make_loss(t_end, adjoint=adjoint)), params
        )
        value, g = block(grad(params))
        t_grad = median_time(lambda grad=grad: block(grad(params)), repeats)
        mib = grad.memory_analysis().temp_size_in_bytes / 2**20
        rows.append(
            [
                f"value_and_grad, {label}",
                t_grad,
                t_grad / t_fwd,
                grad_trace + grad_xla,
                f"{mib:.1f}",
            ]
        )
        out[label] = dict(
            gradient_s=t_grad,
            ratio=t_grad / t_fwd,
            temp_mib=mib,
            compile_s=grad_trace + grad_xla,
            dL_da=float(g[0]),
        )
    h = 1e-6 * params[0]
    fd = (fwd((params[0] + h, params[1])) - fwd((params[0] - h, params[1]))) / (2 * h)
    table(
        f"Reverse-mode gradient of mean |F_D|^2 over {t_end:g} s of the robot (8 parameters), "
        f"median of {repeats}",
        ["run", "seconds", "ratio to forward", "compile s", "temp MiB"],
        rows,
    )
    for label, r in out.items():
        r["fd_relative"] = abs(r["dL_da"] - float(fd)) / abs(float(fd))
        print(
            f"{label}: dL/da = {r['dL_da']:.10g}, central difference {float(fd):.10g}, "
            f"relative {r['fd_relative']:.1e}"
        )
    a, b = (r["dL_da"] for r in out.values())
    assert abs(a - b) <= 1e-9 * abs(a), (a, b)  # both adjoints: the same discrete gradient
    print()
    best = min(out, key=lambda k: out[k]["ratio"])
    return dict(
        t_end=t_end,
        forward_s=t_fwd,
        compile_forward_s=fwd_trace + fwd_xla,
        adjoints=out,
        best=best,
        ratio=out[best]["ratio"],
        fd_relative=out[best]["fd_relative"],
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int)
    parser.add_argument(
        "--formulation",
        default="default",
        help="simulate's formulation (default: simulate's default)",
    )
    args = parser.parse_args(argv)
    global FORMULATION
    FORMULATION = args.formulation
    print(machine())
    print(f"formulation: {FORMULATION}")
    return run(args.quick, args.repeats)


if __name__ == "__main__":
    main()
