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


@pytest.mark.parametrize(
    "n, m, theta, side", [(4, 4, 0.1, 0.5), (3, 5, 0.6, 2.0), (2, 2, 0.4, 1.0)]
)  # square, oblong, p = 0
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
    traj = mb.simulate(
        model,
        model.q0,
        jnp.zeros(model.n),
        0.3,
        ts=ts,
        rtol=1e-10,
        atol=1e-12,
        formulation=mb.AugmentedLagrangian(),
    )
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
    """Which hinge reactions are unique, on a 6 x 6 grid (36 plates, 123 rows, p = 16):
    mb.solvability's verdicts (pivoted QR of C^T, B_X = C_X^T Q~) against seed 001's rank test
    computed independently with numpy's SVD, pair X unique iff rank(C without X) = rank(C) -
    rank(C_X), i.e. its rows are independent of all the others. Also the counts. The interior
    hinges of a rotating-squares grid carry self-stresses (not unique); a hinge is unique only
    where no self-stress reaches it."""
    n = 6
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
        return jnp.stack(
            [c * p[:, 0] - s_ * p[:, 1], s_ * p[:, 0] + c * p[:, 1], p[:, 2] + a], axis=1
        ).reshape(-1)

    qd = 0.7 * jax.jacfwd(held)(jnp.asarray(0.3))
    with pytest.warns(mb.NonUniqueReactionWarning):
        rx = mb.reactions(model, q, qd, 0.0)
    M = np.diag(np.asarray(model.mass_diagonal()))
    C = np.asarray(model.C(q))
    F = np.asarray(model.forces(q, qd, 0.0))
    gamma = np.asarray(model.gamma(q, qd, 0.0))
    expected = np.asarray(
        null_space_solve(jnp.asarray(M), jnp.asarray(F), jnp.asarray(C), jnp.asarray(gamma))
    )
    np.testing.assert_allclose(
        np.asarray(rx.qdd), expected, rtol=0, atol=1e-10 * np.max(np.abs(expected))
    )
    lam = np.asarray(rx.lam)
    np.testing.assert_allclose(
        M @ np.asarray(rx.qdd) + C.T @ lam, F, rtol=0, atol=1e-9 * np.max(np.abs(F))
    )
    np.testing.assert_allclose(
        lam, np.linalg.pinv(C.T) @ (F - M @ expected), rtol=0, atol=1e-9 * np.max(np.abs(lam))
    )
    assert np.max(np.abs(expected)) > 0.1  # it accelerates


def test_designed_pattern_closes_and_the_nominal_one_is_the_default():
    """Plate sizes and hinge offsets (`hinge_points`): every hinge closes at the built
    configuration (Phi = 0 to round-off) whatever the design; sizes = side and offsets = 0 give
    the default model's hinge points (the corners, hand-derived: +-a/2) and C; a plate of side
    s has mass m (s / a)^2 and inertia its mass s^2 / 6; wrong shapes are refused."""
    n, m = 4, 3
    hinges = len(auxetic.hinges(n, m))
    rng = np.random.default_rng(5)
    sizes = rng.uniform(0.8, 1.2, n * m)
    offsets = rng.uniform(-0.1, 0.1, (hinges, 2))
    designed = auxetic.build(n, m, theta=0.4, sizes=sizes, offsets=offsets, mass=2.0)
    assert float(jnp.max(jnp.abs(designed.phi(designed.q0)))) < 1e-14
    np.testing.assert_allclose(np.asarray(designed.masses), 2.0 * sizes**2, rtol=1e-15)
    default = auxetic.build(n, m, theta=0.4)
    nominal = auxetic.build(n, m, theta=0.4, sizes=np.ones(n * m), offsets=np.zeros((hinges, 2)))
    np.testing.assert_allclose(
        np.asarray(nominal.C(nominal.q0)), np.asarray(default.C(default.q0)), rtol=0, atol=1e-15
    )
    _, local = auxetic.hinge_points(n, m, 0.4)
    for h, (_, _, _, corner_a, corner_b) in enumerate(auxetic.hinges(n, m)):
        np.testing.assert_allclose(
            np.asarray(local[h]),
            0.5 * np.asarray([auxetic.CORNERS[corner_a], auxetic.CORNERS[corner_b]]),
            rtol=0,
            atol=1e-15,
        )
    with pytest.raises(ValueError, match="sizes must have shape"):
        auxetic.build(n, m, sizes=np.ones(3))


