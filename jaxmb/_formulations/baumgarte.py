"""Baumgarte stabilization of the acceleration constraints.

The acceleration constraints are replaced by

    C qdd = gamma - 2 alpha (C qd + b) - beta^2 [Phi; 0],

so violations e of the holonomic rows obey e'' + 2 alpha e' + beta^2 e = 0 and those of the
Pfaffian rows e' + 2 alpha e = 0: integration errors decay instead of accumulating as they
would in the pure index-1 formulation. alpha = beta = 10 1/s (critically damped, time constant
0.1 s) is far slower than the step sizes the tolerances imply yet fast against the motions of
interest, so the ODE does not become stiff and the drift stays at the level of the local errors.
"""

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._custom_types import Coordinates, RowVector, ScalarLike
from .._model.model import KinematicTerms, Model
from .._runtime import errors as _errors


class Baumgarte(eqx.Module):
    """Baumgarte stabilization parameters (1/s).

    Integrating backwards (t1 < t0) the damping term changes sign, s = sign(t1 - t0):
    C qdd = gamma - 2 alpha s (C qd + b) - beta^2 [Phi; 0], so that in the time of integration
    tau = s t the violations again obey e_tautau + 2 alpha e_tau + beta^2 e = 0 (damped, where
    the forward form would make them grow like exp(2 alpha |t|))."""

    alpha: ScalarLike = 10.0
    beta: ScalarLike = 10.0

    def __check_init__(self):
        for name, value in self._parameters():
            known = _errors.concrete(value)
            if known is not None and not (known.shape == () and self._valid(known)):
                raise ValueError(
                    f"Baumgarte: {name} must be a finite number >= 0 (a damping "
                    f"rate, 1/s), got {getattr(self, name)!r}"
                )

    def _parameters(self):
        return (("alpha", jnp.asarray(self.alpha)), ("beta", jnp.asarray(self.beta)))

    @staticmethod
    def _valid(value):
        """alpha and beta >= 0: a negative alpha makes the violations grow like exp(2|alpha| t)."""
        return (value >= 0.0) & (value < float("inf"))

    def checked(self, x: Float[Array, "*shape"]) -> Float[Array, "*shape"]:
        """x, after the check of alpha and beta where they are traced (inside jit)."""
        for name, value in self._parameters():
            x = _errors.error_if(
                x,
                ~jnp.all(self._valid(value)),
                f"Baumgarte: {name} must be a finite number >= 0 (traced value)",
            )
        return x

    def gamma(
        self,
        model: Model,
        q: Coordinates,
        qd: Coordinates,
        t: ScalarLike,
        direction: ScalarLike = 1.0,
    ) -> RowVector:
        """Stabilized right-hand side gamma - 2 alpha s (C qd + b) - beta^2 [Phi; 0]."""
        return self.stabilized(model.kinematic_terms(q, qd, t), direction)

    def stabilized(self, terms: KinematicTerms, direction: ScalarLike = 1.0) -> RowVector:
        """The same from precomputed `Model.kinematic_terms`."""
        return terms.gamma - 2.0 * self.alpha * direction * terms.g - self.beta**2 * terms.phi
