"""The IFToMM spatial rigid slider-crank (the IFToMM benchmark library's spatial slider-crank;
the specification of Exudyn's `sliderCrank3Dbenchmark.py`, jgerstmayr/EXUDYN, with the
universal joint's axes that reproduce Gonzalez's published solution).

Crank AB (0.08 m, 0.12 kg) turns about the global x axis through A = (0, 0.1, 0.12) and starts
pointing up (B = (0, 0.1, 0.2)); connecting rod BC (0.3 m, 0.5 kg, J = (4e-4, 4e-3, 4e-3)
kg m^2 about its centre, body x along the rod); slider (2 kg, J = 1e-4 kg m^2) on the global x
axis at C = (0.2, 0, 0). Joints: revolute A (ground-crank, about x), spherical B (crank-rod),
universal C (rod-slider: the slider's x axis perpendicular to the rod's axis (0, 2, -1) / sqrt 5,
fixed in the rod), prismatic P (slider-ground, along x). Gravity (0, 0, -9.81). The crank
starts at 6 rad/s about x; the other bodies' velocities are the consistent ones (rod centre
(0.12, -0.24, 0) m/s, rod angular velocity (1.92, -0.96, 0.48) rad/s global, slider 0.24 m/s).
Gonzalez's slider x at t = 0.5, 1, 2, 5 s: `REFERENCE_SLIDER_X`.

Redundancy: 5 + 3 + 4 + 5 = 17 rows on 18 velocity coordinates, rank 17, one motion: p = 0.
"""

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ..._model.mechanism import Mechanism
from ..._model.model import Model
from ...elements import Gravity, spatial as sp

REFERENCE_SLIDER_X = {0.5: 0.184952803, 1.0: 0.211754668, 2.0: 0.289063554, 5.0: 0.240761815}
"""Gonzalez's solution (the benchmark's reference file
Spatial_rigid_slider-crank_mechanism_Gonzalez.txt): slider x (m) at t (s)."""

A = np.array([0.0, 0.1, 0.12])
B = np.array([0.0, 0.1, 0.2])
C = np.array([0.2, 0.0, 0.0])


def rod_frame() -> Float[np.ndarray, "3 3"]:
    """The rod's rotation matrix: x along B -> C, y = (0, 2, -1) / sqrt 5 (perpendicular to the
    rod and to the slider's axis), z = x cross y."""
    x = (C - B) / np.linalg.norm(C - B)
    y = np.array([0.0, 2.0, -1.0]) / np.sqrt(5.0)
    return np.column_stack([x, y, np.cross(x, y)])


def build() -> Model:
    """The benchmark model (module docstring); its start's velocities: `initial_velocity`."""
    m = Mechanism(dim=3)
    crank = m.body("crank", 0.12, (1e-4, 1e-4, 1e-5), r=(A + B) / 2)
    rod = m.body("rod", 0.5, (4e-4, 4e-3, 4e-3), r=(B + C) / 2, rotation=rod_frame())
    slider = m.body("slider", 2.0, (1e-4, 1e-4, 1e-4), r=C)
    x = (1.0, 0.0, 0.0)
    half = 0.5 * float(np.linalg.norm(C - B))
    m.add(sp.Revolute("A", m.ground, crank, A, (0.0, 0.0, -0.04), x, x))
    m.add(sp.Spherical("B", crank, rod, (0.0, 0.0, 0.04), (-half, 0.0, 0.0)))
    m.add(sp.Universal("C", rod, slider, (half, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 1.0, 0.0), x))
    m.add(sp.Prismatic("P", slider, m.ground, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), x, x))
    m.add(Gravity(g=(0.0, 0.0, -9.81)))
    return m.build()


def initial_velocity(omega0: float = 6.0) -> Float[Array, " 18"]:
    """The consistent velocity coordinates for the crank at `omega0` rad/s about x (per body:
    centre velocity, body-frame angular velocity), the benchmark's values scaled by
    omega0 / 6."""
    s = omega0 / 6.0
    crank = np.r_[np.cross([6.0, 0, 0], (B - A) / 2), 6.0, 0.0, 0.0]
    rod = np.r_[[0.12, -0.24, 0.0], rod_frame().T @ np.array([1.92, -0.96, 0.48])]
    slider = np.r_[0.24, 0.0, 0.0, 0.0, 0.0, 0.0]
    return jnp.asarray(s * np.concatenate([crank, rod, slider]))
