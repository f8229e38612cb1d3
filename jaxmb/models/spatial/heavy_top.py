"""The heavy top (Terze, Mueller, Zlatar, Multibody Syst Dyn 38 (2016) 201-225; Exudyn's
`heavyTop` test model): a 15 kg body with J_G = diag(0.234375, 0.46875, 0.234375) kg m^2
about its centre of mass (principal, body axes), the centre of mass at (0, 1, 0) in the body
frame from a fixed point at the origin (a spherical joint to the ground), gravity
(0, 0, -9.81), starting at the identity orientation with the angular velocity
(0, 150, -4.61538) rad/s (body frame = global frame at the start).

`REFERENCE_EULER_PARAMETERS`: the Euler parameters at t = 0.2 s by RK4 (the paper's
reference) and by Exudyn's index-2 solver; the quaternion sign is arbitrary.
"""

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ..._model.mechanism import Mechanism
from ..._model.model import Model
from ...elements import Gravity, spatial as sp

REFERENCE_EULER_PARAMETERS = {
    "RK4": (-0.70828, 0.43878, 0.54573, 0.0894),
    "Exudyn": (-0.70824157, 0.43878143, 0.54578152, 0.08937154),
}
"""(w, x, y, z) at t = 0.2 s (docs/verification/HeavyTopSolution of jgerstmayr/EXUDYN and the
heavyTop test model)."""

OMEGA0 = (0.0, 150.0, -4.61538)


def build() -> Model:
    """The heavy top (module docstring)."""
    m = Mechanism(dim=3)
    top = m.body("top", 15.0, (0.234375, 0.46875, 0.234375), r=(0.0, 1.0, 0.0))
    m.add(sp.Spherical("O", m.ground, top, (0.0, 0.0, 0.0), (0.0, -1.0, 0.0)))
    m.add(Gravity(g=(0.0, 0.0, -9.81)))
    return m.build()


def initial_velocity() -> Float[Array, " 6"]:
    """(v_G, omega'): v_G = omega x r_G with the fixed point at rest."""
    w = np.asarray(OMEGA0)
    return jnp.asarray(np.concatenate([np.cross(w, [0.0, 1.0, 0.0]), w]))
