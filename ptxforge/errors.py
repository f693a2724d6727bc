"""The ptxforge error hierarchy: one base class, one subclass per kind of mistake."""

from __future__ import annotations

from typing import Optional

__all__ = [
    "PtxforgeError",
    "PtxTypeError",
    "BuildError",
    "UnsupportedError",
    "ParseError",
    "CompileError",
    "BackendUnavailableError",
    "CompilerCrashError",
    "DeviceError",
    "LaunchError",
    "NoKernelError",
    "KernelNameError",
]


class PtxforgeError(Exception):
    """Base class of every error ptxforge raises on purpose."""


class PtxTypeError(PtxforgeError, TypeError):
    """An operand's type does not fit the operation (raised at build time)."""


class BuildError(PtxforgeError, ValueError):
    """A kernel is malformed: undefined label, value out of range, misuse of the builder."""


class UnsupportedError(PtxforgeError):
    """The requested operation needs a newer target or PTX ISA than the one selected."""


class NoKernelError(PtxforgeError):
    """A module holds no kernel or function with a body (only globals or declarations):
    ``check`` and ``diff`` list such a file and go on with the others."""


class KernelNameError(PtxforgeError, KeyError):
    """No kernel, or several, answer to a name (``compile_ptx(...)[name]``): a KeyError too,
    whose text is the message itself (not its repr)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ParseError(PtxforgeError, ValueError):
    """PTX text could not be parsed; carries the file, line, column and offending line."""

    def __init__(self, message: str, *, file: str = "<ptx>", line: int = 0,
                 column: int = 0, text: str = "") -> None:
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.text = text
        where = f"{file}:{line}:{column}"
        caret = ""
        if text:
            caret = f"\n    {text}\n    {' ' * max(column - 1, 0)}^"
        super().__init__(f"{where}: {message}{caret}")


class CompileError(PtxforgeError):
    """ptxas (through any backend) rejected the PTX; carries the backend's log."""

    #: The log's parsed diagnostics (``ptxforge.toolchain.ptxas_log.Diagnostic``), set on the
    #: errors that ``ptxforge.toolchain.compile`` raises (declared here, not assigned).
    diagnostics: tuple

    def __init__(self, message: str, *, log: str = "", backend: str = "") -> None:
        self.log = log
        self.backend = backend
        text = message if not log else f"{message}\n--- {backend or 'ptxas'} log ---\n{log.rstrip()}"
        super().__init__(text)


class CompilerCrashError(CompileError):
    """The compiler crashed (in an isolated child) instead of answering.

    ``crash`` is the :class:`ptxforge.toolchain.isolate.Crash` that says how the child died
    (its signal or exit code, and its stderr, which is also the error's ``log``).
    """

    def __init__(self, message: str, crash, *, backend: str = "") -> None:
        super().__init__(message, log=crash.stderr, backend=backend)
        self.crash = crash


class BackendUnavailableError(PtxforgeError):
    """A compile backend (or its package) is not installed or cannot run here."""


class DeviceError(PtxforgeError):
    """No GPU or CUDA driver is available, or the driver reported an error."""

    #: The driver's error name (``"CUDA_ERROR_INVALID_PTX"``) when the driver reported one.
    cuda_error: Optional[str] = None


class LaunchError(PtxforgeError, ValueError):
    """A kernel launch was asked with wrong arguments (count, type, range, grid)."""
