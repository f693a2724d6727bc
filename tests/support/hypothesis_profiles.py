"""Hypothesis profiles for ptxforge's property tests.

* ``default``: at least 200 examples per property, derandomized (the same examples in every
  run, so CI is deterministic, whatever else the worker ran before: hypothesis's pool of
  "local constants" is left empty), no deadline (ptxas calls vary in time);
* ``thorough``: 10,000 examples per property, random, for a long run
  (``pytest --hypothesis-profile=thorough tests/*/test_properties*.py``);
* ``quick``: 25 examples, for iterating on a property.

Importing this module registers the profiles and, unless a profile was already chosen (by
``--hypothesis-profile`` or ``$PTXFORGE_HYPOTHESIS_PROFILE``), loads ``default``.  For
``--hypothesis-profile`` to see the profiles, tests/conftest.py imports this module (pytest
loads conftest files before the hypothesis plugin applies the option).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

__all__ = ["DEFAULT_EXAMPLES", "THOROUGH_EXAMPLES", "examples"]

DEFAULT_EXAMPLES = 200
THOROUGH_EXAMPLES = 10_000

_COMMON = dict(deadline=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.large_base_example])

settings.register_profile("default", max_examples=DEFAULT_EXAMPLES, derandomize=True,
                          database=None, **_COMMON)
settings.register_profile("thorough", max_examples=THOROUGH_EXAMPLES, **_COMMON)
settings.register_profile("quick", max_examples=25, derandomize=True, database=None, **_COMMON)



def _no_local_constants_when_derandomized() -> None:
    """Derandomized profiles draw no "local constants".

    Hypothesis (6.131 and later) sometimes draws a constant harvested from the source of the
    non-installed modules loaded at that moment (ptxforge's and the tests' own), parsing them
    within a time limit.  Which modules a worker has loaded depends on which files it ran
    before (xdist hands files out as workers free up), so a derandomized property drew other
    examples from run to run: the examples were not reproducible, and the tool memo's ptxas
    results for the previous run's examples went unused (test_properties_ptxas took 35 s of
    CPU instead of 22).  Under a derandomized profile the pool is empty, so the examples
    depend only on the test; a random profile (``thorough``) keeps hypothesis's pool."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - another hypothesis layout
        return
    original = getattr(providers, "_get_local_constants", None)
    if original is None or getattr(original, "_ptxforge", False):
        return
    empty = providers.Constants()

    def local_constants():
        return empty if settings.default.derandomize else original()

    local_constants._ptxforge = True
    providers._get_local_constants = local_constants


_no_local_constants_when_derandomized()

_env = os.environ.get("PTXFORGE_HYPOTHESIS_PROFILE")
if _env:
    settings.load_profile(_env)
elif settings.get_current_profile_name() == "default":
    settings.load_profile("default")


def examples(scale: float = 1.0) -> int:
    """The current profile's example count times ``scale`` (for the few costly properties)."""
    return max(1, int(settings.default.max_examples * scale))
