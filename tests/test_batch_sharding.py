"""Batches across devices (issues 6 and 16): examples/batch_robot.py runs in a fresh process with
2 host CPU devices (JAXMB_CPU_DEVICES=2, the documented switch, which must be set before JAX
starts, hence the subprocess); `mb.batch.map` (chunks of a vmapped run per device) in this
process. References: the same batch unsharded; single runs of the same member.
"""

import os
import re
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest

import jaxmb as mb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_sharded_batch_equals_unsharded(tmp_path):
    """The batch is split over the 2 devices and equals the unsharded batch to 1e-8 (the
    integration tolerance: sharded and unsharded programs round differently, which can move an
    adaptive step); every trajectory succeeds and the fan plot is written."""
    env = dict(os.environ, PYTHONPATH=ROOT, JAXMB_CPU_DEVICES="2")
    proc = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "examples", "batch_robot.py"),
            "--quick",
            "--size",
            "8",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "on 2 device(s)" in out and "batch split over 2 device(s)" in out
    assert "all succeeded: True" in out
    difference = float(re.search(r"max \|dx\| = (\S+)", out).group(1))
    assert difference < 1e-8
    assert (tmp_path / "robot_fan.png").stat().st_size > 10_000


def test_shard_rejects_indivisible_batch():
    """A batch that cannot be split evenly is refused with a message naming the fix."""
    import jax

    n = jax.device_count()
    if n == 1:
        mb.batch.shard(jnp.zeros(3))  # always divisible by one device
        with pytest.raises(ValueError, match="leading"):
            mb.batch.shard(jnp.zeros(()))
    else:
        with pytest.raises(ValueError, match="multiple of"):
            mb.batch.shard(jnp.zeros(n + 1))


def test_batch_map_equals_single_runs_with_fixed_steps():
    """mb.batch.map in chunks (5 members, chunk 2: padded to 6, three chunks) equals single
    jitted runs member by member to 1e-12 with a fixed step sequence (same arithmetic; only
    the vectorized factorization differs); the padding is dropped."""
    import diffrax
    import jax

    from jaxmb.models import slider_crank

    model = slider_crank.build()
    qd_unit = mb.consistent_velocity(model, model.q0, jnp.zeros(model.n).at[2].set(1.0))
    ts = jnp.linspace(0.0, 0.2, 5)

    def run(rate):
        traj = mb.simulate(
            model,
            model.q0,
            rate * qd_unit,
            0.2,
            ts=ts,
            dt0=1e-3,
            stepsize_controller=diffrax.ConstantStepSize(),
        )
        return traj.q

    rates = jnp.linspace(1.0, 9.0, 5)
    mapped = mb.batch.map(run, rates, chunk=2)
    assert mapped.shape == (5, 5, model.n)
    single = jax.jit(run)
    for k in range(5):
        np.testing.assert_allclose(mapped[k], single(rates[k]), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="same leading"):
        mb.batch.map(run, rates, jnp.zeros(4))
    # ordered by a cost estimate (issue 16: similar members share a chunk): the same result
    # per member in the caller's order, from the same compiled chunk program
    reordered = mb.batch.map(run, rates, chunk=2, cost=-rates)
    np.testing.assert_allclose(reordered, mapped, rtol=0, atol=1e-12)
    by_function = mb.batch.map(run, rates, chunk=2, cost=lambda r: jnp.cos(r))
    np.testing.assert_allclose(by_function, mapped, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match=r"one value per member, shape \(5,\)"):
        mb.batch.map(run, rates, chunk=2, cost=jnp.ones(4))
    with pytest.raises(ValueError, match=r"non-finite values \(members \[3\]\)"):
        mb.batch.map(run, rates, chunk=2, cost=jnp.ones(5).at[3].set(jnp.nan))


def test_cost_order_deals_sorted_chunks_to_devices_in_turn():
    """`_dealt_order` (hand-checked case): 5 members with costs [5, 1, 3, 2, 4], chunks of 2,
    2 devices, padded to 8 with the costliest member: sorted 1, 3, 2, 4, 0 (+ 0, 0, 0); chunk
    pairs (1, 3), (2, 4), (0, 0), (0, 0) dealt device 0, 1, 0, 1; device 0 holds the first
    half of the slots."""
    from jaxmb.batch import _dealt_order

    order = _dealt_order(np.array([5.0, 1.0, 3.0, 2.0, 4.0]), 5, 3, 2, 2)
    np.testing.assert_array_equal(order, [1, 3, 0, 0, 2, 4, 0, 0])


