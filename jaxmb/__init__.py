"""jaxmb: differentiable dynamics of planar rigid multibody systems with redundant constraints.

Importing jaxmb switches on float64 (`jax_enable_x64`).

It also adds `--xla_cpu_multi_thread_eigen=false --xla_cpu_enable_concurrency_optimized_scheduler=false`
to XLA_FLAGS (unless XLA_FLAGS already mentions them, or JAXMB_KEEP_XLA_FLAGS=1): with the
defaults, XLA's CPU runtime deadlocks on vmapped graphs that run several LAPACK calls and
equinox error checks concurrently (reproduced here with vmapped reactions along a trajectory;
the same wedge is reported upstream, e.g. PyAutoFit issue #1528). The flags take effect only if
jaxmb is imported before JAX starts its CPU backend. Our matrices are small, so the lost
intra-op parallelism costs little; GPU backends are unaffected. The other hazard, jaxlib 0.10's
batched LAPACK kernels splitting a batch over the thread pool and waiting for it, is removed at
the source: jaxmb never hands LAPACK more than one matrix (`jaxmb._linalg.dense`), under any vmap.

It also adds `--xla_cpu_experimental_ynn_fusion_type=` (same conditions): XLA's CPU compiler
otherwise hands small elementwise and dot fusions to the YNNPACK library, whose per-call cost
dominates jaxmb's small vmapped kernels: a batched step of 64 slider-cranks took 1.9 ms with it
and 1.1 ms without (a jit(vmap) of 1 s runs, 243 steps; issue 16's note), and single
runs did not slow down.
"""

import os as _os

_SAFE_CPU_FLAGS = (
    "--xla_cpu_multi_thread_eigen=false",
    "--xla_cpu_enable_concurrency_optimized_scheduler=false",
    "--xla_cpu_experimental_ynn_fusion_type=",  # speed, not safety: see above
)
if _os.environ.get("JAXMB_KEEP_XLA_FLAGS") != "1":
    _flags = _os.environ.get("XLA_FLAGS", "")
    for _flag in _SAFE_CPU_FLAGS:
        if _flag.split("=")[0] not in _flags:
            _flags = f"{_flags} {_flag}".strip()
    _os.environ["XLA_FLAGS"] = _flags

import jax as _jax  # noqa: E402

_jax.config.update("jax_enable_x64", True)

from . import (
    batch,  # noqa: E402
    drive,  # noqa: E402
)

if _os.environ.get("JAXMB_CPU_DEVICES"):  # the one switch for batches on every CPU core
    _count = _os.environ["JAXMB_CPU_DEVICES"]
    batch.use_all_cores(None if _count == "all" else int(_count))
from ._analyses.accelerations import accelerations as accelerations  # noqa: E402
from ._analyses.assemble import assemble as assemble  # noqa: E402
from ._analyses.friction import (  # noqa: E402
    FrictionForces as FrictionForces,
    friction_forces as friction_forces,
)
from ._analyses.reactions import (  # noqa: E402
    NonUniqueReactionWarning as NonUniqueReactionWarning,
    Reactions as Reactions,
    inverse_dynamics as inverse_dynamics,
    reactions as reactions,
    statics as statics,
)
from ._analyses.simulate import simulate as simulate  # noqa: E402
from ._formulations.baumgarte import Baumgarte as Baumgarte  # noqa: E402
from ._analyses.solvability import (  # noqa: E402
    SolvabilityReport as SolvabilityReport,
    solvability as solvability,
)
from ._analyses.velocity import (  # noqa: E402
    KinematicsResult as KinematicsResult,
    consistent_velocity as consistent_velocity,
    kinematics as kinematics,
)
from ._formulations.augmented_lagrangian import (  # noqa: E402
    AugmentedLagrangian as AugmentedLagrangian,
)
from ._formulations.base import (  # noqa: E402
    AbstractAccelerationFormulation as AbstractAccelerationFormulation,
    AbstractFormulation as AbstractFormulation,
    AbstractStateFormulation as AbstractStateFormulation,
)
from ._formulations.independent import (  # noqa: E402
    IndependentCoordinates as IndependentCoordinates,
    multipliers as reaction_matrix_multipliers,
)
from ._formulations.null_space import NullSpace as NullSpace  # noqa: E402
from ._formulations.passages import SingularPassageWarning as SingularPassageWarning  # noqa: E402
from ._formulations.projection import Projection as Projection  # noqa: E402
from ._formulations.trajectory import Trajectory as Trajectory  # noqa: E402
from ._io import (
    load as load,  # noqa: E402
    save as save,
)
from ._model.mechanism import Mechanism as Mechanism  # noqa: E402
from ._model.model import Model as Model  # noqa: E402
from ._reaction_methods._base import AbstractReactionMethod as AbstractReactionMethod  # noqa: E402
from ._reaction_methods.auto import Auto as Auto  # noqa: E402
from ._reaction_methods.compliance import Compliance as Compliance  # noqa: E402
from ._reaction_methods.eliminate import Eliminate as Eliminate  # noqa: E402
from ._reaction_methods.min_norm import MinNorm as MinNorm  # noqa: E402
from ._runtime.cache import enable_compilation_cache as enable_compilation_cache  # noqa: E402
from .elements import (  # noqa: E402
    AbsoluteDriver as AbsoluteDriver,
    Bushing as Bushing,
    Distance as Distance,
    Force as Force,
    Gear as Gear,
    GearOnLink as GearOnLink,
    Gravity as Gravity,
    KnifeEdge as KnifeEdge,
    Parallel as Parallel,
    PinInSlot as PinInSlot,
    RelativeAngleDriver as RelativeAngleDriver,
    Revolute as Revolute,
    RevoluteFriction as RevoluteFriction,
    RotationalSpringDamper as RotationalSpringDamper,
    SpringDamper as SpringDamper,
    Torque as Torque,
    Translational as Translational,
    TranslationalDriver as TranslationalDriver,
    TranslationalFriction as TranslationalFriction,
    Weld as Weld,
)
from .elements.geometry import Body as Body  # noqa: E402

__version__ = "0.1.0"
