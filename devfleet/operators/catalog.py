"""Every operator the local fleet can run; adding one is a module beside this and a line here."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from devfleet.operators.jobset import JOBSET
from devfleet.operators.kuberay import KUBERAY
from devfleet.operators.lws import LWS
from devfleet.operators.mpi_operator import MPI_OPERATOR
from devfleet.operators.spec import Operator, OperatorError
from devfleet.operators.trainer import TRAINER
from devfleet.operators.training_operator import TRAINING_OPERATOR

_ALL: Final[list[Operator]] = [
    JOBSET,
    KUBERAY,
    TRAINER,
    TRAINING_OPERATOR,
    MPI_OPERATOR,
    LWS,
]
OPERATORS: Final[dict[str, Operator]] = {operator.name: operator for operator in _ALL}


def resolve(names: Iterable[str]) -> list[Operator]:
    """The named operators plus what they require, each once, a requirement before the
    operator that needs it; OperatorError for a name the catalog lacks."""
    ordered: list[Operator] = []

    def add(name: str, wanted_by: str | None) -> None:
        operator = OPERATORS.get(name)
        if operator is None:
            by = f" (required by {wanted_by})" if wanted_by else ""
            raise OperatorError(
                f"unknown operator {name!r}{by}; known: {', '.join(sorted(OPERATORS))}"
            )
        if operator in ordered:
            return
        for requirement in operator.requires:
            add(requirement, name)
        ordered.append(operator)

    for name in names:
        add(name, None)
    return ordered


def tools_of(operators: Iterable[Operator]) -> list[str]:
    """The toolchain tools that build these operators (for `missing_binaries`)."""
    return sorted({operator.tool for operator in operators})