def test_rotating_rectangles_close_and_have_the_closed_form_poisson_ratio():
    """The second pattern: rectangles a x b (aspect 1.6). Every hinge closes (Phi = 0); the
    linkage keeps one mode (numpy's SVD of C: dof 1), and that mode, read from numpy's null
    vector of C (independent of the closed-form configuration), strains the grid with
    Poisson's ratio -(Ly'/Ly) / (Lx'/Lx), Lx = a cos theta + b sin theta, Ly = a sin theta +
    b cos theta (hand-derived): -1 only for squares."""
    n, a, aspect, theta = 4, 1.0, 1.6, 0.35
    b = aspect * a
    model = auxetic.build(n, theta=theta, side=a, aspect=aspect)
    q = model.q0
    assert float(jnp.max(jnp.abs(model.phi(q)))) < 1e-14
    C = np.asarray(model.C(q))
    _, s, Vt = np.linalg.svd(C)
    assert int(np.sum(s > 1e-9 * s[0])) == model.n - 1
    v = Vt[-1]  # the mode (plate (0, 0) held)
    x, y = v[0::3].reshape(n, n), v[1::3].reshape(n, n)  # [row j, column i]
    width, height = np.asarray(q[3 * (n - 1)] - q[0]), np.asarray(q[3 * n * (n - 1) + 1] - q[1])
    strain_x = (x[:, -1] - x[:, 0]).mean() / width
    strain_y = (y[-1, :] - y[0, :]).mean() / height
    c, s_ = np.cos(theta), np.sin(theta)
    Lx, Ly = a * c + b * s_, a * s_ + b * c
    expected = -((a * c - b * s_) / Ly) / ((-a * s_ + b * c) / Lx)
    np.testing.assert_allclose(-strain_y / strain_x, expected, rtol=1e-9)
    assert abs(expected + 1.0) > 0.1


@pytest.mark.parametrize("n, m", [(4, 4), (3, 5)])
def test_held_edge_keeps_the_mode(n, m):
    """hold="edge": a pin at plate (0, 0)'s centre and rollers (x held) at the other centres of
    column 0. The hand counts (rows 2 hinges + m + 1, dof 1, p = rows - (3 n m - 1)) against
    numpy's SVD rank; the closed-form configuration keeps column 0 on x = 0 and plate (0, 0)'s
    centre at the origin, so its derivative in theta is the free mode: C qd = 0."""
    theta = 0.3
    model = auxetic.build(n, m, theta=theta, hold="edge")
    assert float(jnp.max(jnp.abs(model.phi(model.q0)))) < 1e-14
    coords, rows, rank, p, dof = auxetic.counts(n, m, hold="edge")
    assert (model.n, model.num_rows) == (coords, rows)
    C = np.asarray(model.C(model.q0))
    s = np.linalg.svd(C, compute_uv=False)
    assert int(np.sum(s > 1e-9 * s[0])) == rank == coords - 1
    assert p == rows - rank and dof == 1
    mode = np.asarray(jax.jacfwd(lambda th: auxetic.configuration(n, m, th))(jnp.asarray(theta)))
    assert np.max(np.abs(C @ mode)) < 1e-12 and np.max(np.abs(mode)) > 0.1
    with pytest.raises(ValueError, match="hold must be 'plate' or 'edge'"):
        auxetic.build(n, m, hold="corner")
