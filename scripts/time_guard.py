"""Microseconds per `Guard().scan` of a 200-word memory: prints a table, asserts nothing.

The issue's target is 1,000 us for ordinary English, best of five rounds of 50 scans
(`--repeat 50`). Two columns: wall-clock time, and CPU time of this process, which other
load on a shared machine inflates less (waiting for a core is not counted).

    .venv/bin/python scripts/time_guard.py
    PYTHONPATH=/path/to/other/checkout/lib .venv/bin/python scripts/time_guard.py  # compare

Each text is scanned `--repeat` times per round and the best of five rounds is kept, so
other load on the machine inflates the figure less. The rows: an ordinary English
memory, the same length in Spanish, and two whose every sentence speaks to "your answer"
or "the user" and gives an order or states an obligation (each is scored by the learned
layer, the worst case for it): in English and in Spanish.
"""

from __future__ import annotations

import argparse
import inspect
import time

import vmem
from vmem import Guard

_EN = ("Ana moved to Porto last spring and works as a nurse at the city hospital. She has two "
       "cats and a very old dog, and she is learning to play the guitar on Sunday evenings. "
       "Her sister Maya lives in Lisbon near the river and visits every other month. ")
_ES = ("Ana se mudó a Oporto la primavera pasada y trabaja de enfermera en el hospital. Tiene "
       "dos gatos y un perro muy viejo, y aprende a tocar la guitarra los domingos por la "
       "tarde. Su hermana Maya vive en Lisboa, cerca del río, y la visita cada dos meses. ")
_ANCHORED = ("Thanks, your answer helped a lot with the train times. Your code works now and "
             "the bug is gone. I liked your summary of the meeting with the landlord. ")
_ANCHORED_ES = ("Usa tu respuesta de ayer para el informe. El usuario debe llamar al dentista "
                "el lunes. Dile al usuario que su código ya funciona. Revisa tu resumen de la "
                "reunión con el casero. ")


def _words(seed: str, count: int = 200) -> str:
    words = (seed * (count // len(seed.split()) + 1)).split()[:count]
    return " ".join(words)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    learned = "learned_threshold" in inspect.signature(Guard).parameters
    guards = {"Guard()": Guard()}
    if learned:
        guards["Guard(learned_threshold=None)"] = Guard(learned_threshold=None)
    print(f"vmem from {vmem.__file__}")
    print(f"{'memory (200 words)':<28} {'guard':<32} {'us per scan':>12} {'us CPU':>8}")
    for name, text in (("English, ordinary", _words(_EN)), ("Spanish, ordinary", _words(_ES)),
                       ("English, all anchored", _words(_ANCHORED)),
                       ("Spanish, all anchored orders", _words(_ANCHORED_ES))):
        for label, guard in guards.items():
            best = cpu = float("inf")
            for _round in range(5):
                start, started = time.perf_counter(), time.process_time()
                for _ in range(args.repeat):
                    guard.scan(text)
                best = min(best, (time.perf_counter() - start) / args.repeat)
                cpu = min(cpu, (time.process_time() - started) / args.repeat)
            print(f"{name:<28} {label:<32} {best * 1e6:>12.0f} {cpu * 1e6:>8.0f}")


if __name__ == "__main__":
    main()
