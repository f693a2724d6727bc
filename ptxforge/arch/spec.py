"""The launch an analysis assumes (target, block size, dynamic shared memory), validated once.

A :class:`LaunchSpec` travels as one value through every report (``analyze_module``,
``analyze_ptx``, ``sweep``, ``sweep_report``, ``html_report``, ``sass_report``,
``compare_with_ptxas``, the frontends and the command line), so each of them reads the
same three names and none re-checks them.

Example::

    >>> from ptxforge.arch.spec import LaunchSpec
    >>> s = LaunchSpec(target="8.6", block=128, dynamic_shared=4096)
    >>> s.target, s.block, s.dynamic_shared
    ('sm_86', 128, 4096)
    >>> LaunchSpec(block=2000)
    Traceback (most recent call last):
    ...
    ptxforge.errors.PtxforgeError: LaunchSpec.block: expected None or an int in 1..1024 ..., got 2000
"""

from __future__ import annotations

from typing import Optional, Union

import attrs

from ptxforge.errors import PtxforgeError

from .targets import target as as_target

__all__ = ["LaunchSpec", "launch_spec"]


def _target(value) -> Optional[str]:
    """The registry's name for ``value`` (None stays None: the PTX's own ``.target``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise PtxforgeError(f"LaunchSpec.target: expected None or a target such as 'sm_86', "
                            f"'86' or 86, got {value!r}")
    return as_target(value).name


def _block(_, attribute, value) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                              or not 1 <= value <= 1024):
        raise PtxforgeError(f"LaunchSpec.block: expected None or an int in 1..1024 (threads "
                            f"per block), got {value!r}")


def _dynamic_shared(_, attribute, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise PtxforgeError(f"LaunchSpec.dynamic_shared: expected an int >= 0 (bytes of dynamic "
                            f"shared memory per block), got {value!r}")


@attrs.frozen(slots=True, kw_only=True)
class LaunchSpec:
    """Where and how a kernel is launched, for occupancy: validated at construction.

    ``target`` is the registry's name (``"8.6"`` becomes ``"sm_86"``; None: the PTX's own
    ``.target`` when ptxforge knows it, else sm_80); ``block`` the threads per block (None:
    each kernel's ``.reqntid``/``.maxntid``, else 256); ``dynamic_shared`` the dynamic shared
    memory per block in bytes, added to the kernel's static shared memory.

    Example::

        >>> LaunchSpec(target="sm_90a").target, LaunchSpec().block
        ('sm_90a', None)
    """

    target: Optional[str] = attrs.field(default=None, converter=_target)
    block: Optional[int] = attrs.field(default=None, validator=_block)
    dynamic_shared: int = attrs.field(default=0, validator=_dynamic_shared)


def launch_spec(value: Union[LaunchSpec, str, int, None]) -> LaunchSpec:
    """``value`` as a :class:`LaunchSpec`: a spec as it is, None as the default spec, a target
    name (``"sm_86"``, ``86``) as the spec for that target.

    Example::

        >>> launch_spec("sm_86") == LaunchSpec(target="sm_86"), launch_spec(None).target
        (True, None)
    """
    if isinstance(value, LaunchSpec):
        return value
    if value is None:
        return LaunchSpec()
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return LaunchSpec(target=value)
    raise PtxforgeError(f"expected a LaunchSpec (or a target name such as 'sm_86'), got "
                        f"{type(value).__name__} {value!r}")
