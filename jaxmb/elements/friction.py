"""Coulomb friction in a revolute or translational pair, driven by the pair's reaction.

A friction element names the pair it acts in (`pair`, by name) and gives a friction force
(or torque) T along the pair's slip coordinate s(q) (the relative angle of a revolute, the
sliding displacement of a translational pair):

    T = mu a N(lambda_X) tanh(a s_dot / v_s),    Q = -T (ds/dq)^T,

with lambda_X the multipliers of the pair (its reaction), N the normal load they imply, a the
lever arm of the friction (the pin radius r of a revolute, 1 for a translational pair) and v_s
the velocity scale of the regularization. Q is the generalized force of the friction force pair
(virtual work -T delta s), so the friction dissipates the power T s_dot >= 0.

Regularization. Coulomb's law T = mu a N sgn(s_dot) is replaced by tanh(a s_dot / v_s), a smooth
function of the slip speed a s_dot (m/s: the sliding speed of the pin surface for a revolute), so
the equations of motion stay differentiable. Its effect: above a few v_s the friction is
Coulomb's (tanh 3 = 0.995); below v_s it acts like a viscous damper of coefficient mu N / v_s per
unit slip speed, so there is no true sticking: a load F below mu N makes the pair creep at
v_s artanh(F / (mu N)) instead of holding. A small v_s approaches Coulomb's law but makes the
equations stiffer (the creep time constant is m v_s / (mu N) for a block of mass m).

The element only describes the friction; the coupled equations (the friction depends on the
reactions, the reactions on the accelerations, the accelerations on the friction) are solved
by every analysis (`mb.friction_forces`, `mb.simulate`, `mb.reactions`, ...).
"""

import abc
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp

from .._custom_types import Coordinates, PairRowVector, Scalar, Vector2
from ._base import AbstractElement, AbstractPair
from .geometry import Body, as_f64, direction, dot2, point, relative_angle, rot90
from .model_view import ModelView
from .revolute import Revolute
from .translational import Translational


def _safe_abs(x):
    """|x| (elementwise); its derivative at 0 is 0 (a subgradient), never nan."""
    return jnp.where(x >= 0.0, x, -x)


def _safe_norm(x):
    """Euclidean norm with a zero (not nan) derivative at the origin."""
    n2 = dot2(x, x)
    positive = n2 > 0.0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, n2, 1.0)), 0.0)


