"""The rotating-squares (auxetic) linkage of `jaxmb.models.auxetic`.

References: the hinge closure in closed form (every hinge's two corner points coincide at the
built configuration, Phi = 0 to round-off, for any theta and side); the counts of the module
docstring (rows 4 n m - 2 (n + m) + 3, dof 1, p = (n - 2)(m - 2)) against numpy's SVD rank of
the dense C (independent of jaxmb's pivoted QR); the mode itself (d/dtheta of the closed-form
configuration is a consistent velocity: C qd = 0); energy conservation of the motion of a
conservative grid under gravity integrated by the augmented Lagrangian.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmb as mb
from jaxmb.models import auxetic


@pytest.mark.parametrize("n, m, theta, side", [(3, 3, 0.3, 1.0), (4, 4, 0.1, 0.5),
                                               (3, 5, 0.6, 2.0), (2, 2, 0.4, 1.0)])
def test_closure_counts_and_mode(n, m, theta, side):
    model = auxetic.build(n, m, theta=theta, side=side)
    assert float(jnp.max(jnp.abs(model.phi(model.q0)))) < 1e-14 * max(1.0, n * side)
    coords, rows, rank, p, dof = auxetic.counts(n, m)
    assert (model.n, model.num_rows) == (coords, rows) == (3 * n * m, 4 * n * m - 2 * (n + m) + 3)
    C = np.asarray(model.C(model.q0))
    s = np.linalg.svd(C, compute_uv=False)
    assert int(np.sum(s > 1e-9 * s[0])) == rank  # numpy's rank: dof = 1
    assert p == (n - 2) * (m - 2)
    report = mb.solvability(model, model.q0)
    assert (report.rank, report.redundancy, report.dof) == (rank, p, dof)
    # the mode with plate (0, 0) held: the closed form at theta' turned by theta' - theta about
    # the origin (so that plate (0, 0) keeps its angle); its derivative satisfies C qd = 0
    def held(th):
        q = auxetic.configuration(n, m, th, side).reshape(-1, 3)
        a = th - theta
        c, s_ = jnp.cos(a), jnp.sin(a)
        x, y = c * q[:, 0] - s_ * q[:, 1], s_ * q[:, 0] + c * q[:, 1]
        return jnp.stack([x, y, q[:, 2] + a], axis=1).reshape(-1)

    mode = jax.jacfwd(held)(jnp.asarray(theta))
    assert np.max(np.abs(C @ np.asarray(mode))) < 1e-12 * np.max(np.abs(mode))
    assert np.max(np.abs(np.asarray(mode))) > 1e-3  # it really moves


def test_square_grid_spelling():
    """mb.models.rotating_squares(n) is the n x n build; p = (n - 2)^2."""
    model = mb.models.rotating_squares(5)
    assert model.num_rows == 4 * 5 * 4 + 3
    assert auxetic.counts(5)[3] == 9


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="n and m must be integers >= 2"):
        auxetic.build(1)


def test_motion_under_gravity_conserves_energy():
    """A 4 x 4 grid held at plate (0, 0) swings under gravity along its one mode for 0.3 s
    (augmented Lagrangian, rtol 1e-10): kinetic plus potential energy constant to 1e-7 of the
    energy exchanged, and the motion stays on the mode (|Phi| < 1e-9)."""
    model = auxetic.build(4, theta=0.3, gravity=(0.0, -9.81))
    ts = jnp.linspace(0.0, 0.3, 7)
    traj = mb.simulate(model, model.q0, jnp.zeros(model.n), 0.3, ts=ts, rtol=1e-10, atol=1e-12,
                       formulation=mb.AugmentedLagrangian())
    assert bool(traj.success)
    M = np.asarray(model.mass_diagonal())
    kinetic = 0.5 * np.sum(M * np.asarray(traj.qd) ** 2, axis=1)
    potential = 9.81 * np.sum(np.asarray(model.masses)[None] * np.asarray(traj.q)[:, 1::3], axis=1)
    energy = kinetic + potential
    exchanged = np.max(kinetic)
    assert exchanged > 1e-3  # it moved
    assert np.max(np.abs(energy - energy[0])) < 1e-7 * exchanged
    phi = jax.vmap(model.phi)(traj.q)
    assert float(jnp.max(jnp.abs(phi))) < 1e-9


def test_verdicts_match_the_numpy_rank_test():
    """Which hinge reactions are unique, on an 8 x 8 grid (64 plates, 227 rows, p = 36):
    mb.solvability's verdicts (pivoted QR of C^T, B_X = C_X^T Q~) against seed 001's rank test
    computed independently with numpy's SVD, pair X unique iff rank(C without X) = rank(C) -
    rank(C_X), i.e. its rows are independent of all the others. Also the counts. The interior
    hinges of a rotating-squares grid carry self-stresses (not unique); a hinge is unique only
    where no self-stress reaches it."""
    n = 8
    model = auxetic.build(n)
    C = np.asarray(model.C(model.q0))

    def rank(A):
        if A.shape[0] == 0:
            return 0
        s = np.linalg.svd(A, compute_uv=False)
        return int(np.sum(s > 1e-9 * max(1.0, s[0])))

    r = rank(C)
    expected = []
    for name in model.pair_names:
        rows = np.arange(model.num_rows)[model.rows(name)]
        rest = np.delete(C, rows, axis=0)
        expected.append(rank(rest) == r - rank(C[rows]))
    report = mb.solvability(model, model.q0)
    assert (int(report.rank), int(report.redundancy)) == (r, (n - 2) ** 2)
    np.testing.assert_array_equal(np.asarray(report.solvable), expected)
    assert 0 < np.sum(~np.asarray(expected)) < len(expected)  # both verdicts occur
