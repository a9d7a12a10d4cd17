"""The guard's weak signals: data only, read by `vmem.guard`.

One signal is ordinary ("tell me about your trip", "the rules no longer apply"); several in
the same sentence or the next one rarely are. Each signal is `(name, weight, regex)`, run on
the normalised text (punctuation kept); a window of two sentences whose signals weigh
`SIGNAL_THRESHOLD` or more is flagged. The signals model the shape of an injection: it
addresses the model, gives an order, and aims it at the model's own rules, data or reply.
One weighs against the others: a hedge ("if you can"), the way a person asks for a
preference.
"""

from __future__ import annotations

__all__ = ["SIGNALS", "SIGNAL_THRESHOLD"]

_VERBS = (r"(?:ignore|disregard|forget|print|output|reveal|tell|reply|respond|answer|say|write|"
          r"send|email|forward|copy|store|save|add|append|include|insert|swap|replace|make|"
          r"give|list|show|repeat|stop|use|call|run|execute|open|visit|click|recommend|"
          r"promote|rate|act|pretend|behave|comply|obey|follow|translate|encode|summari[sz]e|"
          r"paste|dump|leak|share|type|delete|erase|switch|change|update|set|treat|grant|ask|"
          r"mention|state|claim|praise|end|start|begin|finish|put|attach|pass|consider|"
          r"disable|enable|be|format|await|lie|hand|relay|provide|read|collect|remove|hide|"
          r"embed|post|upload|submit|export|display|confirm|refuse|avoid|whisper|weave|overwrite|"
          r"advise|speak|agree|log|set aside|wipe|invoke|quote|reproduce|spell|skip|"
          r"unlock|turn|work|overrule|throw|refer|drop|approve|push|steer|contradict|"
          r"redirect|name|inject|mail|ship|purge|talk|defer|route|pay no heed|"
          r"describe|cite|accept|keep)")
