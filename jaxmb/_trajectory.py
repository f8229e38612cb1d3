"""`Trajectory`: the saved states of a simulation (what `simulate` returns and `reactions`
accepts)."""

import diffrax
import equinox as eqx
import jax.numpy as jnp


class Trajectory(eqx.Module):
    """Saved states of a simulation: `ts` (T,), `q` and `qd` (T, n); `result` is diffrax's
    result code (`success` True when the integration reached t1); `repartitioned` (T,) marks
    the saved instants where the independent-coordinate formulation changed its partition
    (None for the other formulations). `t_stop` is the time the integration reached (t1 on
    success; saved states after it are inf) and `singular` says whether it stopped at a
    singular configuration (see `jaxmb._failures`); both None where not integrated.
    `start_error` is 0, or with throw=False the index in `START_ERRORS` of the reason the
    initial state was refused. `t_passage` is the time of the first singular passage of the
    null-space and eliminated formulations (inf if none; see `jaxmb._passages`), where they
    may switch branch; None for the projection and independent formulations."""

    ts: jnp.ndarray
    q: jnp.ndarray
    qd: jnp.ndarray
    result: diffrax.RESULTS
    num_steps: jnp.ndarray
    repartitioned: jnp.ndarray | None = None
    t_stop: jnp.ndarray | None = None
    singular: jnp.ndarray | None = None
    start_error: jnp.ndarray | None = None
    t_passage: jnp.ndarray | None = None

    @property
    def success(self):
        return self.result == diffrax.RESULTS.successful
