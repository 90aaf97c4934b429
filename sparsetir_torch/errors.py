"""Exceptions raised by sparsetir_torch.

A bad call of a kernel or op raises ``ValueError`` naming the argument. A script
that does not parse or verify raises :class:`ScriptError` (a ``ValueError``)
whose message holds ``file:line:column`` and the offending line with a caret.
"""


class ScriptError(ValueError):
    """A kernel script that does not parse or does not verify."""


class CompileError(RuntimeError):
    """The system compiler is missing or failed on generated code; the message
    carries the compiler's log and the path of the generated source."""


class ScheduleError(ValueError):
    """A schedule primitive applied where it cannot be; the message names the
    loop or iteration and shows the IR around it."""
