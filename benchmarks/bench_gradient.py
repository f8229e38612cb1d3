"""Benchmark: reverse-mode gradient of a reaction-based loss through a robot simulation.

    python benchmarks/bench_gradient.py            # 20 s manoeuvre
    python benchmarks/bench_gradient.py --quick    # 5 s
    python benchmarks/bench_gradient.py --first-calls   # fresh processes: the targets
    python benchmarks/bench_gradient.py --first-calls diffrax-4 diffrax-16  # diffrax alone

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
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import diffrax
import jax
import jax.numpy as jnp
from _common import HERE, block, compile_timed, machine, median_time, table

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


# One call in a fresh process, as JSON on stdout: an eager first call of the reaction loss
# ("forward") or of `jax.value_and_grad` of it ("gradient"), as a script makes it, or
# ("... compile") the trace+lower and XLA compile of `jax.jit` of either; the cache folder
# argv[3] ("" = no cache). "traced" counts jaxmb's checked programs traced.
_FIRST_CALL = textwrap.dedent("""
    import json, sys, time
    import jax, jax.numpy as jnp
    import jaxmb as mb
    from jaxmb.models import mobile_robot, n_four_bar
    from jaxmb._runtime import errors
    case, kind, cache = sys.argv[1:4]
    if cache:
        mb.enable_compilation_cache(cache)
    traced = []
    _init = errors._Collector.__init__
    errors._Collector.__init__ = lambda self: traced.append(1) or _init(self)
    if case == "robot":  # seed 001's robot, |F_D|^2 over a 4 s manoeuvre
        p = (jnp.asarray(0.05), jnp.asarray([10.0, 1.0, 1.0, 1.0, 1.0, 1.0, 5.0]))
        ts = jnp.linspace(0.0, 4.0, 41)

        def loss(p):
            model = mobile_robot.build(p[0], masses=p[1])
            qd0 = mobile_robot.initial_velocity(model)
            traj = mb.simulate(model, model.q0, qd0, 4.0, ts=ts)
            fx, fy, _ = mb.reactions(model, traj).on_body("D", "link_4")
            return jnp.mean(fx**2 + fy**2)
    elif case.startswith("diffrax-"):  # diffrax alone: depth layers of sin/cos, 18 states
        import diffrax
        import numpy as np

        depth, n = int(case.split("-")[1]), 18
        rng = np.random.default_rng(0)
        Ws = [jnp.asarray(rng.normal(size=(n, n)) / n) for _ in range(depth)]

        def vf(t, y, p):
            x = y
            for W in Ws:  # distinct constants: no common subexpressions between layers
                x = jnp.sin(W @ x * p) + 0.1 * jnp.cos(x[::-1])
            return x - y

        p = jnp.asarray(1.0)

        def loss(p):  # as simulate: Tsit5, PID rtol 1e-8, 41 saved instants, checkpointed adjoint
            sol = diffrax.diffeqsolve(
                diffrax.ODETerm(vf), diffrax.Tsit5(), 0.0, 4.0, 0.01, jnp.ones(n), args=p,
                saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, 4.0, 41)),
                stepsize_controller=diffrax.PIDController(rtol=1e-8, atol=1e-10),
                max_steps=4096,
            )
            return jnp.sum(sol.ys**2)
    else:  # the N-four-bar, N = 10, the mean square multiplier over 1 s, bar length
        p = jnp.asarray(1.0)
        ts = jnp.linspace(0.0, 1.0, 41)

        def loss(length):
            model = n_four_bar.build(10, length=length)
            qd0 = n_four_bar.velocity(1.5707963267948966, -1.0, 10, length=length)
            traj = mb.simulate(model, model.q0, qd0, 1.0, ts=ts)
            return jnp.mean(mb.reactions(model, traj).lam ** 2)

    fn = loss if kind.startswith("forward") else jax.value_and_grad(loss)
    out = {}
    start = time.perf_counter()
    if kind.endswith("compile"):
        lowered = jax.jit(fn).lower(p)
        out["lower"] = time.perf_counter() - start
        lowered.compile()
        out["compile"] = time.perf_counter() - start - out["lower"]
        value = []
    else:
        value = jax.block_until_ready(fn(p))
        out["first_call"] = time.perf_counter() - start
    out["traced"] = len(traced)
    out["value"] = [float(v) for v in jax.tree.leaves(value) for v in jnp.ravel(v)]
    print(json.dumps(out))
""")

TARGETS = (
    ("gradient first call / forward first call (no cache)", 2.5),
    ("reverse-mode compile / forward compile", 3.0),
    ("gradient first call, warm cache / empty cache", 0.10),
)


def _fresh(case, kind, cache):
    env = dict(os.environ, JAXMB_NO_CACHE="" if cache else "1")
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    root = os.path.dirname(HERE)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_CALL, case, kind, cache],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{case} {kind}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def first_calls(cases=("robot", "n_four_bar")):
    """The issue's targets, each call in a fresh process: the eager forward's and gradient's
    first calls without a cache, the jitted forward's and gradient's compiles, then the
    gradient's first call in a process with an empty cache folder and in one after it (the
    program store and the compilation cache warm)."""
    out = {}
    for case in cases:
        runs = {
            "forward, no cache": _fresh(case, "forward", ""),
            "gradient, no cache": _fresh(case, "gradient", ""),
            "jit(forward) compile": _fresh(case, "forward compile", ""),
            "jit(gradient) compile": _fresh(case, "gradient compile", ""),
        }
        with tempfile.TemporaryDirectory() as cache:
            runs["gradient, empty cache"] = _fresh(case, "gradient", cache)
            runs["gradient, warm cache"] = _fresh(case, "gradient", cache)
        empty, warm = runs["gradient, empty cache"], runs["gradient, warm cache"]
        if not case.startswith("diffrax-"):  # jaxmb's programs: from the store, bit for bit
            assert warm["value"] == empty["value"], (warm["value"], empty["value"])
        compiles = [
            runs[k]["lower"] + runs[k]["compile"]
            for k in ("jit(gradient) compile", "jit(forward) compile")
        ]
        ratios = (
            runs["gradient, no cache"]["first_call"] / runs["forward, no cache"]["first_call"],
            compiles[0] / compiles[1],
            warm["first_call"] / empty["first_call"],
        )
        table(
            f"{case}: fresh processes (s)",
            ["call", "first call", "trace+lower", "XLA compile", "jaxmb traces"],
            [
                [
                    label,
                    r.get("first_call", "-"),
                    r.get("lower", "-"),
                    r.get("compile", "-"),
                    r["traced"],
                ]
                for label, r in runs.items()
            ],
        )
        table(
            f"{case}: targets",
            ["ratio", "measured", "target", "verdict"],
            [
                [label, ratio, target, "met" if ratio <= target else "NOT met"]
                for (label, target), ratio in zip(TARGETS, ratios)
            ],
        )
        out[case] = dict(runs=runs, ratios=ratios, at=time.time())
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int)
    parser.add_argument(
        "--first-calls",
        nargs="*",
        metavar="CASE",
        help="fresh-process first calls and the targets' verdicts (robot, n_four_bar; "
        "diffrax-4, diffrax-16, ...: the same ratios for diffrax alone with a vector field of "
        "that many layers, what diffrax's reverse mode costs by itself)",
    )
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
    if args.first_calls is not None:
        return first_calls(args.first_calls or ("robot", "n_four_bar"))
    return run(args.quick, args.repeats)


if __name__ == "__main__":
    main()