class AbstractFriction(AbstractElement):
    """Friction in the pair named `pair` (module docstring): T = mu a N tanh(a s_dot / v_s).

    A subclass gives the pair type it acts in (`pair_type`), the slip coordinate s(q), the
    normal load N(lambda_X) and the arm a."""

    pair: eqx.AbstractVar[str]
    mu: eqx.AbstractVar[Scalar]
    velocity_scale: eqx.AbstractVar[Scalar]
    pair_type: eqx.AbstractClassVar[type[AbstractPair]]
    nonnegative: ClassVar[tuple[str, ...]] = ("mu",)

    def __check_init__(self):
        """Build-time checks: `pair` a non-empty string, mu >= 0 (`nonnegative`), and the
        fields of `positive` (the subclass's length, then the velocity scale) positive scalars
        (traced values are checked inside jit by `Mechanism.build`)."""
        if not isinstance(self.pair, str) or not self.pair:
            self.fail(
                f"pair must be the name of a {self.pair_type.__name__} pair, got {self.pair!r}"
            )
        self.check_scalar(self.mu, "mu")
        for label in self.positive:
            self.check_scalar(getattr(self, label), label)

    def bodies(self) -> tuple[Body, ...]:
        return ()  # those of its pair, checked when the model is built (`check_pair`)

    def check_pair(self, model: ModelView) -> None:
        """Build-time check against the model: the pair exists and can carry this friction."""
        if self.pair not in model.pair_names:
            import difflib

            close = difflib.get_close_matches(self.pair, model.pair_names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.fail(
                f"refers to pair {self.pair!r}, which the model does not have{hint}; its "
                f"pairs are {list(model.pair_names)}"
            )
        found = model.pair(self.pair)
        if type(found) is not self.pair_type:
            other = {Revolute: "RevoluteFriction", Translational: "TranslationalFriction"}
            hint = (
                f"; for a {type(found).__name__} use {other[type(found)]}"
                if type(found) in other
                else " (friction is modelled in revolute and translational pairs only)"
            )
            self.fail(
                f"pair {self.pair!r} is a {type(found).__name__}, which cannot carry a "
                f"{type(self).__name__}: it needs a {self.pair_type.__name__} pair{hint}"
            )

    @abc.abstractmethod
    def slip(self, pair: AbstractPair, q: Coordinates) -> Scalar:
        """The slip coordinate s(q) of the pair (its rate is the relative motion)."""

    @abc.abstractmethod
    def normal_load(self, lam: PairRowVector) -> Scalar:
        """N >= 0 from the pair's multipliers lambda_X."""

    @abc.abstractmethod
    def arm(self) -> Scalar:
        """a: the slip speed is a s_dot and the friction force mu N acts with arm a."""

    def force(self, lam: PairRowVector, slip_rate: Scalar) -> Scalar:
        """T = mu a N(lambda_X) tanh(a s_dot / v_s) (module docstring)."""
        a = self.arm()
        return self.mu * a * self.normal_load(lam) * jnp.tanh(a * slip_rate / self.velocity_scale)

    def slip_terms(
        self, pair: AbstractPair, q: Coordinates, qd: Coordinates
    ) -> tuple[Coordinates, Scalar]:
        """(ds/dq, s_dot) at the state."""
        s_dot = jax.jvp(lambda q_: self.slip(pair, q_), (q,), (qd,))[1]
        return jax.grad(lambda q_: self.slip(pair, q_))(q), s_dot


class RevoluteFriction(AbstractFriction):
    """Pin friction in the revolute `pair`: torque -mu r |F| tanh(r omega / v_s) on body j
    (and its opposite on body i), omega = phid_j - phid_i, |F| the magnitude of the joint force
    (the pair's two multipliers). The friction of a journal bearing of radius r whose contact
    force F is carried at the pin surface.

    **Arguments:**
    - `name`: the element's name.
    - `pair`: the name of a `Revolute`.
    - `mu`: the friction coefficient (>= 0).
    - `radius`: r, the pin radius (m, > 0).
    - `velocity_scale`: v_s, the velocity scale of the regularization (m/s, > 0; see
      `jaxmb.elements.friction`), applied to the slip speed r omega of the pin surface.
    """

    name: str = eqx.field(static=True)
    pair: str = eqx.field(static=True)
    mu: Scalar = eqx.field(converter=as_f64)
    radius: Scalar = eqx.field(converter=as_f64)
    velocity_scale: Scalar = eqx.field(converter=as_f64, default=1e-3)
    pair_type: ClassVar[type[AbstractPair]] = Revolute
    positive: ClassVar[tuple[str, ...]] = ("radius", "velocity_scale")

    def slip(self, pair: Revolute, q: Coordinates) -> Scalar:
        return relative_angle(q, pair.i, pair.j)

    def normal_load(self, lam: Vector2) -> Scalar:
        return _safe_norm(lam)

    def arm(self) -> Scalar:
        return self.radius


class TranslationalFriction(AbstractFriction):
    """Friction of the slider (body i) of the translational `pair` on its guide (body j).

    Two-edge model: the slider, of length l centred at its pair point s_i, bears on the guide at
    its two ends. The pair's multipliers are the normal force N (along v) at s_i and the moment
    M, so the edge forces are N / 2 + M / l and N / 2 - M / l (force and moment balance of the
    two contacts) and the friction force is

        T = mu (|N / 2 + M / l| + |N / 2 - M / l|) tanh(s_dot / v_s)
          = mu max(|N|, 2 |M| / l) tanh(s_dot / v_s),

    acting along the sliding axis through s_i, against the sliding velocity s_dot of the slider
    relative to the guide. The slip coordinate s is measured along u = A_j Omega v / |v| (v
    turned by +90 degrees). A short slider pressed by a moment (a drawer pushed off-centre) can
    jam: with 2 mu |M| / l above the push it does not slide.

    **Arguments:**
    - `name`: the element's name.
    - `pair`: the name of a `Translational`.
    - `mu`: the friction coefficient (>= 0).
    - `length`: l, the slider's length (m, > 0).
    - `velocity_scale`: v_s, the velocity scale of the regularization (m/s, > 0; see
      `jaxmb.elements.friction`).
    """

    name: str = eqx.field(static=True)
    pair: str = eqx.field(static=True)
    mu: Scalar = eqx.field(converter=as_f64)
    length: Scalar = eqx.field(converter=as_f64)
    velocity_scale: Scalar = eqx.field(converter=as_f64, default=1e-3)
    pair_type: ClassVar[type[AbstractPair]] = Translational
    positive: ClassVar[tuple[str, ...]] = ("length", "velocity_scale")

    def slip(self, pair: Translational, q: Coordinates) -> Scalar:
        """s = (P_i - P_j)^T u with u = A_j Omega v / |v| the sliding axis."""
        axis = direction(q, pair.j, rot90(pair.v / jnp.linalg.norm(pair.v)))
        return dot2(point(q, pair.i, pair.s_i) - point(q, pair.j, pair.s_j), axis)

    def normal_load(self, lam: Vector2) -> Scalar:
        half, edge = lam[0] / 2.0, lam[1] / self.length
        return _safe_abs(half + edge) + _safe_abs(half - edge)

    def arm(self) -> Scalar:
        return jnp.ones((), self.mu.dtype)


def check_friction(model: ModelView) -> None:
    """Build-time checks of a model's friction elements: each names a pair that exists and can
    carry it, and no pair has two."""
    seen = {}
    for f in model.friction:
        f.check_pair(model)
        if f.pair in seen:
            f.fail(
                f"pair {f.pair!r} already has the friction element {seen[f.pair]!r}; give a "
                "pair one friction element"
            )
        seen[f.pair] = f.name
