"""examples/metamaterial.py --quick: the rotating-squares workflow on a 5 x 5 grid (25 plates,
above DENSE_BODIES: every sparse path), its numbers against independent references.

- Solvability: the hand counts of `jaxmb.models.auxetic` (rank, p, dof).
- Hinge forces: Compliance against scipy (numpy's lstsq for a particular solution, then
  scipy.sparse LSQR on K^(1/2) C: lambda* = K C (C^T K C)^+ f, the displacement method) to
  1e-9 relative; the min-norm answer against numpy's lstsq (1e-9); the flags against seed
  001's pivoted-QR test; both methods agree on the unique pairs (the weld and the mode driver)
  and differ on the hinges.
- Motion: kinetic energy = work of the pull (a conservation law) to 1e-8 of the kinetic
  energy (rtol 1e-10), Poisson's ratio -1 (the mode's kinematics: width and height scale
  alike) to 1e-9.
- Inverse design: reverse-mode gradient against central differences (1e-6 relative), the
  peak force lowered, every figure written.
"""

import importlib
import os
import sys

import jax.numpy as jnp
import numpy as np
import pytest

import jaxmb as mb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        module = importlib.import_module("metamaterial")
    finally:
        sys.path.pop(0)
    out = tmp_path_factory.mktemp("metamaterial")
    return module.main(["--quick", "--out", str(out)]), out


def test_counts(example):
    from jaxmb.models import auxetic

    result, _ = example
    _, _, rank, p, dof = auxetic.counts(5)
    s = result["solvability"]
    assert (s["rank"], s["p"], s["dof"]) == (rank, p, dof) == (74, 9, 1)


def test_hinge_forces_against_scipy(example):
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    forces = example[0]["forces"]
    model, k_given = forces["model"], forces["stiffness"]
    q = model.q0
    C = np.asarray(model.C(q))
    f = np.asarray(model.forces(q, jnp.zeros(model.n), 0.0))
    k = np.concatenate(
        [np.full(model.pair(p).num_rows, k_given.get(p, 1e7)) for p in model.pair_names]
    )
    lam_p = np.linalg.lstsq(C.T, f, rcond=None)[0]  # the min-norm solution
    A = sp.diags(np.sqrt(k)) @ sp.csr_matrix(C)
    y = spla.lsqr(A, lam_p / np.sqrt(k), atol=1e-15, btol=1e-15, iter_lim=100_000)[0]
    expected = k * (C @ y)
    compliant = np.asarray(forces["compliance"].lam)
    rigid = np.asarray(forces["min_norm"].lam)
    scale = np.max(np.abs(expected))
    np.testing.assert_allclose(compliant, expected, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(rigid, lam_p, rtol=0, atol=1e-9 * scale)
    flags = np.asarray(forces["compliance"].solvable_array)
    np.testing.assert_array_equal(flags, np.asarray(mb.solvability(model, q).solvable))
    assert [n for n, u in zip(model.pair_names, flags) if u] == ["hold", "mode"]
    for name in ("hold", "mode"):
        rows = model.rows(name)
        np.testing.assert_allclose(compliant[rows], rigid[rows], rtol=0, atol=1e-9 * scale)
    assert abs(forces["mode_torque"]) > 1e-3 * scale  # the pull's work-conjugate
    assert np.max(np.abs(compliant - rigid)) > 1e-2 * scale


def test_motion_energy_balance_and_poisson_ratio(example):
    motion = example[0]["motion"]
    assert motion["energy_balance"] < 1e-8
    assert abs(motion["poisson"] + 1.0) < 1e-9
    assert motion["theta"][1] > motion["theta"][0] + 0.05  # it opened


def test_inverse_design(example):
    result, out = example
    design = result["design"]
    assert design["gradient_check"] < 1e-6
    assert design["history"][-1] < 0.9 * design["history"][0]
    assert design["peak"][1] < design["peak"][0]
    for name in (
        "metamaterial_solvability.png",
        "metamaterial_forces.png",
        "metamaterial_motion.png",
        "metamaterial_design.png",
        "metamaterial.gif",
    ):
        assert (out / name).stat().st_size > 10_000, name
