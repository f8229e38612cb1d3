"""What an element may read of the model it belongs to (`ModelView`): the built `Model`
provides it. Named here, below the model layer, so that the elements do not import the model
that imports them."""

from typing import Any, Protocol

from jaxtyping import Array, Float

from .._bodies import AbstractBodyKind


class ModelView(Protocol):
    """The model as a force or friction element sees it: the bodies' masses and kind, the
    pairs by name, the friction elements."""

    @property
    def masses(self) -> Float[Array, " bodies"]: ...

    @property
    def num_bodies(self) -> int: ...

    @property
    def kind(self) -> AbstractBodyKind: ...

    @property
    def pair_names(self) -> tuple[str, ...]: ...

    @property
    def friction(self) -> tuple[Any, ...]: ...

    def pair(self, name: str) -> Any: ...
