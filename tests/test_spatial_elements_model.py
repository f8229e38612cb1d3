"""The spatial elements inside a spatial model (`Mechanism(dim=3)`, the body-kind layer):
C = dg/dv with qdot = T(q) v, forces pulled back by T(q)^T, simulation through a half turn.

Skipped where `Mechanism` has no `dim` (the elements' branch before the body-kind layer).
References: the spatial note, section 4 (a planar four-bar of spatial revolutes: rank 17 of
20 rows, redundancy 3; with its crank driven, 0 dof), energy conservation of a conservative
pendulum, and the driven angle itself (the driver's row is exact: f(t) = 2 t)."""

import jax.numpy as jnp
import numpy as np
import pytest
from oracle import spatial as hand
from test_spatial_elements import four_bar

import jaxmb as mb
from jaxmb import drive
from jaxmb.elements import spatial as sp

try:
    mb.Mechanism(dim=3)  # pyright: ignore[reportCallIssue]
except TypeError:
    pytest.skip("Mechanism(dim=3) is not there yet", allow_module_level=True)


def test_driven_four_bar_of_spatial_revolutes_turns_past_pi():
    """Four revolutes about z and a RevoluteDriver f(t) = 2 t on the crank: solvability
    finds redundancy 3 and 0 dof; a simulation of 3.2 s turns the crank 6.4 rad (through
    +-pi) on the driven angle (1e-8) with the constraints held (1e-7)."""
    links, points = four_bar()
    m = mb.Mechanism(dim=3)  # pyright: ignore[reportCallIssue]
    b = [
        m.body(f"link{k}", mass=1.0, inertia=(0.01, 0.1, 0.1), r=tuple(q[:3]), rotation=R)
        for k, (q, R, _) in enumerate(links)
    ]
    z = np.array([0.0, 0.0, 1.0])
    ends = [(np.array([-h, 0, 0]), np.array([h, 0, 0])) for _, _, h in links]
    g = m.ground
    m.add(sp.Revolute("O2", g, b[0], points[0], ends[0][0], z, z))
    m.add(sp.Revolute("A", b[0], b[1], ends[0][1], ends[1][0], z, z))
    m.add(sp.Revolute("B", b[1], b[2], ends[1][1], ends[2][0], z, z))
    m.add(sp.Revolute("O4", b[2], g, ends[2][1], points[3], z, z))
    motor = sp.RevoluteDriver("motor", g, b[0], z, z, drive.Linear(slope=2.0))
    m.add(sp.bind_reference(motor, np.eye(3), links[0][1]))
    m.add(mb.Gravity((0.0, -9.81, 0.0)))
    model = m.build()
    q0 = jnp.concatenate([jnp.asarray(q) for q, _, _ in links])
    report = mb.solvability(model, q0)
    assert (report.rank, report.redundancy, report.dof) == (18, 3, 0)
    v0 = mb.consistent_velocity(model, q0, jnp.zeros(18))
    ts = jnp.linspace(0.0, 3.2, 33)
    tr = mb.simulate(model, q0, v0, 3.2, ts=ts)
    turn = [hand.rot(q[3:7]) @ links[0][1].T for q in np.asarray(tr.q)]
    angle = np.unwrap([np.arctan2(R[1, 0], R[0, 0]) for R in turn])
    np.testing.assert_allclose(angle, 2.0 * np.asarray(ts), atol=1e-8)
    residual = max(float(jnp.abs(model.phi(q, t)).max()) for q, t in zip(tr.q, tr.ts))
    assert residual < 1e-7


def test_pendulum_with_torsion_spring_conserves_energy():
    """A body on a revolute about global x, gravity and an undamped RotationalSpringDamper:
    kinetic + gravity + spring energy constant over 3 s (1e-7)."""
    m = mb.Mechanism(dim=3)  # pyright: ignore[reportCallIssue]
    R0, L = hand.rot(hand.qexp([0.3, 0.0, 0.0])), 0.5
    centre = R0 @ np.array([0.0, 0.0, -L])
    bob = m.body("bob", mass=1.0, inertia=(0.02, 0.02, 0.01), r=tuple(centre), rotation=R0)
    x = (1.0, 0.0, 0.0)
    m.add(sp.Revolute("pin", m.ground, bob, (0, 0, 0), (0, 0, L), x, x))
    spring = sp.bind_reference(
        sp.RotationalSpringDamper("coil", m.ground, bob, x, x, 2.0, 0.0, free_angle=-0.5),
        np.eye(3),
        R0,
    )
    m.add(spring)
    m.add(mb.Gravity((0.0, 0.0, -9.81)))
    model = m.build()
    q0 = jnp.concatenate([jnp.asarray(centre), jnp.asarray(hand.quat_of(R0))])
    tr = mb.simulate(model, q0, jnp.zeros(6), 3.0, ts=jnp.linspace(0.0, 3.0, 31))
    J = np.array([0.02, 0.02, 0.01])
    energy = [
        0.5 * v[:3] @ v[:3] + 0.5 * J @ v[3:] ** 2 + 9.81 * q[2] + float(spring.potential(q))
        for q, v in zip(np.asarray(tr.q), np.asarray(tr.qd))
    ]
    assert np.ptp(energy) < 1e-7
