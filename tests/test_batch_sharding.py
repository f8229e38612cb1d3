"""Batches sharded across devices (issue 6 item 1): examples/batch_robot.py runs in a fresh
process with 4 host CPU devices (XLA_FLAGS=--xla_force_host_platform_device_count=4, which must
be set before JAX starts, hence the subprocess). Reference: the same batch unsharded.
"""

import os
import re
import subprocess
import sys

import jax.numpy as jnp
import pytest

import jaxmb as mb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_sharded_batch_equals_unsharded(tmp_path):
    """The output is split over the 4 devices and equals the unsharded batch to 1e-8 (the
    integration tolerance: sharded and unsharded programs round differently, which can move an
    adaptive step); every trajectory succeeds and the fan plot is written."""
    env = dict(os.environ, PYTHONPATH=ROOT,
               XLA_FLAGS="--xla_force_host_platform_device_count=4")
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "batch_robot.py"), "--quick",
         "--size", "8", "--out", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "on 4 device(s)" in out and "output split over 4 device(s)" in out
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
