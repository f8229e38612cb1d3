"""`JaxmbError`: the one exception type of jaxmb's failures.

A `ValueError` (a wrong argument, found when the call is traced) or, for a check of values
known only when the program runs, a `JaxmbRuntimeError`, which is also equinox's
`EquinoxRuntimeError` (a `RuntimeError`), so code catching either keeps working. Each carries
`function` (the analysis that reported it, as the message names it), `element` (the name of
the element concerned, or None), `cause` (a `RESULTS` code, or None for a wrong argument), and
`subject` and `detail` where the message is "<subject>: <detail>" (`JaxmbError.about`): a caller
that reports the failure in its own terms (a model file's entry) says `detail` after its own
subject instead of editing the message.
"""

from typing import Any

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
        subject: str | None = None,
        detail: str | None = None,
    ):
        super().__init__(message)
        self.function, self.element, self.cause = function, element, cause
        self.subject, self.detail = subject, message if detail is None else detail

    @classmethod
    def about(cls, subject: str, detail: str, **fields: Any) -> "JaxmbError":
        """The failure "<subject>: <detail>", e.g. about("body 'wheel'", "mass must be ...")."""
        return cls(f"{subject}: {detail}", subject=subject, detail=detail, **fields)

    def extended(self, text: str) -> "JaxmbError":
        """The same failure with `text` added to its message (e.g. what to do instead)."""
        return type(self)(
            f"{str(self).rstrip()} {text}",
            function=self.function,
            element=self.element,
            cause=self.cause,
            subject=self.subject,
            detail=None if self.subject is None else f"{self.detail.rstrip()} {text}",
        )


class JaxmbRuntimeError(JaxmbError, eqx.EquinoxRuntimeError):
    """A runtime check of jaxmb failed (eagerly, or after a compiled program ran)."""
