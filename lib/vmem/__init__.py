"""vmem: virtual context for LLM agents, the MemGPT way.

The prompt is RAM (`MainContext`), SQLite is disk (`RecallStore`, `ArchivalStore`), memory
tools page data between them (`MemoryTools`), and the agent loop is the kernel that services
those page faults (`Agent`). `Memory.open` puts every tier of one agent in one file. The core
needs only the Python standard library.

`__all__` is what an engineer using the library needs. Everything else has a home that says
what it is: errors in `vmem.errors`, clocks in `vmem.clock`, the widgets in `vmem.viz`, the
course machinery in `vmem.course`, the evaluation in `vmem.eval`.
"""

from .agent import Agent, RulePolicy, ScriptedPolicy, ToolCall, Turn
from .archival import ArchivalStore
from .bm25 import BM25Index, analyze, tokenize
from .clock import StepClock
from .context import MainContext
from .core import Block, CoreMemory
from .errors import VMemError
from .guard import Guard
from .memory import Memory
from .messages import Hit, Message, Page, Record
from .recall import RecallStore
from .tokens import ApproxCounter, count_tokens
from .tools import MemoryTools, ToolResult

__all__ = [
    "Agent",
    "ApproxCounter",
    "ArchivalStore",
    "BM25Index",
    "Block",
    "CoreMemory",
    "Guard",
    "Hit",
    "MainContext",
    "Memory",
    "MemoryTools",
    "Message",
    "Page",
    "RecallStore",
    "Record",
    "RulePolicy",
    "ScriptedPolicy",
    "StepClock",
    "ToolCall",
    "ToolResult",
    "Turn",
    "VMemError",
    "analyze",
    "count_tokens",
    "tokenize",
]
__version__ = "0.1.0"
