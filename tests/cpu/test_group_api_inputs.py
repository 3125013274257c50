"""cuda.coop's group calls leave their inputs as they were: a CUB call that works in place on
the caller's payload is given a copy (the plan says so before any code is made)."""
import pytest

from coopgen import coop
from coopgen.resolve.groups import Group
from coopgen.resolve.kernel_ir import UNKNOWN


class Var:
    """A kernel variable as the rewrite sees it: a name and, where known, its host value."""

    def __init__(self, name, value=UNKNOWN, array=False):
        self.name, self.value, self.array = name, value, array

    def __repr__(self):
        return self.name


def _plan(call, *args, **kws):
    variables = [Var("samples", array=True), *args]
    return call.plan(Group("block"), variables, {k: Var(k, v) for k, v in kws.items()},
                     lambda v: v.value if isinstance(v, Var) else v,
                     lambda v: isinstance(v, Var) and v.array)


def _copied(plan) -> set:
    return {key.split(":")[1] for key, var in plan.extra
            if key.startswith("_copy:") and getattr(var, "name", None) == "samples"}


@pytest.mark.parametrize("algorithm, copied", [("sort", {"items"}), ("atomic", set())])
def test_histogram_sorting_its_samples_gets_a_copy(algorithm, copied):
    """CUB's BlockHistogramSort radix-sorts the samples it is given (its Composite takes them
    by non-const reference): the sort algorithm gets a copy, the atomic one reads them."""
    plan = _plan(coop.histogram, bins=97, bins_per_thread=2, algorithm=algorithm)
    assert _copied(plan) == copied
    assert dict(plan.extra_constants)["bins"] == 97
