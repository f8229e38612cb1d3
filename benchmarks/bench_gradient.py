"""Benchmark: reverse-mode gradient of a reaction-based loss through a robot simulation.

    python benchmarks/bench_gradient.py            # 20 s manoeuvre
    python benchmarks/bench_gradient.py --quick    # 5 s

Loss: the mean square of the joint-D reaction force on link 4 over the saved instants,
L(a, masses) = mean_t |F_D(t)|^2, as a function of the length unit a and the seven body masses
(8 parameters: the case for reverse mode). The gradient runs diffrax's recursive-checkpoint
adjoint (reverse mode through the solver) and the reactions' derivative rules; it is timed
against the forward run of the same loss (median of repeats after compilation; compile times
separate) and checked against a central finite difference in a.
"""

import argparse

from _common import block, compile_timed, machine, median_time, table

import jax
import jax.numpy as jnp

import jaxmb as mb
from jaxmb.models import mobile_robot


def make_loss(t_end, num_saves=101):
    ts = jnp.linspace(0.0, t_end, num_saves)

    def loss(params):
        a, masses = params
        model = mobile_robot.build(a, masses=masses)
        qd0 = mobile_robot.initial_velocity(model)
        traj = mb.simulate(model, model.q0, qd0, t_end, ts=ts)
        fx, fy, _ = mb.reactions(model, traj).on_body("D", "link_4")
        return jnp.mean(fx**2 + fy**2)

    return loss


def run(quick=False, repeats=None):
    t_end = 5.0 if quick else 20.0
    repeats = repeats or (3 if quick else 5)
    loss = make_loss(t_end)
    params = (jnp.asarray(0.05), jnp.asarray([10.0, 1.0, 1.0, 1.0, 1.0, 1.0, 5.0]))
    fwd, fwd_trace, fwd_xla = compile_timed(loss, params)
    grad, grad_trace, grad_xla = compile_timed(jax.value_and_grad(loss), params)
    value, g = block(grad(params))
    t_fwd = median_time(lambda: block(fwd(params)), repeats)
    t_grad = median_time(lambda: block(grad(params)), repeats)
    h = 1e-6 * params[0]
    fd = (fwd((params[0] + h, params[1])) - fwd((params[0] - h, params[1]))) / (2 * h)
    rel = abs(float(g[0]) - float(fd)) / abs(float(fd))
    table(f"Reverse-mode gradient of mean |F_D|^2 over {t_end:g} s of the robot (8 parameters), "
          f"median of {repeats}",
          ["run", "seconds", "ratio to forward", "compile s"],
          [["forward (loss)", t_fwd, 1.0, fwd_trace + fwd_xla],
           ["value_and_grad (reverse)", t_grad, t_grad / t_fwd, grad_trace + grad_xla]])
    print(f"dL/da = {float(g[0]):.10g}, central difference {float(fd):.10g}, relative {rel:.1e}\n")
    return dict(t_end=t_end, forward_s=t_fwd, gradient_s=t_grad, ratio=t_grad / t_fwd,
                compile_forward_s=fwd_trace + fwd_xla, compile_gradient_s=grad_trace + grad_xla,
                fd_relative=rel)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int)
    args = parser.parse_args(argv)
    print(machine())
    return run(args.quick, args.repeats)


if __name__ == "__main__":
    main()
