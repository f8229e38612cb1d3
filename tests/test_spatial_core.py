"""The spatial body kind (`jaxmb._bodies.spatial`) and spatial bodies in a model.

References: the adjoint identity (T^T Q) . v = Q . (T v) (virtual power), the derivative of the
retraction at zero (= T(q) v, by forward-mode autodiff), closed forms (free fall), and the
conservation laws of a torque-free rigid body (Euler's equations: kinetic energy and the
global angular momentum are constant), with its intermediate-axis instability."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmb as mb
from jaxmb._bodies import SPATIAL, quaternion as quat

RNG = np.random.default_rng(20261207)


def _random_q(bodies=2, scale=1.0):
    p = RNG.standard_normal((bodies, 4))
    p = scale * p / np.linalg.norm(p, axis=1, keepdims=True)
    return jnp.asarray(np.concatenate([RNG.standard_normal((bodies, 3)), p], axis=1).reshape(-1))


@pytest.mark.quick
def test_pull_back_is_the_transpose_of_qdot():
    """(T^T Q) . v = Q . (T v) for random q (also with |p| != 1), v, Q: 1e-14 (round-off of
    a few products)."""
    for scale in (1.0, 2.5):
        q = _random_q(3, scale)
        v, Q = jnp.asarray(RNG.standard_normal(18)), jnp.asarray(RNG.standard_normal(21))
        lhs = SPATIAL.stacked_pull_back(q, Q) @ v
        rhs = Q @ SPATIAL.stacked_qdot(q, v)
        assert abs(float(lhs - rhs)) <= 1e-14 * float(jnp.linalg.norm(Q) * jnp.linalg.norm(v))


def test_retraction_moves_q_along_qdot_and_keeps_unit_quaternions():
    """d/dh retract(q, h v) at h = 0 equals T(q) v (forward-mode autodiff, 1e-15), the result
    has |p| = 1 for any step (1e-15), and a body-frame rotation vector about z by theta turns
    the body by theta (the rotation matrix against the closed form, 1e-15)."""
    q = _random_q(2)
    v = jnp.asarray(RNG.standard_normal(12))
    _, d = jax.jvp(lambda h: SPATIAL.stacked_retract(q, h * v), (0.0,), (1.0,))
    np.testing.assert_allclose(d, SPATIAL.stacked_qdot(q, v), rtol=0, atol=1e-15)
    moved = SPATIAL.stacked_retract(q, 3.0 * v).reshape(2, 7)
    np.testing.assert_allclose(jnp.linalg.norm(moved[:, 3:], axis=1), 1.0, atol=1e-15)
    theta = 0.7
    turned = SPATIAL.retract(jnp.array([0, 0, 0, 1.0, 0, 0, 0]), jnp.array([0, 0, 0, 0, 0, theta]))
    c, s = np.cos(theta), np.sin(theta)
    np.testing.assert_allclose(
        quat.matrix(turned[3:]), [[c, -s, 0], [s, c, 0], [0, 0, 1]], atol=1e-15
    )


def test_matrix_and_quaternion_round_trip():
    """from_matrix(matrix(p)) = +-p for random unit p and the half turns (Shepperd's pivots);
    matrix(p) orthonormal with det 1 and independent of |p| (1e-15)."""
    for p in [*RNG.standard_normal((6, 4)), [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]:
        p = np.asarray(p, float) / np.linalg.norm(p)
        A = quat.matrix(jnp.asarray(p))
        np.testing.assert_allclose(A @ A.T, np.eye(3), atol=1e-15)
        np.testing.assert_allclose(quat.matrix(jnp.asarray(3.0 * p)), A, atol=1e-15)
        back = np.asarray(quat.from_matrix(A))
        assert min(np.abs(back - p).max(), np.abs(back + p).max()) <= 1e-15


@pytest.fixture(scope="module")
def asymmetric():
    """A free asymmetric rigid body, J = (1, 2, 3) kg m^2 (no gravity, no joints)."""
    m = mb.Mechanism(dim=3)
    m.body("box", 2.0, (1.0, 2.0, 3.0), r=(0.0, 0.0, 0.0), rotation=(1.0, 0.0, 0.0, 0.0))
    return m.build()


def _energy_and_momentum(model, q, v):
    w = v[..., 3:]
    J = jnp.broadcast_to(model.inertias[0], w.shape)
    energy = 0.5 * jnp.sum(J * w * w, axis=-1) + 0.5 * model.masses[0] * jnp.sum(
        v[..., :3] ** 2, -1
    )
    A = quat.matrix(q[..., 3:7])
    L = jnp.einsum("...ij,...j->...i", A, J * w)  # global angular momentum
    return energy, L


@pytest.fixture(scope="module")
def torque_free_runs(asymmetric):
    """20 s about each principal axis (with a 1e-3 rad/s disturbance), rtol 1e-10: one
    vmapped compile for the three."""
    spins = jnp.array([[2.0, 1e-3, 1e-3], [1e-3, 2.0, 1e-3], [1e-3, 1e-3, 2.0]])
    v0 = jnp.concatenate([jnp.zeros((3, 3)), spins], axis=1)
    ts = jnp.linspace(0.0, 20.0, 201)

    def run(v):
        return mb.simulate(asymmetric, asymmetric.q0, v, 20.0, ts=ts, rtol=1e-10, atol=1e-12)

    return v0, jax.jit(jax.vmap(run))(v0)


def test_torque_free_body_conserves_energy_and_momentum(asymmetric, torque_free_runs):
    """Kinetic energy and the global angular momentum vector stay at their initial values to
    1e-9 relative over 20 s at rtol 1e-10 (Euler's equations: both are first integrals; the
    integration error over ~1,000 steps at rtol 1e-10 stays below 1e-9)."""
    v0, traj = torque_free_runs
    assert bool(jnp.all(traj.success))
    e, L = _energy_and_momentum(asymmetric, traj.q, traj.qd)
    e0, L0 = _energy_and_momentum(asymmetric, asymmetric.q0[None], v0)
    np.testing.assert_allclose(e, jnp.broadcast_to(e0[:, None], e.shape), rtol=1e-9)
    scale = jnp.linalg.norm(L0, axis=-1)[:, None, None]
    assert float(jnp.max(jnp.abs(L - L0[:, None, :]) / scale)) <= 1e-9
    np.testing.assert_allclose(jnp.linalg.norm(traj.q[..., 3:], axis=-1), 1.0, atol=1e-12)


def test_intermediate_axis_flips_and_the_others_do_not(torque_free_runs):
    """Spin about the middle axis (J2 = 2) reverses (omega_2 changes sign: the Dzhanibekov
    effect) within 20 s from a 1e-3 disturbance; about the smallest and largest axes omega
    keeps its sign and stays within 1 % of 2 rad/s."""
    _, traj = torque_free_runs
    w = traj.qd[..., 3:]
    assert float(jnp.min(w[1, :, 1])) < -1.9
    for k in (0, 2):
        np.testing.assert_allclose(w[k, :, k], 2.0, rtol=1e-2)


def test_free_fall_and_gyroscopic_force():
    """A body under gravity falls as z = -g t^2 / 2 (1e-9 m: integration at rtol 1e-10) and
    its F holds the gyroscopic term -omega x J omega (closed form, exactly)."""
    m = mb.Mechanism(dim=3)
    m.body("b", 1.5, (0.1, 0.2, 0.25), r=(0.0, 0.0, 1.0))
    m.add(mb.Gravity((0.0, 0.0, -9.81)))
    model = m.build()
    v = jnp.array([0.0, 0.0, 0.0, 1.0, -2.0, 0.5])
    w, J = np.array([1.0, -2.0, 0.5]), np.array([0.1, 0.2, 0.25])
    expected = np.concatenate([[0, 0, -1.5 * 9.81], -np.cross(w, J * w)])
    np.testing.assert_array_equal(model.forces(model.q0, v), expected)
    traj = mb.simulate(model, model.q0, jnp.zeros(6), 1.0, ts=jnp.array([0.0, 1.0]), rtol=1e-10)
    assert abs(float(traj.q[-1, 2]) - (1.0 - 9.81 / 2)) <= 1e-9


@pytest.mark.quick
def test_model_layout():
    """nq = 7 and n = 6 per body, dim 3, the body given by a rotation matrix stored as its
    quaternion (a quarter turn about z: (cos 45, 0, 0, sin 45))."""
    m = mb.Mechanism(dim=3)
    m.body("a", 1.0, (1.0, 1.0, 1.0), r=(1.0, 2.0, 3.0))
    m.body("b", 1.0, (1.0, 1.0, 1.0), rotation=[[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0, 0, 1.0]])
    model = m.build()
    assert (model.nq, model.n, model.dim) == (14, 12, 3)
    h = np.sqrt(0.5)
    np.testing.assert_allclose(model.q0, [1, 2, 3, 1, 0, 0, 0, 0, 0, 0, h, 0, 0, h], atol=1e-15)
    np.testing.assert_allclose(model.qdot(model.q0, jnp.ones(12))[:3], 1.0)


@pytest.mark.quick
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"rotation": (1.0, 0.1, 0.0, 0.0)}, "not a unit quaternion"),
        ({"rotation": (0.0, 0.0, 0.0, 0.0)}, "not a unit quaternion"),
        ({"rotation": np.diag([1.0, 1.0, -1.0])}, "not a rotation matrix"),
        ({"rotation": np.ones((3, 3))}, "not a rotation matrix"),
        ({"rotation": (1.0, 0.0)}, "unit quaternion .* or a 3 x 3"),
        ({"r": (1.0, 2.0)}, "r must be a 3-vector"),
        ({"inertia": (1.0, 0.0, 1.0)}, "inertia = .* must be positive"),
        ({"inertia": (1.0, 1.0, 3.0)}, "triangle inequality"),
        ({"inertia": 1.0}, "inertia must be \\(J1, J2, J3\\)"),
        ({"q": (0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0)}, "not a unit quaternion"),
    ],
)
def test_bad_spatial_bodies_are_refused_naming_the_body(kwargs, message):
    m = mb.Mechanism(dim=3)
    args = {"inertia": (1.0, 1.0, 1.0)} | kwargs
    with pytest.raises(ValueError, match=f"body 'crank'.*{message}"):
        m.body("crank", 1.0, **args)


@pytest.mark.quick
def test_dimensions_are_never_mixed():
    """A planar element in a spatial mechanism, planar gravity in a spatial one and the
    reverse, a bad dim: each refused naming the element."""
    with pytest.raises(ValueError, match="dim must be 2 .* or 3"):
        mb.Mechanism(dim=4)
    m = mb.Mechanism(dim=3)
    b = m.body("b", 1.0, (1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="Revolute 'O'.*planar element .* spatial mechanism"):
        m.add(mb.Revolute("O", m.ground, b, s_i=(0.0, 0.0), s_j=(0.0, 0.0)))
    with pytest.raises(ValueError, match="Gravity 'gravity'.*planar element"):
        m.add(mb.Gravity((0.0, -9.81)))
    p = mb.Mechanism()
    p.body("c", 1.0, 1.0)
    with pytest.raises(ValueError, match="Gravity 'gravity'.*spatial element .* planar mech"):
        p.add(mb.Gravity((0.0, 0.0, -9.81)))
    with pytest.raises(ValueError, match="r and rotation are for spatial bodies"):
        p.body("d", 1.0, 1.0, r=(0.0, 0.0, 0.0))
