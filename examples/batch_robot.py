"""Batched simulation: a fan of mobile-robot trajectories with different steering amplitudes and
initial speeds, compiled once and spread over every device by `mb.batch.map` (each device maps
its shard in vmapped chunks).

    python examples/batch_robot.py                 # 1024 trajectories of 20 s, every CPU core
    python examples/batch_robot.py --quick         # 16 trajectories of 4 s (the tests run this)
    JAXMB_CPU_DEVICES=1 python examples/batch_robot.py --quick   # one core

Prints trajectories per second and checks that the sharded batch equals an unsharded one; writes
out/robot_fan.png.
"""

import argparse
import os  # noqa: I001
import time

os.environ.setdefault("JAXMB_CPU_DEVICES", "all")  # before jaxmb: one CPU device per core
import jax
import jax.numpy as jnp
import numpy as np

import jaxmb as mb  # first: sets float64, the XLA CPU flags and the CPU device count
from jaxmb import plotting
from jaxmb.models import mobile_robot


def make_run(t_end, num_saves):
    ts = jnp.linspace(0.0, t_end, num_saves)

    def run(amplitude, speed):
        model = mobile_robot.build(amplitude=amplitude, t_end=t_end)
        qd0 = mobile_robot.initial_velocity(model, speed)
        traj = mb.simulate(model, model.q0, qd0, t_end, ts=ts, throw=False)
        return traj.q[:, 0:2], traj.success

    return run


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--size", type=int, default=None, help="number of trajectories")
    parser.add_argument("--out", default="out")
    args = parser.parse_args(argv)
    mb.log_progress()  # say on stderr what compiles, and for how long
    size = args.size or (16 if args.quick else 1024)
    t_end = 4.0 if args.quick else 20.0
    num_devices = jax.device_count()

    rng = np.random.default_rng(0)
    amplitudes = jnp.asarray(rng.uniform(-0.03, 0.03, size))
    speeds = jnp.asarray(rng.uniform(0.05, 0.15, size))
    run = make_run(t_end, 101)

    print(f"{size} robot trajectories of {t_end:g} s: compiling and running ...", flush=True)
    if num_devices > 1:  # unsharded reference: one jit(vmap) on one device
        one_device = jax.devices()[0]
        paths, ok = jax.block_until_ready(
            jax.jit(jax.vmap(run))(
                jax.device_put(amplitudes, one_device), jax.device_put(speeds, one_device)
            )
        )
        paths = np.asarray(paths)
    start = time.perf_counter()
    paths_sh, ok_sh = jax.block_until_ready(mb.batch.map(run, amplitudes, speeds))
    compile_and_run = time.perf_counter() - start
    start = time.perf_counter()
    paths_sh, ok_sh = jax.block_until_ready(mb.batch.map(run, amplitudes, speeds))
    run_time = time.perf_counter() - start
    shards = num_devices
    if num_devices == 1:
        paths = paths_sh
    difference = float(np.max(np.abs(np.asarray(paths_sh) - np.asarray(paths))))

    print(
        f"{size} trajectories of {t_end:g} s on {num_devices} device(s) "
        f"({jax.devices()[0].platform}); batch split over {shards} device(s)"
    )
    print(f"  first call (compile + run): {compile_and_run:.2f} s")
    print(f"  mb.batch.map run: {run_time:.2f} s = {size / run_time:.1f} trajectories/s")
    print(
        f"  all succeeded: {bool(jnp.all(ok_sh))}; sharded vs unsharded max |dx| = {difference:.1e}"
    )

    os.makedirs(args.out, exist_ok=True)
    fig, axes = plotting.new_figure(1, 1, size=(8.0, 6.0))
    ax = axes[0, 0]
    shown = min(size, 256)
    plotting.plot_fan(
        ax, paths_sh, amplitudes, "steering amplitude (m)", max_paths=shown, center=0.0
    )
    which = f"{shown} of the {size}" if shown < size else f"the {size}"
    ax.set_title(f"Platform paths of {which} runs over {t_end:g} s")
    path = plotting.save_figure(fig, os.path.join(args.out, "robot_fan.png"))
    print(f"wrote {path}")
    return dict(
        paths=paths,
        paths_sharded=paths_sh,
        ok=ok_sh,
        shards=shards,
        difference=difference,
        rate=size / run_time,
    )


if __name__ == "__main__":
    main()
