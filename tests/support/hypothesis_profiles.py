"""Hypothesis profiles for ptxforge's property tests.

* ``default``: at least 200 examples per property, derandomized (the same examples in every
  run, so CI is deterministic), no deadline (ptxas calls vary in time);
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

_env = os.environ.get("PTXFORGE_HYPOTHESIS_PROFILE")
if _env:
    settings.load_profile(_env)
elif settings.get_current_profile_name() == "default":
    settings.load_profile("default")


def examples(scale: float = 1.0) -> int:
    """The current profile's example count times ``scale`` (for the few costly properties)."""
    return max(1, int(settings.default.max_examples * scale))
