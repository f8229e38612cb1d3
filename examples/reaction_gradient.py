"""Gradient of a joint reaction with respect to geometry through a dynamic simulation.

The mobile robot (seed 001) is scaled by its length unit a; we differentiate the peak force of
the (solvable) joint D over the manoeuvre, max_t |F_D(t)|, with respect to a. The derivative
flows through assemble-free initial conditions, diffrax (forward mode: one scalar parameter),
the null-space accelerations (basis-free JVP) and the min-norm multipliers. Central finite
differences check it.

    python examples/reaction_gradient.py            # 5 s of the manoeuvre
    python examples/reaction_gradient.py --quick    # 1 s
"""

import argparse
import time

import diffrax
import jax
import jax.numpy as jnp

import jaxmb as mb  # first: float64 and the XLA CPU flags
from jaxmb.models import mobile_robot


def joint_D_force(a, t_end, num_saves, rtol=1e-8):
    """|F_D|(t) on link 4 at the saved instants of a t_end-second run of the robot of scale a
    (the manoeuvre is the standard 20 s profile, so a short run covers its first turn)."""
    model = mobile_robot.build(a)
    qd0 = mobile_robot.initial_velocity(model)
    ts = jnp.linspace(0.0, t_end, num_saves)
    traj = mb.simulate(
        model,
        model.q0,
        qd0,
        t_end,
        ts=ts,
        rtol=rtol,
        atol=1e-2 * rtol,
        adjoint=diffrax.ForwardMode(),
    )
    rx = mb.reactions(model, traj)
    fx, fy, _ = rx.on_body("D", "link_4")
    return jnp.sqrt(fx**2 + fy**2)


def peak_and_final(a, t_end, num_saves, rtol=1e-8):
    force = joint_D_force(a, t_end, num_saves, rtol)
    return jnp.stack([jnp.max(force), force[-1]])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    mb.log_progress()  # say on stderr what compiles, and for how long
    t_end, num_saves = (1.0, 21) if args.quick else (5.0, 101)
    a = jnp.asarray(0.05)
    f = jax.jit(lambda a: peak_and_final(a, t_end, num_saves))
    # one scalar parameter: a single forward-mode JVP (jacfwd would add a vmap)
    df = jax.jit(
        lambda a: jax.jvp(lambda x: peak_and_final(x, t_end, num_saves), (a,), (jnp.ones_like(a),))[
            1
        ]
    )
    print("joint D reaction and its derivative: compiling and running ...", flush=True)
    start = time.perf_counter()
    value, grad = f(a), df(a)
    elapsed = time.perf_counter() - start
    h = 1e-5 * a
    fd = (f(a + h) - f(a - h)) / (2 * h)
    labels = (f"max_t |F_D| over {t_end:g} s", f"|F_D|(t = {t_end:g} s)")
    print(f"joint D reaction of the mobile robot, a = {a} m ({elapsed:.1f} s compile + run):")
    for k, label in enumerate(labels):
        rel = abs(float(grad[k]) - float(fd[k])) / abs(float(fd[k]))
        print(
            f"  {label:<28} = {float(value[k]):.6g} N,  d/da = {float(grad[k]):.8g} N/m "
            f"(finite differences {float(fd[k]):.8g}, relative difference {rel:.1e})"
        )
    return dict(value=value, grad=grad, fd=fd)


if __name__ == "__main__":
    main()
