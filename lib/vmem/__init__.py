"""vmem: virtual context for LLM agents, the MemGPT way.

The prompt is RAM (`MainContext`), SQLite is disk (`RecallStore`, `ArchivalStore`), memory
tools page data between them, and the agent loop is the kernel that services those page
faults. The core needs only the Python standard library.
"""

from .agent import Agent, AssistantTurn, Policy, RulePolicy, ScriptedPolicy, ToolCall, Turn
from .archival import ArchivalStore
from .bm25 import BM25Index, tokenize
from .clock import StepClock, utc_now
from .context import Event, MainContext
from .core import Block, CoreMemory
from .errors import (
    AgentLockedError,
    BlockLimitError,
    ContextOverflowError,
    CoreMemoryError,
    DatasetError,
    GuardRefusal,
    InputTooLargeError,
    LLMError,
    MatchError,
    QuizError,
    ReadOnlyBlockError,
    StoreError,
    StoreFormatError,
    ToolArgumentError,
    UnknownBlockError,
    VMemError,
)
from .guard import Guard, Verdict, wrap_untrusted
from .memory import Memory
from .messages import Hit, Message, Page, Record
from .recall import RecallStore
from .summarize import ExtractiveSummarizer, Summarizer
from .tokens import ApproxCounter, TiktokenCounter, count_tokens
from .tools import MemoryTools, ToolResult

__all__ = [
    "Agent",
    "AgentLockedError",
    "AssistantTurn",
    "Guard",
    "Memory",
    "MemoryTools",
    "Policy",
    "RulePolicy",
    "ScriptedPolicy",
    "ToolCall",
    "ToolResult",
    "Turn",
    "Verdict",
    "wrap_untrusted",
    "Block",
    "CoreMemory",
    "Event",
    "ExtractiveSummarizer",
    "MainContext",
    "Summarizer",
    "TiktokenCounter",
    "ArchivalStore",
    "BM25Index",
    "RecallStore",
    "tokenize",
    "ApproxCounter",
    "BlockLimitError",
    "ContextOverflowError",
    "CoreMemoryError",
    "DatasetError",
    "GuardRefusal",
    "Hit",
    "InputTooLargeError",
    "LLMError",
    "MatchError",
    "Message",
    "Page",
    "QuizError",
    "ReadOnlyBlockError",
    "Record",
    "StepClock",
    "StoreError",
    "StoreFormatError",
    "ToolArgumentError",
    "UnknownBlockError",
    "VMemError",
    "count_tokens",
    "utc_now",
]
__version__ = "0.1.0"
