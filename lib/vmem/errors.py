"""The one family of errors `vmem` raises.

Every message is written so that a model reading it as a tool result can act on it:
it says what was wrong and what to do instead.
"""

from __future__ import annotations


class VMemError(Exception):
    """Base class of every error raised by vmem (never shadows the built-in MemoryError)."""


class CoreMemoryError(VMemError):
    """A core-memory edit was refused; core memory is unchanged."""


class UnknownBlockError(CoreMemoryError):
    """The label names no block."""


class BlockLimitError(CoreMemoryError):
    """The edit would take a block over its character limit."""


class ReadOnlyBlockError(CoreMemoryError):
    """The block is read-only."""


class MatchError(CoreMemoryError):
    """`old` was empty, not found, or found more than once."""


class ContextOverflowError(VMemError):
    """Something cannot fit in the main context's token budget even after eviction."""


class InputTooLargeError(VMemError):
    """An input is over one of vmem's documented size limits."""


class StoreError(VMemError):
    """A storage operation was refused (bad record, unknown id, out of scope)."""


class StoreFormatError(StoreError):
    """A file is not a vmem store, is corrupt, or comes from a newer schema version."""


class AgentLockedError(StoreError):
    """Another open `Memory` already writes this agent file."""


class ToolArgumentError(VMemError):
    """A tool was called with an argument it cannot use; nothing was changed.

    `kind` is the short machine-readable error a failed `ToolResult` reports.
    """

    kind = "bad_arguments"


class GuardRefusal(ToolArgumentError):
    """Text the guard flagged as directive-shaped was refused for core memory."""

    kind = "guard"


class LLMError(VMemError):
    """A model endpoint could not be used: no key, an HTTP error, or an empty answer."""
