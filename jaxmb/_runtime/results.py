"""`RESULTS`: the result codes of jaxmb, one `eqx.Enumeration`.

It extends diffrax's `RESULTS` (successful, max_steps_reached, dt_min_reached, singular,
nonlinear_divergence, ...), so `Trajectory.result` holds diffrax's codes under the same names
(`mb.RESULTS.dt_min_reached`) beside the stops jaxmb finds itself. A code's message says what
it means in general; the exception raised for it (`JaxmbError`) carries the code as `cause`
and a message naming the function, the pair or the entry.
"""

import diffrax


class RESULTS(diffrax.RESULTS):  # pyright: ignore[reportGeneralTypeIssues]
    inconsistent_start = (
        "simulate refused the initial state (throw=False): a coordinate or velocity is not "
        "finite, the state violates the constraints, or an applied force is not finite there. "
        "`Trajectory.start_error` says which; rerun that member with throw=True for the "
        "message naming the entry or the pair."
    )
    nonfinite_state = "A coordinate or velocity is not finite."
    inconsistent_state = "The state violates the position or velocity constraints."
    nonfinite_force = "An applied force is not finite."
    singular_configuration = (
        "A singular configuration was reached: rows of C became dependent (the rank of C "
        "drops), so the constrained motion cannot go on in this formulation."
    )
    not_removable = (
        "The eliminated rows are not a removable set at this configuration: the rows kept "
        "must be independent and span the rows of C."
    )
    singular_system = "The rows kept leave a singular augmented system."


def as_result(item: diffrax.RESULTS | RESULTS) -> RESULTS:
    """The code as one of `RESULTS` (diffrax's own codes are promoted)."""
    return item if isinstance(item, RESULTS) else RESULTS.promote(item)
