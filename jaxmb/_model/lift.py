"""`mb.spatial.lift`: a planar model as a spatial one in the plane z = 0.

Each planar body (x, y, phi) becomes a spatial body at (x, y, 0) turned by phi about z, with the
principal moments (J / 2, J / 2, J) of a thin plate in the plane (J_z = J_x + J_y; the motion
stays in the plane, so the out-of-plane moments never act); each element becomes its spatial
counterpart about z:

| planar | spatial |
|---|---|
| `Revolute` (2 rows) | `spatial.Revolute` about z (5: + 3 out of the plane) |
| `Translational` (2) | `spatial.Prismatic` along the slot (5) |
| `Weld` (3) | `spatial.Weld` at the weld angle (6) |
| `Distance` (1) | `spatial.Distance` (1) |
| `RelativeAngleDriver`, `AbsoluteDriver` of phi | `spatial.RevoluteDriver` about z (1) |
| `TranslationalDriver` with a constant | `spatial.PrismaticDriver` (1) |
| `Gravity`, `Force`, `Torque`, (rotational) `SpringDamper` | their spatial forms in the plane |

A closed planar loop of revolutes then holds each out-of-plane equation twice: the lifted model
has the planar one's redundancy plus 3 per independent loop (the spatial note, section 4), and
the in-plane reactions of the planar model. Elements with no spatial counterpart (knife edges,
gears, pins in slots, parallel vectors, bushings, friction, drivers of x or y) are refused by
name.
"""

import jax.numpy as jnp

from .._runtime.exceptions import JaxmbError
from ..elements import (
    AbsoluteDriver,
    Distance,
    Force,
    Gravity,
    RelativeAngleDriver,
    Revolute,
    RotationalSpringDamper,
    SpringDamper,
    Torque,
    Translational,
    TranslationalDriver,
    Weld,
    spatial as sp,
)
from ..elements.drive import AbstractDrive, Constant
from .mechanism import Mechanism
from .model import Model

Z = (0.0, 0.0, 1.0)


class InPlane(AbstractDrive):
    """(f_x(t), f_y(t), 0) of a planar 2-vector drive `f`."""

    f: AbstractDrive

    def __call__(self, t):
        return jnp.concatenate([self.f(t), jnp.zeros(1)])

    def invalid(self):
        return self.f.invalid()


class AboutZ(AbstractDrive):
    """(0, 0, tau(t)) of a planar torque drive `tau`."""

    tau: AbstractDrive

    def __call__(self, t):
        return jnp.concatenate([jnp.zeros(2), jnp.reshape(self.tau(t), (1,))])

    def invalid(self):
        return self.tau.invalid()


def _v3(v):
    return jnp.concatenate([jnp.asarray(v, jnp.float64), jnp.zeros(1)])


def _rz(angle):
    """The rotation matrix about z by `angle`."""
    c, s = jnp.cos(angle), jnp.sin(angle)
    zero, one = jnp.zeros_like(c), jnp.ones_like(c)
    return jnp.stack(
        [jnp.stack([c, -s, zero]), jnp.stack([s, c, zero]), jnp.stack([zero, zero, one])]
    )


def lift(model: Model) -> Model:
    """The planar `model` as a spatial one in the plane z = 0 (module docstring): bodies, pairs
    and names kept, revolutes about z, gravity and forces in the plane.

    **Returns:** a spatial `Model` (`dim` 3) whose motion from the lifted initial state is the
    planar motion (x, y, phi) -> (x, y, 0, cos(phi / 2), 0, 0, sin(phi / 2)).

    ```python
    spatial = mb.spatial.lift(mb.models.slider_crank.build())
    ```
    """
    if not isinstance(model, Model) or model.dim != 2:
        raise JaxmbError.about("spatial.lift", "takes a planar jaxmb Model (Mechanism(dim=2))")
    m = Mechanism(dim=3)
    q0 = jnp.asarray(model.q0).reshape(-1, 3)
    handles = {}
    for k, name in enumerate(model.body_names):
        x, y, phi = q0[k, 0], q0[k, 1], q0[k, 2]
        J = model.inertias[k]
        half = 0.5 * phi
        handles[name] = m.body(
            name,
            model.masses[k],
            jnp.stack([J / 2, J / 2, J]),
            q=jnp.stack([x, y, jnp.zeros_like(x), jnp.cos(half), 0.0 * x, 0.0 * x, jnp.sin(half)]),
        )

    def body(b):
        return m.ground if b.is_ground else handles[b.name]

    for pair in model.pairs:
        m.add(_pair(pair, body, m.ground))
    for force in model.force_elements:
        m.add(_force(force, body))
    for friction in model.friction:
        friction.fail("friction is planar only: spatial.lift cannot lift it")
    return m.build()


def _pair(p, body, ground):
    """The spatial counterpart of a planar pair."""
    if isinstance(p, Revolute):
        return sp.Revolute(p.name, body(p.i), body(p.j), _v3(p.s_i), _v3(p.s_j), Z, Z)
    if isinstance(p, Translational):
        v = jnp.asarray(p.v)
        axis_j = jnp.stack([-v[1], v[0], 0.0])  # the slot: perpendicular to v, in body j
        return sp.Prismatic(p.name, body(p.i), body(p.j), _v3(p.s_i), _v3(p.s_j), axis_j, axis_j)
    if isinstance(p, Weld):
        return sp.Weld(p.name, body(p.i), body(p.j), _v3(p.s_i), _v3(p.s_j), _rz(p.angle))
    if isinstance(p, Distance):
        return sp.Distance(p.name, body(p.i), body(p.j), _v3(p.s_i), _v3(p.s_j), p.length)
    if isinstance(p, RelativeAngleDriver):
        i, j = body(p.i), body(p.j)
        return sp.RevoluteDriver(p.name, i, j, Z, Z, p.f, reference=_rz(p.offset))
    if isinstance(p, AbsoluteDriver) and p.coordinate == 2:
        return sp.RevoluteDriver(p.name, ground, body(p.body), Z, Z, p.f, reference=_rz(0.0))
    if isinstance(p, TranslationalDriver) and isinstance(p.d, Constant):
        # (P_j - P_i) . A_j u = d  as  (P_i - P_j) . A_j u = -d: body j is the guide
        u = _v3(p.u)
        minus = Constant(-p.d.value)
        return sp.PrismaticDriver(p.name, body(p.j), body(p.i), _v3(p.s_j), _v3(p.s_i), u, minus)
    return p.fail("has no spatial counterpart: spatial.lift cannot lift it (module docstring)")


def _force(f, body):
    """The spatial counterpart of a planar force element."""
    if isinstance(f, Gravity):
        return Gravity(g=_v3(f.g), name=f.name)
    if isinstance(f, Force):
        return sp.Force(f.name, body(f.body), _v3(f.s), InPlane(f.f))
    if isinstance(f, Torque):
        return sp.Torque(f.name, body(f.body), AboutZ(f.tau))
    if isinstance(f, SpringDamper):
        i, j = body(f.i), body(f.j)
        s_i, s_j = _v3(f.s_i), _v3(f.s_j)
        return sp.SpringDamper(f.name, i, j, s_i, s_j, f.stiffness, f.damping, f.free_length)
    if isinstance(f, RotationalSpringDamper):
        i, j = body(f.i), body(f.j)
        return sp.RotationalSpringDamper(
            f.name, i, j, Z, Z, f.stiffness, f.damping, f.free_angle, reference=_rz(0.0)
        )
    return f.fail("has no spatial counterpart: spatial.lift cannot lift it (module docstring)")
