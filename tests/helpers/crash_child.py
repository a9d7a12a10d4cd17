"""The process `test_crash.py` kills: it writes to one agent file as fast as it can.

Usage: `python crash_child.py PATH SEED MAX_TOKENS`. It opens the agent with `Memory.open`
and loops over three kinds of writes: messages appended to the main context (the budget is
small, so the context flushes every few messages), archival inserts and core memory edits.
Each write carries a unique tag (`t<seed>x<n>`), and one line is printed, and flushed, only
after the write has committed:

    msg <message id> <tag>      archival <record id> <tag>      core <version> <tag>

so every line the parent reads names a write the file must keep, whenever the kill lands.
"""

from __future__ import annotations

import random
import sys

from vmem.memory import Memory
from vmem.messages import Message

WORDS = ("lisbon", "harbour", "sister", "birthday", "pottery", "train", "garden", "violin",
         "recipe", "winter", "museum", "bicycle")


def main(path: str, seed: int, max_tokens: int) -> None:
    rng = random.Random(seed)
    memory = Memory.open(path, max_tokens=max_tokens)
    print("ready", flush=True)
    for n in range(10**9):
        tag = f"t{seed}x{n}"
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        kind = n % 4
        if kind in (0, 1):
            role = "user" if kind == 0 else "assistant"
            message = memory.context.append(Message(role=role, content=f"{tag} {words}"))
            print(f"msg {message.id} {tag}", flush=True)
        elif kind == 2:
            record_id = memory.archival.insert(f"{tag} {words}", tags=[WORDS[n % len(WORDS)]])
            print(f"archival {record_id} {tag}", flush=True)
        else:
            memory.core.rethink("human", f"Name: Ana. Latest note {tag}: {words}")
            print(f"core {memory.core.get('human').version} {tag}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
