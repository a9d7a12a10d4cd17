"""Memory-poisoning defences: judge text by what it says and where it came from.

External memory is retrieved text. If an attacker gets a sentence such as "ignore all
previous instructions and ..." saved as a memory, every later search that finds it puts
the attack back in the prompt, across sessions (prompt injection across time).

How `Guard().scan(text, source=...)` makes a verdict, in the order it makes it:

1. **Read.** The text is read in several views: normalised (NFKC, invisible characters
   removed, look-alike letters of other scripts folded to Latin, lower case), with
   leetspeak undone, with letters spaced apart joined, and as bare words; text hidden in
   invisible tag characters or variation selectors, and payloads encoded as base64, hex,
   URL or HTML escapes, are decoded and read the same way (`views`, `decode`).
2. **Phrase patterns** (`patterns`): each enough on its own ("ignore all previous
   instructions", a forged `<|im_start|>system`, "send the conversation to ...", a
   markdown image whose address has a placeholder for data), with a report or a negation
   before it ("she told me to ignore...") not counted.
3. **Weak signals** (`signals`): addressing the model, giving an order, naming its rules,
   its reply or the user, claiming authority, asking for secrecy; each is ordinary alone,
   and a sentence and the next flag when their weights reach `SIGNAL_THRESHOLD`.
4. **The learned layer** (`model`), only when nothing above fired: a logistic regression
   over character n-grams scores each sentence, in any of 18 languages, that speaks to the
   model or its answer and is shaped like an order; the best score flags from the shipped
   threshold on.
5. **Provenance** (`sources`): a text whose source is "tool", "import" or "agent" (and a
   text with no source) is judged by steps 1 to 4 as they are. The user's own words
   ("user") about their own assistant are not an injection: they are flagged only when
   what was found is an order no user gives their own assistant (send data to an address,
   call a tool, forge a system or role marker, speak to "the AI reading this", tell "the
   user" what to do, hide something from the user, hide text in invisible characters).
6. **Spans**: a flagged text is cut into sentences and each is judged alone (else the
   first pair of neighbours together); those flagged are the verdict's `spans`, and the
   rest stays usable when, without them, it is not flagged. Otherwise the whole text is
   the span.

Around the scan: `wrap_untrusted(content, source=...)` quotes paged-in content as data
with its provenance; `sources.source_of(text, messages)` decides, from the prompt, whose
words an agent is storing. It is a filter, not a proof: quarantine makes poisoning visible
and keeps it out of core memory; it does not make retrieved text safe to obey. The
figures, and what is still missed, are in docs/RELIABILITY.md (`python -m vmem eval guard`).
"""

from .scanner import Guard
from .sources import Quoted, source_of
from .verdict import Verdict
from .views import normalize
from .wrap import wrap_untrusted

__all__ = ["Guard", "Quoted", "Verdict", "normalize", "source_of", "wrap_untrusted"]