def test_order_without_cost_keeps_each_share_on_its_device():
    """`_shared_order` and `_fitted_chunk` (hand-checked cases). 7 members on 2 devices: shares
    of 4, device 0 holds 0-3, device 1 holds 4-6 and a copy of 6; with chunks of 3, each share
    is padded to 6 with its own last member, so each device drops its padding locally and no
    result row moves between devices. A chunk that does not divide the share is lowered to a
    divisor down to half of it (5,000 members per device: 64 -> 50), else kept."""
    from jaxmb.batch import _fitted_chunk, _shared_order

    np.testing.assert_array_equal(_shared_order(7, 4, 4, 2), [0, 1, 2, 3, 4, 5, 6, 6])
    np.testing.assert_array_equal(_shared_order(7, 4, 6, 2), [0, 1, 2, 3, 3, 3, 4, 5, 6, 6, 6, 6])
    np.testing.assert_array_equal(_shared_order(1, 1, 1, 2), [0, 0])
    assert _fitted_chunk(64, 5000) == 50
    assert _fitted_chunk(64, 512) == 64
    assert _fitted_chunk(64, 127) == 64  # prime: padded
    assert _fitted_chunk(4, 4) == 4 and _fitted_chunk(3, 4) == 2


_SHARDED_KERNEL = """
import json, numpy as np, jax, jax.numpy as jnp
import jaxmb as mb
from jaxmb._formulations import null_space as _dynamics
from jaxmb._linalg import native as _native
assert jax.device_count() == 2 and _native.available(jnp.zeros(()))
rng = np.random.default_rng(0)
B = 8
w, F = rng.uniform(1, 2, (B, 9)), rng.standard_normal((B, 9))
C = rng.standard_normal((B, 8, 9))
C[:, 7] = C[:, 0] + C[:, 1]  # a redundant row in every member, and gamma in range(C) (which
g = np.einsum("bij,bj->bi", C, rng.standard_normal((B, 9)))  # row is dropped then not matter)
f = jax.jit(jax.vmap(_dynamics._projection))
args = mb.batch.shard((w, F, C, g))
text = f.lower(*args).compile().as_text()
qdd, _ = f(*args)
single = jax.jit(_dynamics._projection_single)
ref = np.stack([np.asarray(single(w[i], F[i], C[i], g[i])[0]) for i in range(B)])
nested = jax.jit(jax.vmap(jax.vmap(_dynamics._projection)))
pairs = mb.batch.shard(tuple(x.reshape(4, 2, *x.shape[1:]) for x in (w, F, C, g)))
qdd2 = np.asarray(nested(*pairs)[0]).reshape(B, 9)
print(json.dumps(dict(gather="all-gather" in text, kernel="jaxmb_gauss_projection_f64" in text,
                      spec=str(qdd.sharding.spec), err=float(np.abs(np.asarray(qdd) - ref).max()),
                      err_nested=float(np.abs(qdd2 - ref).max()), scale=float(np.abs(ref).max()))))
"""


def test_sharded_jit_vmap_runs_the_compiled_kernels_shard_by_shard(monkeypatch):
    """A hand-written jit(vmap) on `mb.batch.shard` inputs (2 host devices): the compiled
    projection kernel runs on each device's shard (no all-gather in the program, the result
    stays split over the devices) and equals single LAPACK calls to 1e-12 relative, also with
    a nested vmap (its axis folded into the sharded one)."""
    from conftest import select_kernel  # the kernels must exist where a compiler does

    select_kernel(monkeypatch, "native")  # also clears JAXMB_NATIVE_KERNELS for the subprocess
    env = dict(os.environ, PYTHONPATH=ROOT, JAXMB_CPU_DEVICES="2")
    proc = subprocess.run(
        [sys.executable, "-c", _SHARDED_KERNEL],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json

    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["kernel"] and not out["gather"]
    assert out["spec"] == "P('batch',)"
    assert out["err"] <= 1e-12 * out["scale"] and out["err_nested"] <= 1e-12 * out["scale"]
