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


def test_pulled_grid_hinge_forces_against_scipy():
    """A 6 x 6 grid (36 plates: the sparse paths) pulled outwards at its left and right edges,
    its mode held by the "mode" driver so that the pull is an equilibrium, every hinge with its
    own ligament stiffness (random over a decade). Compliance statics against an independent
    scipy computation of lambda* = K C (C^T K C)^+ f (a particular solution by numpy's lstsq,
    then scipy.sparse LSQR on K^(1/2) C: the displacement method), to 1e-9 relative; the
    min-norm answer against numpy's lstsq (1e-9); both agree on the unique pairs (the weld and
    the mode driver) and differ on the hinges, where only the stiffness decides. The
    reactions balance the pull (statics checks F + sum of reactions = 0 to 1e-9)."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    model = auxetic.build(6, pull=3.0, lock_mode=True)
    q = model.q0
    rng = np.random.default_rng(3)
    stiffness = {name: float(10 ** rng.uniform(6, 7)) for name in model.pair_names
                 if name.startswith(("H", "V"))}
    compliant = mb.statics(model, q, method=mb.Compliance(stiffness, default=1e7))
    with pytest.warns(mb.NonUniqueReactionWarning):
        rigid = mb.statics(model, q)

    C = np.asarray(model.C(q))
    f = np.asarray(model.forces(q, jnp.zeros(model.n), 0.0))
    k = np.concatenate([np.full(model.pair(p).num_rows, stiffness.get(p, 1e7))
                        for p in model.pair_names])
    lam_p = np.linalg.lstsq(C.T, f, rcond=None)[0]
    A = sp.diags(np.sqrt(k)) @ sp.csr_matrix(C)
    y = spla.lsqr(A, lam_p / np.sqrt(k), atol=1e-15, btol=1e-15, iter_lim=100_000)[0]
    expected = k * (C @ y)
    scale = np.max(np.abs(expected))
    np.testing.assert_allclose(np.asarray(compliant.lam), expected, atol=1e-9 * scale)
    np.testing.assert_allclose(np.asarray(rigid.lam), lam_p, atol=1e-9 * scale)
    unique = np.asarray(compliant.solvable_array)
    assert [n for n, u in zip(model.pair_names, unique) if u] == ["hold", "mode"]
    for name in ("hold", "mode"):
        rows = model.rows(name)
        np.testing.assert_allclose(np.asarray(compliant.lam)[rows], np.asarray(rigid.lam)[rows],
                                   atol=1e-9 * scale)
    # the mode's torque is the work-conjugate of the pull: nonzero
    assert abs(float(np.asarray(compliant.lam)[model.rows("mode")][0])) > 1e-3 * scale
    assert np.max(np.abs(np.asarray(compliant.lam) - np.asarray(rigid.lam))) > 1e-2 * scale


def test_reactions_of_a_moving_large_grid():
    """A 6 x 6 grid under gravity moving along its mode (36 plates: the accelerations of
    `mb.reactions` come from the sparse augmented-Lagrangian solve, the flags from method
    "sparse"). Reference: the null-space solve of seed 001 (eq. 13) on the dense C and M, to
    1e-10 relative; the multipliers balance M qdd - F (eq. 10) to 1e-9 and are the min-norm ones
    (numpy's pseudo-inverse)."""
    from jaxmb._formulations.null_space import null_space_solve

    model = auxetic.build(6, theta=0.3, gravity=(0.0, -9.81))
    q = model.q0

    def held(th):  # the mode with plate (0, 0) held (test_closure_counts_and_mode)
        p = auxetic.configuration(6, 6, th).reshape(-1, 3)
        a = th - 0.3
        c, s_ = jnp.cos(a), jnp.sin(a)
        return jnp.stack([c * p[:, 0] - s_ * p[:, 1], s_ * p[:, 0] + c * p[:, 1], p[:, 2] + a],
                         axis=1).reshape(-1)

    qd = 0.7 * jax.jacfwd(held)(jnp.asarray(0.3))
    with pytest.warns(mb.NonUniqueReactionWarning):
        rx = mb.reactions(model, q, qd, 0.0)
    M = np.diag(np.asarray(model.mass_diagonal()))
    C = np.asarray(model.C(q))
    F = np.asarray(model.forces(q, qd, 0.0))
    gamma = np.asarray(model.gamma(q, qd, 0.0))
    expected = np.asarray(null_space_solve(jnp.asarray(M), jnp.asarray(F), jnp.asarray(C),
                                           jnp.asarray(gamma)))
    np.testing.assert_allclose(np.asarray(rx.qdd), expected, rtol=0,
                               atol=1e-10 * np.max(np.abs(expected)))
    lam = np.asarray(rx.lam)
    np.testing.assert_allclose(M @ np.asarray(rx.qdd) + C.T @ lam, F, rtol=0,
                               atol=1e-9 * np.max(np.abs(F)))
    np.testing.assert_allclose(lam, np.linalg.pinv(C.T) @ (F - M @ expected), rtol=0,
                               atol=1e-9 * np.max(np.abs(lam)))
    assert np.max(np.abs(expected)) > 0.1  # it accelerates
