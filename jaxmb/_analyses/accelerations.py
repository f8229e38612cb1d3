"""`accelerations`: the unique accelerations of a model at a state, by the null-space solve
(`jaxmb._formulations.null_space`), or with friction by the coupled solve of
`jaxmb._analyses.friction`."""

from typing import Literal

import jax.numpy as jnp
from jaxtyping import ArrayLike, Real

from .._custom_types import Coordinates, CoordinatesLike, ScalarLike
from .._formulations.null_space import null_space_solve
from .._model.input_checks import check_shapes, checked_finite
from .._model.model import Model
from .._model.terms import state_terms
from .._reaction_methods._base import AbstractReactionMethod
from .._runtime import errors as _errors
from .friction import friction_accelerations


def accelerations(
    model: Model,
    q: CoordinatesLike,
    qd: CoordinatesLike,
    t: ScalarLike = 0.0,
    *,
    gamma: Real[ArrayLike, " rows"] | None = None,
    method: AbstractReactionMethod | Literal["min_norm", "auto"] | None = None,
) -> Coordinates:
    """Accelerations qdd from the null-space formulation (seed 001, eq. 13).

    **Arguments:**
    - `model`: a built `Model`.
    - `q`, `qd`: the state, coordinates (n,) and their rates.
    - `t`: time (s), for drivers and time-dependent forces.
    - `gamma`: replaces the acceleration right-hand side (e.g. with constraint stabilization
      terms); None: the model's.
    - `method`: for a model with friction elements, the reaction method their normal loads
      come from (default the minimum-norm multipliers; `mb.Compliance` where a friction pair's
      reactions are not unique).

    **Returns:** qdd, unique even when C is rank-deficient. jit, vmap and grad work. A q or qd
    of the wrong shape, or with a nan or inf entry, raises naming the entry (also inside jit).
    """
    q = jnp.asarray(q, jnp.float64)
    qd = jnp.asarray(qd, jnp.float64)
    with _errors.reporting("accelerations"):
        check_shapes(model, q=q, qd=qd)
        q = checked_finite(model, q, "q")
        qd = checked_finite(model, qd, "qd")
    t = jnp.asarray(t, jnp.float64)
    if model.friction:  # the friction depends on the reactions: a coupled solve
        return friction_accelerations(model, q, qd, t, gamma, method)
    terms = state_terms(model, q, qd, t)
    if model.num_rows == 0:
        return terms.F / model.mass_diagonal()
    return null_space_solve(terms.M, terms.F, terms.C, terms.gamma if gamma is None else gamma)
