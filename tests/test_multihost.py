"""The multi-host path of the README (`jax.distributed.initialize` + `mb.batch.map`): two
processes on localhost, one CPU device each, form one two-device mesh; every process feeds its
shard and holds its results.

References: the same `mb.batch.map` in this one process on one device, with the same chunks
(so the same vmapped groups of members): the two processes' rows must equal it bit for bit,
with the results left on their devices (no `cost`) and put back in the caller's order across
the processes (`cost=`).
"""

import json
import os
import socket
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np

import jaxmb as mb
from jaxmb.models import slider_crank

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SPEEDS = (5.0, 9.0, 14.0, 20.0)  # initial crank speeds (rad/s), one member each
CHUNK = 2  # members per vmapped call: two per device here, two chunks in one process


def run(speed):
    """A free slider-crank started at crank speed `speed`, 0.05 s: its saved q."""
    model = slider_crank.build()
    qd0 = mb.consistent_velocity(model, model.q0, jnp.zeros(model.n).at[2].set(speed))
    return mb.simulate(model, model.q0, qd0, 0.05, ts=jnp.linspace(0.0, 0.05, 3), throw=False).q


_WORKER = textwrap.dedent(
    """
    import json, sys
    import jax
    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_num_cpu_devices", 1)
    process, port = int(sys.argv[1]), sys.argv[2]
    jax.distributed.initialize(coordinator_address=f"localhost:{port}", num_processes=2,
                               process_id=process, initialization_timeout=60)
    import jax.numpy as jnp
    import numpy as np
    import jaxmb as mb
    from test_multihost import CHUNK, SPEEDS, run

    speeds = jnp.asarray(SPEEDS)
    result = {"devices": [len(jax.devices()), len(jax.local_devices())]}
    for name, cost in (("shards", None), ("ordered", -speeds)):
        out = mb.batch.map(run, speeds, chunk=CHUNK, cost=cost)
        result[name] = {"shape": list(out.shape), "rows": [
            [shard.index[0].start or 0, np.asarray(shard.data).tolist()]
            for shard in out.addressable_shards]}
    print(json.dumps(result))
    jax.distributed.shutdown()
    """
)


def _free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _rows(part, size):
    """The rows (start, values) a process holds, placed into a full batch (NaN elsewhere)."""
    full = np.full((size, *part["shape"][1:]), np.nan)
    for start, values in part["rows"]:
        values = np.asarray(values)
        full[start : start + len(values)] = values
    return full


def test_two_processes_equal_one(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAXMB_CPU_DEVICES"}  # one device each
    env.update(
        PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tests"), ROOT, env.get("PYTHONPATH", "")]),
        JAX_PLATFORMS="cpu",
    )
    port = str(_free_port())
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(k), port],
            env=env,
            cwd=str(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in (0, 1)
    ]
    try:
        speeds = jnp.asarray(SPEEDS)  # the reference, meanwhile
        single = np.asarray(mb.batch.map(run, speeds, chunk=CHUNK, devices=jax.devices()[:1]))
        done = [w.communicate(timeout=240) for w in workers]  # a hang fails, never blocks
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.communicate()
    for w, (out, err) in zip(workers, done, strict=True):
        assert w.returncode == 0, err[-3000:]
    parts = [json.loads(out.strip().splitlines()[-1]) for out, _ in done]

    for part in parts:
        assert part["devices"] == [2, 1]  # one mesh of both processes' devices
    # without cost: each process holds its own half of the batch, in order
    assert [[start for start, _ in p["shards"]["rows"]] for p in parts] == [[0], [2]]
    merged = np.where(
        np.isnan(_rows(parts[0]["shards"], 4)),
        _rows(parts[1]["shards"], 4),
        _rows(parts[0]["shards"], 4),
    )
    assert np.array_equal(merged, single)
    # with cost (here: the fastest crank first): the rows come back in the caller's order,
    # whole on each process
    for part in parts:
        assert part["ordered"]["shape"] == [4, 3, 9]
        assert np.array_equal(_rows(part["ordered"], 4), single)
