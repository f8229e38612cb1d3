"""jaxmb: differentiable dynamics of planar rigid multibody systems with redundant constraints.

Importing jaxmb switches on float64 (`jax_enable_x64`) and adds three XLA CPU flags to
XLA_FLAGS (a deadlock guard and a speed setting; opt out with JAXMB_KEEP_XLA_FLAGS=1): both
are documented, with their reasons, in `jaxmb._runtime.config`, the one place that makes them.
"""

import os as _os

from ._runtime import config as _config

_config.set_safe_xla_flags()
_config.enable_float64()
_config.pin_blas_threads()

from . import batch as batch, drive as drive

if _os.environ.get("JAXMB_CPU_DEVICES"):  # the one switch for batches on every CPU core
    _count = _os.environ["JAXMB_CPU_DEVICES"]
    batch.use_all_cores(None if _count == "all" else int(_count))
from . import spatial as spatial  # noqa: E402  (after the elements it re-exports)
from ._analyses.accelerations import accelerations as accelerations
from ._analyses.assemble import assemble as assemble
from ._analyses.friction import (
    FrictionForces as FrictionForces,
    friction_forces as friction_forces,
)
from ._analyses.reactions import (
    NonUniqueReactionWarning as NonUniqueReactionWarning,
    Reactions as Reactions,
    inverse_dynamics as inverse_dynamics,
    reactions as reactions,
    statics as statics,
)
from ._analyses.simulate import simulate as simulate
from ._analyses.solvability import (
    SolvabilityReport as SolvabilityReport,
    solvability as solvability,
)
from ._analyses.velocity import (
    KinematicsResult as KinematicsResult,
    consistent_velocity as consistent_velocity,
    kinematics as kinematics,
)
from ._formulations.augmented_lagrangian import (
    AugmentedLagrangian as AugmentedLagrangian,
)
from ._formulations.base import (
    AbstractAccelerationFormulation as AbstractAccelerationFormulation,
    AbstractFormulation as AbstractFormulation,
    AbstractStateFormulation as AbstractStateFormulation,
)
from ._formulations.baumgarte import Baumgarte as Baumgarte
from ._formulations.independent import (
    IndependentCoordinates as IndependentCoordinates,
    multipliers as reaction_matrix_multipliers,
)
from ._formulations.null_space import NullSpace as NullSpace
from ._formulations.passages import SingularPassageWarning as SingularPassageWarning
from ._formulations.projection import Projection as Projection
from ._formulations.trajectory import Trajectory as Trajectory
from ._io import (
    ModelFile as ModelFile,
    from_dict as model_from_dict,
    load as load,
    load_parts as load_model_file,
    save as save,
    to_dict as model_to_dict,
)
from ._model.mechanism import Mechanism as Mechanism
from ._model.model import Model as Model
from ._model.terms import EquationTerms as EquationTerms
from ._reaction_methods._base import AbstractReactionMethod as AbstractReactionMethod
from ._reaction_methods.auto import Auto as Auto
from ._reaction_methods.compliance import Compliance as Compliance
from ._reaction_methods.eliminate import Eliminate as Eliminate
from ._reaction_methods.min_norm import MinNorm as MinNorm
from ._runtime.announce import log_progress as log_progress
from ._runtime.cache import enable_compilation_cache as enable_compilation_cache
from ._runtime.exceptions import (
    JaxmbError as JaxmbError,
    JaxmbRuntimeError as JaxmbRuntimeError,
)
from ._runtime.results import RESULTS as RESULTS
from .elements import (
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
from .elements.geometry import Body as Body

__version__ = "0.1.0"
