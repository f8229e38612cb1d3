"""`JaxmbError`: the one exception type of jaxmb's failures.

A `ValueError` (a wrong argument, found when the call is traced) or, for a check of values
known only when the program runs, a `JaxmbRuntimeError`, which is also equinox's
`EquinoxRuntimeError` (a `RuntimeError`), so code catching either keeps working. Each carries
`function` (the analysis that reported it, as the message names it), `element` (the name of
the element concerned, or None) and `cause` (a `RESULTS` code, or None for a wrong argument).
"""

import equinox as eqx


class JaxmbError(ValueError):
    """A failure jaxmb reports; `str(err)` is the message, `function`, `element` and `cause`
    say where and why (see the module docstring)."""

    def __init__(
        self,
        message: str,
        *,
        function: str | None = None,
        element: str | None = None,
        cause: eqx.Enumeration | None = None,  # a code of RESULTS
    ):
        super().__init__(message)
        self.function, self.element, self.cause = function, element, cause

    def extended(self, text: str) -> "JaxmbError":
        """The same failure with `text` added to its message (e.g. what to do instead)."""
        return type(self)(
            f"{str(self).rstrip()} {text}",
            function=self.function,
            element=self.element,
            cause=self.cause,
        )


class JaxmbRuntimeError(JaxmbError, eqx.EquinoxRuntimeError):
    """A runtime check of jaxmb failed (eagerly, or after a compiled program ran)."""
