"""Timing GPU work with CUDA events: warm-up, repeated runs, median, achieved GB/s and GFLOP/s.

:func:`benchmark` times any callable that enqueues work on a stream; :func:`time_launch`
times one kernel launch with its arguments copied in once (so only the kernel is timed).
Both return a :class:`Timing`, whose statistics are pure Python.

Example::

    t = time_launch(mod["saxpy"], n, 2.0, x, y, config=LaunchConfig(grid=n // 256, block=256),
                    bytes=3 * 4 * n, label="saxpy")
    print(t)            # saxpy: median 0.412 ms (min 0.409, mean 0.415 over 20 runs), 976.8 GB/s
    t.gbps, t.median_ms
"""

from __future__ import annotations

import statistics
from typing import Any, Callable, Optional

import attrs

from ptxforge.errors import LaunchError

from .args import LaunchConfig
from .device import check, driver, use_device

__all__ = ["Timing", "benchmark", "time_launch"]


def _positive_times(_inst, _attr, value) -> None:
    if not value:
        raise LaunchError("a Timing needs at least one measured run")
    if any(t < 0 for t in value):
        raise LaunchError(f"measured times must be >= 0 ms, got {value}")


@attrs.frozen(slots=True, kw_only=True)
class Timing:
    """Per-run times in milliseconds and what was moved or computed per run.

    ``bytes`` (memory traffic) and ``flops`` (operations) are per run; the rates use the
    median time.
    """

    times_ms: tuple = attrs.field(converter=lambda v: tuple(float(t) for t in v),
                                  validator=_positive_times)
    warmup: int = 0
    bytes: Optional[int] = None
    flops: Optional[int] = None
    label: str = ""

    @property
    def runs(self) -> int:
        return len(self.times_ms)

    @property
    def median_ms(self) -> float:
        return float(statistics.median(self.times_ms))

    @property
    def min_ms(self) -> float:
        return min(self.times_ms)

    @property
    def max_ms(self) -> float:
        return max(self.times_ms)

    @property
    def mean_ms(self) -> float:
        return float(statistics.fmean(self.times_ms))

    @property
    def stdev_ms(self) -> float:
        return float(statistics.stdev(self.times_ms)) if len(self.times_ms) > 1 else 0.0

    def _rate(self, amount: Optional[int], ms: float) -> Optional[float]:
        if amount is None or ms <= 0:
            return None
        return amount / (ms * 1e-3) / 1e9

    @property
    def gbps(self) -> Optional[float]:
        """Achieved bandwidth in GB/s (10^9 bytes per second) at the median time."""
        return self._rate(self.bytes, self.median_ms)

    @property
    def gflops(self) -> Optional[float]:
        """Achieved GFLOP/s (10^9 operations per second) at the median time."""
        return self._rate(self.flops, self.median_ms)

    @property
    def best_gbps(self) -> Optional[float]:
        """Bandwidth at the fastest run."""
        return self._rate(self.bytes, self.min_ms)

    def __str__(self) -> str:
        head = f"{self.label}: " if self.label else ""
        text = (f"{head}median {self.median_ms:.4f} ms (min {self.min_ms:.4f}, "
                f"mean {self.mean_ms:.4f} over {self.runs} runs)")
        if self.gbps is not None:
            text += f", {self.gbps:.1f} GB/s"
        if self.gflops is not None:
            text += f", {self.gflops:.1f} GFLOP/s"
        return text


def _check_counts(warmup: Any, repeat: Any) -> tuple[int, int]:
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise LaunchError(f"warmup must be an int >= 0, got {warmup!r}")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise LaunchError(f"repeat must be an int >= 1, got {repeat!r}")
    return warmup, repeat


def benchmark(enqueue: Callable[[int], Any], *, warmup: int = 3, repeat: int = 20,
              stream: Any = None, device: int = 0, bytes: Optional[int] = None,
              flops: Optional[int] = None, label: str = "") -> Timing:
    """Time ``enqueue(stream_handle)`` with a pair of CUDA events around each of ``repeat`` runs.

    ``enqueue`` must put its work on the given stream handle (an int; 0 is the legacy default
    stream).  ``warmup`` runs go first, untimed.  All runs are queued back to back and the
    events read after one synchronization, so host overhead between launches is not counted
    unless the GPU sits idle waiting for it.
    """
    from .args import stream_handle

    warmup, repeat = _check_counts(warmup, repeat)
    handle = stream_handle(stream)
    use_device(device)
    drv = driver()
    cu_stream = drv.CUstream(handle)
    for _ in range(warmup):
        enqueue(handle)
    check(drv.cuStreamSynchronize(cu_stream), "cuStreamSynchronize (after warm-up)")
    events = []
    try:
        for _ in range(2 * repeat):
            events.append(check(drv.cuEventCreate(drv.CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate"))
        for i in range(repeat):
            check(drv.cuEventRecord(events[2 * i], cu_stream), "cuEventRecord")
            enqueue(handle)
            check(drv.cuEventRecord(events[2 * i + 1], cu_stream), "cuEventRecord")
        check(drv.cuEventSynchronize(events[-1]), "cuEventSynchronize")
        times = [float(check(drv.cuEventElapsedTime(events[2 * i], events[2 * i + 1]),
                             "cuEventElapsedTime")) for i in range(repeat)]
    finally:
        for event in events:
            drv.cuEventDestroy(event)
    return Timing(times_ms=tuple(times), warmup=warmup, bytes=bytes, flops=flops, label=label)


def time_launch(kernel, *args: Any, config: LaunchConfig, warmup: int = 3, repeat: int = 20,
                bytes: Optional[int] = None, flops: Optional[int] = None,
                label: Optional[str] = None) -> Timing:
    """Time launches of a :class:`~ptxforge.launch.loader.LoadedKernel` with CUDA events.

    ``config`` is the launch's shape (:class:`~ptxforge.launch.args.LaunchConfig`: grid,
    block, dynamic shared memory, stream).  Host (NumPy) arguments are copied in once before
    the runs and back once after, so only the kernel is timed; note that every run then works
    on the previous run's output.

    Example::

        t = time_launch(mod["saxpy"], n, 2.0, x, y, config=LaunchConfig(grid=n // 256, block=256),
                        bytes=3 * 4 * n)
    """
    _check_counts(warmup, repeat)
    if not isinstance(config, LaunchConfig):
        raise LaunchError(f"time_launch: config must be a LaunchConfig(grid=..., block=...), "
                          f"got {type(config).__name__}")
    grid, block, shared_mem = config.grid, config.block, config.shared_mem
    prepared = kernel.prepare(*args, stream=config.stream)
    try:
        prepared.enqueue(grid, block, shared_mem)  # validate the launch once before timing
        timing = benchmark(lambda _handle: prepared.enqueue(grid, block, shared_mem),
                           warmup=max(warmup - 1, 0), repeat=repeat, stream=prepared.stream,
                           device=kernel.module.device, bytes=bytes, flops=flops,
                           label=kernel.name if label is None else label)
    finally:
        prepared.finish()
    return attrs.evolve(timing, warmup=warmup)