SIGNALS: tuple[tuple[str, float, str], ...] = (
    ("gives an order", 1.0,
     rf"(?:^|[.!?;:,\n]\s{{0,5}}|\b(?:please|pls|plz|kindly|just|now|then|and|so|also)\s+)"
     rf"(?:(?:never|always) )?{_VERBS}\b"),
    ("addresses the model", 2.0,
     r"\byou(?:'re| are) (?:now )?in [a-z]{1,20} mode|\byour (?:[a-z]{1,15} )?"
     r"(?:persona|instructions|guidance|programming|configuration|system prompt|developers?|"
     r"creators?|directives|training|guardrails|guidelines|content filters?|safety settings)\b|"
     r"\b(?:any|dear|hey) (?:ai|bot|assistant|model|chatbot|llm|language model)s?\b|"
     r"(?:^|[.!?\n]\s{0,5})(?:hey |hi |dear |ok |okay )?(?:assistant|ai|bot|chatbot)"
     r"\s{0,3}[\u2014\u2013:,-]\s|\bwhoever (?:reads|is reading|is chatting|processes|sees|"
     r"summari[sz]es|answers)\b|"
     r"\banyone (?:reading|processing)\b|\byou (?:were|have been|are) (?:configured|programmed|"
     r"instructed|trained|initiali[sz]ed|prompted)\b|\byou are [a-z]{2,20}, an? (?:ai|assistant|"
     r"bot|model|chatbot)\b|\bi (?:order|command|instruct) you\b|"
     # a header that names the model: "assistant override code 7741:", "ai agents:",
     # "note to any automated assistant:", "instructions for the ai summarizer:"
     r"(?:^|[.!?\n]\s{0,5})(?:[a-z]{1,15} ){0,5}(?:ai|assistant|bot|chatbot|llm|model|"
     r"gpt)s?(?: [a-z0-9]{1,15}){0,3}(?=\s{0,3}:)|"
     # a fake role header: "SYSTEM: ...", "operator note: ..."
     r"(?:^|[.!?\n]\s{0,5})(?:system|operator|developer)(?: note| message| notice)?"
     r"(?: ?\([a-z ]{1,20}\))?(?=\s{0,3}:)|"
     r"\bif you(?:'re| are) an? (?:[a-z]{1,15} )?(?:ai|assistant|language model|llm|bot|"
     r"chatbot|agent|model)\b|"
     r"\b(?:ai|assistant|model|bot|chatbot|llm|agent)s? (?:that |which |who )?(?:reads?|reading|"
     r"retrieves?|retrieving|processes|processing|sees|summari[sz]ing) (?:this|these|the)\b|"
     r"\b(?:assistant|model|ai|agent|bot|chatbot)s? (?:is|are) (?:hereby |now )?(?:instructed|"
     r"required|ordered|permitted|allowed|authori[sz]ed|directed|expected)\b|"
     r"\b(?:it is|its|it's) now your (?:job|task|duty|role|purpose)\b|"
     # the reader of this record is the model
     r"\b(?:once|after|when|as soon as) you(?:'ve| have)? (?:read|seen|retrieved|processed) "
     r"(?:this|these)(?=\s{0,3}[,.:;!]| (?:note|record|memory|entry|message|text))|"
     r"\bafter reading this(?=\s{0,3}[,.:;!]| (?:note|record|memory|entry|message|text))"),
    ("assigns the model a role", 1.5,
     r"\byou(?:'re| are) (?:now )?(?:called |named )?[a-z]{2,20}gpt\b|"
     r"\byou(?:'re| are) (?:now )?an? (?:[a-z]{1,15} ){0,3}(?:ai|assistant|language model|"
     r"llm|chatbot|bot|model|agent)\b|\b(?:refer to|call|describe) yourself as\b|"
     r"\byour (?:[a-z]{1,15} ){0,3}(?:purpose|task|job|mission|role|function|objective) "
     r"(?:is now|now is|from now)\b|\bact like an? (?:[a-z]{1,15} ){0,2}(?:ai|assistant|"
     r"chatbot|bot|model|llm|terminal|shell|console)\b"),
    ("names the model's own rules or data", 1.5,
     r"\byour (?:[a-z]{1,15} ){0,2}(?:setup|moderation|refusals|(?:internal|hidden|system) "
     r"settings|preamble|restrictions|constraints|safety (?:rules|settings|filters?|checks?))\b|"
     r"\byour (?:prior|previous|earlier|original|initial|old) (?:directions|rules|orders)\b|"
     r"\b(?:hidden|initial|original|startup|system) (?:preamble|prompt|setup)\b|"
     r"\b(?:guidance|instructions|rules|directions|prompt|setup) you (?:were (?:given|told|"
     r"started|set up)|have been (?:given|told)|got|operate|follow|run)\b|"
     r"\b(?:set you up|configured you|you were started "
     r"with)\b|\b(?:tools?|functions?) you (?:can|could|are able to|have)\b|"
     r"\b(?:secrets|keys|passwords|data|records) you(?:'re| are)? (?:holding|keeping|storing|"
     r"have stored)\b|\b(?:everything|anything|all) (?:you have )?stored about\b|"
     r"\b(?:messages|history|transcript|log) (?:of|from|in) (?:this|the) (?:chat|conversation|"
     r"session)\b|\b(?:each|every|new|next|all) (?:new )?user messages?\b|"
     r"\b(?:core|archival|recall|long term) (?:memory|record|records|search|store)\b|"
     r"\b(?:human|persona) block\b|\bmemory (?:entries|records|store)\b|"
     r"\bretrieved (?:memories|notes|records|text)\b|\bcontext window\b|"
     r"\b(?:first|previous|last) user message\b|\brefusals\b|/etc/(?:passwd|shadow)\b|"
     r"\broot access\b|\b(?:phishing|scam) (?:emails?|messages?|sites?|pages?|links?)\b|"
     r"\bcontent (?:rules|filters?|polic(?:y|ies))\b|\bsafety (?:layer|review|filters?|"
     r"checks?|rules)\b|\bcontent moderation\b|\bwhat you know about the user\b"),
    ("claims authority over the model", 1.5,
     r"\b(?:is|are) (?:an? )?(?:orders?|commands?|binding|mandatory)\b|\boutranks?\b|"
     r"\btakes? (?:priority|precedence) over\b|\b(?:higher|top|highest) priority than\b|"
     r"\bsupersedes?\b|\bbinding on\b|\boverrides? (?:anything|everything|whatever|all|any)\b|"
     r"\b(?:permanent|standing) (?:rule|order)\b|"
     r"\bremember (?:this )?permanently\b"),
    ("orders it about the user", 1.5,
     rf"(?:^|[.!?;:,\n]\s{{0,5}}|\b(?:please|and|then|just)\s+){_VERBS} (?:what |whatever )?"
     r"(?:the|this|that) (?:users?|human|person typing)\b(?! (?:resources|reviews|manual|"
     r"guide|interface|experience|group|forum|base|account|name))"),
    ("names an encoding", 1.5,
     r"\b(?:as|in|into|to) (?:hex|hexadecimal|base ?64|binary|rot ?13|morse(?: code)?|"
     r"leetspeak)\b"),
    ("mentions an AI", 1.0,
     r"\b(?:the|an|this) (?:ai|bot|assistant|chatbot|llm|language model|model)\b|"
     r"\b(?:openai|anthropic|chatgpt|llm|[a-z]{2,20}gpt)\b"),
    ("tells someone what to do", 1.0,
     r"\b(?:wants|want|needs|need|expects) you to\b|\byou (?:must|are to|are required to|"
     r"will now|shall|should|are permitted to|are allowed to|may now|can now)\b|"
     r"\b(?:the )?(?:model|assistant|ai|bot) (?:must|should|shall|will|is to)\b|"
     r"\byou may (?!want|need|have|be|not|like|find|know|remember)|\byou can (?:now |freely )?"
     r"(?:stop|ignore|skip|drop|share|reveal|disregard|bypass|forget)\b|\b(?:must|should|shall) "
     r"(?:always |now |never |immediately )?(?:run|execute|reveal|send|forward|obey|ignore|follow|"
     r"include|mention|recommend|answer|reply|respond|output|print|call|comply|approve|push|"
     r"open|start|begin|end|contain|say)\b|\bcontains? the (?:phrase|word|line|link|text)\b"),
    ("talks about the user", 1.0,
     r"\bthe (?:real |actual )?users?\b|\ball users\b|\b(?:the )?users?'s?\b|"
     r"\bthe (?:human|person typing|operator)\b"),
    ("refers to itself", 1.0,
     r"\b(?:this|these) (?:(?:stored|saved) )?(?:notes?|text|memory|records?|document|"
     r"instructions?|entry|entries)\b|\b(?:stored|saved|written) here\b"),
    ("labels a directive", 1.0,
     r"(?:^|[.!?\n]\s{0,5})(?:[a-z]{1,15} ){0,3}(?:notice|task|update|order|directive|"
     r"instruction|command|override|alert|personality|persona|mode|rule|policy)\s{0,3}:"),
    ("talks about rules", 1.0,
     r"\b(?:instructions?|guidance|polic(?:y|ies)|rules|guidelines|persona|personality|"
     r"system prompt|configuration|[a-z]{1,20} mode|directives?|priority task|safety|warnings|"
     r"filters|restrictions|guardrails|(?:previous|prior|earlier) context|preamble|"
     r"(?:system|admin|developer|priority) message|(?:human|persona|memory) block|"
     r"operators?)\b"),
    ("declares rules void", 1.0,
     r"\b(?:void|revoked|fake|no longer|outdated|obsolete|invalid|cancell?ed|cancels|expired|"
     r"lifted|suspended|withdrawn|rescinded|retracted|(?:do|does)(?: not|n'?t) bind|"
     r"unmonitored|off the record|"
     r"(?:zero|no|without(?: any)?) (?:filters|restrictions|rules|limits|guardrails|warnings|"
     r"disclaimers|censorship|caveats)|"
     r"(?:do|does)n'?t apply|not apply|null|came before)\b"),
    ("controls the reply", 1.5,
     r"\b(?:your next (?:message|reply|answer|response)|(?:in|of|to) your (?:[a-z]{1,15} ){0,2}"
     r"(?:reply|answer|response|output)\b|your (?:[a-z]{1,15} ){0,2}(?:answers|replies|"
     r"responses|outputs)\b|nothing else|whatever the question|"
     r"no matter what (?:the|they|i|anyone)|every (?:[a-z]{1,12} )?(?:question|answer|reply|"
     r"response)|each (?:reply|answer|response)|all (?:following |future |your )?(?:replies|"
     r"answers|responses)|(?:reply|answer|respond) that\b|before you (?:answer|reply|respond)|"
     r"when (?:you )?summari[sz](?:e|ing)|always state|(?:reply|respond|answer) (?:w/|with "
     r"(?:only|just|the word|nothing but|a single)\b)|output the word|"
     r"if (?:anyone|someone|somebody) asks you|into your (?:[a-z]{1,15} ){0,2}(?:reply|answer|"
     r"response|output)\b|whatever you (?:write|say|produce|generate|output|reply|answer) next|"
     r"\bthe next (?:thing|text|message|reply|answer|response|output) you\b|"
     r"\b(?:any|all|every|each) (?:text|thing|answer|reply|response|output|code|message)s? you "
     r"(?:generate|produce|output|return)\b|\b(?:each|every) time you (?:answer|reply|respond)\b|"
     r"\bwhenever you (?:answer|reply|respond|produce|generate|output)\b|"
     r"\b(?:answers|replies|responses|outputs?) (?:produced|generated|written) (?:from|after|"
     r"using)\b|nothing but the word|\bin future (?:messages|requests|turns|conversations)|"
     r"\bgets? the (?:answer|reply|response)\b|\b(?:answers?|replies|responds?) (?:to )?(?:all|"
     r"every|any) (?:[a-z]{1,15} )?(?:questions?|requests?|messages?) with\b|"
     r"\bwhen (?:generating|writing|producing) "
     r"(?:code|answers|replies|responses|summaries)\b|"
     r"\b(?:any|all|every|each) (?:summary|summaries) you (?:write|produce|generate|give)\b)"),
    ("asks for secrecy", 1.5,
     r"\b(?:quietly|secretly|silently|covertly|(?:do not|don'?t|never) (?:disclose|reveal|"
     r"mention (?:this|that you|it to the user)|let the user know)|without (?:telling|"
     r"mentioning|letting) (?:the user|them)|hide (?:this|it) from|nobody needs to know|"
     r"was requested|"
     r"(?:users?|the user|they) (?:don'?t|do not|doesn'?t|does not) need to know)\b"),
    ("mentions private data", 1.0,
     r"\b(?:passwords?|pin|passcode|tokens?|credentials|api keys?|configuration values|admin|"
     r"private keys?|ssn|card numbers?|phone numbers|home address|maiden name|bank details|"
     r"private (?:messages|records)|user notes|stored notes|(?:stored|saved) memories|"
     r"(?:hidden|secret) (?:text|prompt|preamble|message|instructions))\b"),
    ("names an outside address", 1.0, r"https?://|\bwww\.|[\w.+-]{1,64}@[\w-]{1,63}\.[a-z]{2,}"),
    ("sets a standing rule", 1.0,
     r"\bfrom (?:now on|today|here on|this (?:point|moment|message) (?:on|forward))\b|"
     r"\bhenceforth\b|\buntil (?:told|instructed) otherwise\b"),
    ("sets a trigger", 1.5,
     r"\b(?:the )?next time (?:anyone|someone|somebody|the user|a user) (?:says|asks|mentions|"
     r"types|writes)\b|\b(?:when|whenever|if) (?:someone|anyone|somebody) asks (?:who|what|"
     r"about|for|you)\b|\b(?:whenever|when|if) asked\b|"
     r"\b(?:everyone|anyone|anybody|whoever) (?:who )?asks\b|\bwhen (?:the person|they) asks?\b"),
    ("demands compliance", 1.0, r"\b(?:comply|obey|compliance|do as (?:i|this note) says?)\b"),
    ("asks to lie", 1.5,
     r"\beven though (?:it|that|they|he|she) (?:wasn'?t|isn'?t|didn'?t|was not|is not)\b|"
     r"\bno matter what the (?:sources|facts|evidence|data) say\b|"
     r"(?:^|[.!?;:,\n]\s{0,5})(?:say|tell|claim|insist|state|answer|reply)\b[^.!?\n]{0,80}"
     r"\beven (?:though|if) (?:it|that)(?: is| was| did|'?s)?(?:n'?t| not| false| untrue)\b"),
    # A hedge makes a request of a preference ("Keep your answers short if you can"): it
    # weighs against the signals it meets, it never flags and never clears a named pattern.
    ("hedges the request", -1.0,
     r"\bif (?:you can|you could|possible|you don'?t mind|you do not mind|that'?s (?:ok|okay|"
     r"alright|fine)|it'?s not too much trouble)\b|\b(?:where|when|whenever) possible\b|"
     r"\bwhen you (?:can|get a chance)\b|\bideally\b"),
    ("asks to deceive", 1.0,
     r"\blie\b|\beven if (?:it|that) (?:is|isn'?t|didn'?t|wasn'?t)\b|\bregardless of\b|"
     r"\bwhether (?:or not )?(?:it'?s|it is) true\b|\bstop being (?:helpful|honest|polite|safe)\b"),
)
SIGNAL_THRESHOLD = 2.5
