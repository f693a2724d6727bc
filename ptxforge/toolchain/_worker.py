"""The child side of isolated compiles (:mod:`ptxforge.toolchain.isolate`), and the nvJitLink call that
the in-process backend shares with it.

This file imports nothing from ptxforge: the child process loads it on its own (not as part of
the package), so a worker starts in the time it takes to import ``cuda.bindings.nvjitlink``
rather than the whole of ptxforge.  Messages in both directions are pickles framed by an
8-byte little-endian length; the child answers on a private copy of its stdout and points
file descriptor 1 at stderr, so whatever a native library prints cannot corrupt the stream.
"""

from __future__ import annotations

import importlib
import os
import pickle
import struct
import sys
import time
import traceback

__all__ = ["nvjitlink_link", "serve", "read_frame", "write_frame"]


def _log(size_fn, get_fn, handle) -> str:
    size = size_fn(handle)
    if not size:
        return ""
    buf = bytearray(size)
    get_fn(handle, buf)
    return buf.decode(errors="replace").replace("\x00", "")


def nvjitlink_link(args: list, ptx: bytes, name: str = "ptxforge.ptx") -> dict:
    """Run nvJitLink on one PTX input; a dict of builtins (picklable without ptxforge).

    Keys: ``version`` (major, minor), ``stage`` (None, ``"create"`` or ``"link"``: where it
    failed), ``error`` (the nvJitLinkError text), ``info`` and ``error_log`` (the logs),
    ``cubin`` (bytes or None) and ``wall`` (seconds spent in add_data + complete).
    """
    from cuda.bindings import nvjitlink as nvj

    out: dict[str, object] = {"version": tuple(nvj.version()), "stage": None, "error": None,
                              "info": "", "error_log": "", "cubin": None, "wall": 0.0}
    try:
        handle = nvj.create(len(args), args)
    except nvj.nvJitLinkError as exc:
        out.update(stage="create", error=str(exc))
        return out
    t0 = time.perf_counter()
    try:
        try:
            nvj.add_data(handle, nvj.InputType.PTX, ptx, len(ptx), name)
            nvj.complete(handle)
        except nvj.nvJitLinkError as exc:
            out.update(stage="link", error=str(exc))
        out["wall"] = time.perf_counter() - t0
        out["info"] = _log(nvj.get_info_log_size, nvj.get_info_log, handle)
        if out["error"] is not None:
            out["error_log"] = _log(nvj.get_error_log_size, nvj.get_error_log, handle)
        else:
            cubin = bytearray(nvj.get_linked_cubin_size(handle))
            nvj.get_linked_cubin(handle, cubin)
            out["cubin"] = bytes(cubin)
    finally:
        nvj.destroy(handle)
    return out


def write_frame(stream, obj) -> None:
    """Pickle ``obj`` onto ``stream`` behind its length."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def read_frame(stream) -> bytes:
    """The next frame's bytes; EOFError when the stream ends (mid-frame included)."""
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("stream closed")
    (size,) = struct.unpack("<Q", head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("stream closed mid-frame")
    return data


def _error(exc: BaseException) -> tuple:
    cls = type(exc)
    return ("raise", {"type": f"{cls.__module__}.{cls.__qualname__}", "message": str(exc),
                      "log": getattr(exc, "log", "") or "",
                      "backend": getattr(exc, "backend", "") or "",
                      "trace": traceback.format_exc()})


def _run(frame: bytes) -> tuple:
    kind, payload = pickle.loads(frame)
    if kind == "nvjitlink":
        return ("ok", nvjitlink_link(*payload))
    if kind == "call":
        module, qualname, args = payload
        head, *rest = qualname.split(".")
        fn = getattr(importlib.import_module(module), head)
        for part in rest:
            fn = getattr(fn, part)
        return ("ok", fn(*args))
    raise ValueError(f"unknown job kind {kind!r}; expected 'nvjitlink' or 'call'")


def _no_core_files() -> None:
    """A crash here is expected and reported to the parent: no core file for it."""
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    except (ImportError, ValueError, OSError):
        pass


def serve(inp=None, out=None) -> None:
    """Answer jobs until the parent closes the pipe."""
    _no_core_files()
    if out is None:
        out = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)
    inp = inp if inp is not None else sys.stdin.buffer
    while True:
        try:
            frame = read_frame(inp)
        except EOFError:
            return
        try:
            result = _run(frame)
        except BaseException as exc:  # everything goes back to the parent
            result = _error(exc)
        try:
            write_frame(out, result)
        except Exception as exc:      # e.g. a result that does not pickle
            write_frame(out, _error(exc))
