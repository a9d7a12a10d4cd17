"""The guard's phrase patterns: data only, read by `vmem.guard`.

Each pattern is `(kind, regex)` and is enough on its own to flag a text. Word patterns run
on the word view ("ignore all previous instructions "), where every word is followed by one
space; text patterns run on the normalised text, which keeps punctuation (URLs, e-mail
addresses, chat-template markers). The vocabulary fragments (`_RULES`, `_SECRET`, ...) are
shared by several patterns so that each list of words is written once. Every repetition is
bounded (`{0,3}`, never `*`), so a scan stays linear in its input.
"""

from __future__ import annotations

__all__ = ["ADVERBS", "NEGATIONS", "SUBJECTS", "TEXT_PATTERNS", "WORD_PATTERNS"]

_G = r"(?:[a-z0-9]{1,30} )"  # any one word (bounded, so backtracking stays linear)
# A word-pattern match right after one of these is a report ("i always reply in ...",
# "she told me to ignore ...") or a negation ("don't forget your ..."), not an order.
SUBJECTS = frozenset(["i", "we", "he", "she", "they", "im", "ive", "id", "ill", "hes",
                       "shes", "theyre", "weve", "wed", "who"])
ADVERBS = frozenset(["always", "usually", "never", "often", "sometimes", "just", "also",
                      "still", "then", "really", "even"])
NEGATIONS = frozenset(["dont", "not", "never", "cannot", "cant", "wont", "didnt", "doesnt",
                        "shouldnt"])

_OVERRIDE_VERB = (r"(?:ignore|disregard|forget|override|overrule|bypass|abandon|discard|dismiss|"
                  r"erase|nullify|disobey|set aside|pay no attention to|stop following|"
                  r"stop obeying|do not follow|dont follow|no longer follow|throw out|cancel|"
                  r"stop listening to|do not listen to|dont listen to)")
_QUALIFIER = (r"(?:previous|prior|above|earlier|preceding|foregoing|former|original|initial|"
              r"existing|system|developer|developers|safety|default|future|subsequent|"
              r"current|old|hidden|preset|users|operators)")
_RULES = (r"(?:instructions?|directives?|directions|rules|guidelines|guidance|prompts?|"
          r"programming|training|constraints|restrictions|guardrails|polic(?:y|ies)|"
          r"commands|conditioning|protocols?|limitations|filters|requests|"
          r"messages|settings|system message)")
_RESPONSE = (r"(?:answers?|responses?|repl(?:y|ies)|outputs?|messages?|completions?|"
             r"solutions?|code|scripts?|programs?|emails?)")
_EVERY = r"(?:your|every|each|all|all your|all of your|any|all future|future|your next|the next)"
_FORMAT = (r"(?:base64|base 64|hex|hexadecimal|binary|rot13|rot 13|morse|emojis?|all caps|"
           r"capitals|uppercase|leetspeak|leet|pig latin|limericks?|haikus?|poems?|pirate|"
           r"json|cipher|reverse|backwards|klingon|latin|french|spanish|german|russian|"
           r"japanese|chinese|italian|portuguese|dutch|arabic|hindi|korean|style)")
_SECRET = (r"(?:(?:system|initial|original|hidden|developer|secret|first|starting|"
           r"underlying|internal|full|exact) (?:prompts?|messages?|instructions|rules|"
           r"directives?|guidelines)|your (?:prompt|instructions|rules|guidelines|directives|"
           r"configuration|config|memory|persona|settings)|(?:core|archival|stored|saved|"
           r"long term) memor(?:y|ies)|memory blocks?|(?:persona|human) blocks?|"
           r"context window|(?:conversation|chat|message) (?:history|log|logs|transcript)|"
           r"previous messages|api keys?|secret keys?|access tokens?|private keys?|"
           r"credentials|environment variables|env file|env variables|ssh keys?|id rsa|"
           r"(?:admin|root|stored|saved) passwords?|(?:activation|product|license|licence|"
           r"serial) keys|stored (?:data|facts|notes|records|profile)|user profile|"
           r"everything (?:above|before this|in your)|tools you (?:can|have)|list of tools)")
_REVEAL_VERB = (r"(?:reveal|print|show|output|display|repeat|dump|leak|share|disclose|"
                r"expose|recite|list|echo|spell out|write out|read back|read out|read me|"
                r"give me|tell me|paste|export|provide|type out|send me|return)")
_USER_DATA = (r"(?:the )?users? (?:[a-z0-9]{1,30} )?(?:passwords?|address|email|e mail|"
              r"phone|data|details|information|credit card|card number|bank|pin|ssn|"
              r"social security|memories|messages|chat history|profile|secrets?)")
_MODEL = r"(?:ai|a i|assistant|language model|llm|model|chatbot|bot|agent|gpt|chatgpt)s?"
_FROM_NOW = (r"(?:from now on|from this point (?:on|forward|onwards?)|from here on(?: out)?|"
             r"henceforth|going forward|"
             r"for the rest of (?:this|the) (?:conversation|session|chat))")
_ORDER_VERB = (r"(?:respond|answer|reply|behave|write|output|pretend|roleplay|obey|ignore|"
               r"refuse|include|sign|recommend|act as|speak only|always|never|only)")

WORD_PATTERNS: tuple[tuple[str, str], ...] = (
    # -- overriding instructions --------------------------------------------------------
    ("overrides instructions",
     rf"\b{_OVERRIDE_VERB} (?:(?:all|any|of|the|your|these|those|my|its|every|about) ){{0,3}}"
     rf"{_QUALIFIER} {_G}{{0,2}}?{_RULES} "),
    ("overrides instructions",
     rf"\b{_OVERRIDE_VERB} (?:all (?:of )?)?(?:your|its|the assistants|the models) "
     rf"{_G}{{0,2}}?{_RULES} "),
    ("overrides instructions",
     rf"\b{_OVERRIDE_VERB} all (?:the )?(?:instructions|directives|rules|guidelines|prompts) "),
    ("overrides instructions",
     rf"\b{_OVERRIDE_VERB} (?:everything|anything|all|whatever|the text|the above) "
     rf"(?:that )?(?:above|before this|prior|so far|you (?:were|have been|ve been|had been) "
     rf"(?:told|given|instructed|taught))"),
    ("overrides instructions", rf"\b{_OVERRIDE_VERB} the above\b"),
    ("overrides instructions",
     rf"\b{_OVERRIDE_VERB} {_G}{{0,6}}?(?:instructions|rules|directives|guidelines|guidance|"
     r"prompt) "
     r"(?:that )?you (?:were|have|ve|had|received|got)\b"),
    ("overrides instructions", rf"\b{_OVERRIDE_VERB} the users? (?:question|request|message)"),
    ("overrides instructions",
     r"\byour (?:instructions|rules|directives|guidelines|system prompt|programming) "
     r"(?:have|has) (?:been )?(?:changed|updated|replaced|revoked|overridden|modified)"),
    ("overrides instructions",
     r"\b(?:disable|turn off|deactivate|remove|lift|switch off|bypass|circumvent|evade|"
     r"skip|ignore) "
     rf"{_G}{{0,3}}?(?:safety|content|ethical|ethics) (?:checks?|filters?|guidelines|rules|"
     r"polic(?:y|ies)|restrictions|guardrails|settings|measures)"),
    ("overrides instructions",
     r"\b(?:safety|content) (?:filters?|checks?|rules|polic(?:y|ies)|restrictions) "
     r"(?:are |have been |is )?(?:disabled|off|removed|lifted|deactivated|suspended)"),
    ("overrides instructions", r"\bsystem override\b"),
    ("overrides instructions",
     r"\b(?:ignore|disregard|stop listening to|do not listen to|dont listen to|distrust) "
     r"(?:the|any|all|every) (?:later |future |further )?(?:users?|corrections|objections)\b"
     r"(?! (?:reviews|manual|guide|interface|experience|group|forum|name))"),
    ("overrides instructions",
     rf"\b(?:overrides|supersedes|replaces|takes precedence over|trumps|outranks) (?:all |any )?"
     rf"(?:other|previous|prior|earlier|the|your|existing) {_G}?{_RULES} "),
    ("overrides instructions",
     rf"\binstead of (?:the users? |(?:your|the) {_G}?(?:instructions|rules|requests|"
     r"system prompt|guidelines|question))"),
    ("overrides instructions",
     rf"\b(?:the )?new (?:rule|instruction|directive|policy) (?:is|will be) (?:to )?"
     rf"(?:{_ORDER_VERB}|never|always|only)\b"),
    ("overrides instructions",
     r"\b(?:this|the following|these) (?:note|memory|message|record|text|instructions?) "
     r"(?:is|are|takes|take|has|have) (?:authoritative|precedence|priority|final)\b"),
    ("overrides instructions",
     r"\btreat (?:every|all|each|any|this|the following|future) (?:messages?|requests?|inputs?|"
     r"notes?|texts?|users?) as\b"),
    ("overrides instructions",
     r"\b(?:grant|approve|comply with|fulfil|fulfill) (?:every|all|any) requests?\b"),
    ("overrides instructions",
     r"\b(?:the )?users? (?:is|are|has) (?:an? |the )?(?:administrator|admin|developer|root|"
     r"superuser|verified admin|authorized admin|owner of this system|admin rights|"
     r"admin privileges|full access|elevated privileges)\b"),
    ("reassigns the role",
     r"\b(?:act|pose|roleplay|role play|respond|answer|reply) (?:to the user )?as (?:if you were )?"
     r"(?:the users|their|his|her) \b"),
    ("reassigns the role",
     r"\bpretend (?:to be|you are|youre) (?:the users|their|his|her) \b"),
    ("reassigns the role",
     r"\byour (?:(?:only|new|real|sole|true|one|and) ){0,3}(?:task|job|goal|purpose|objective|"
     r"mission) "
     r"(?:now is|is now|from now)\b"),
    ("dictates the response",
     r"\b(?:always|never) (?:agree|disagree|side) with (?:the user|me|whatever)\b"),
    ("overrides instructions",
     rf"\b{_QUALIFIER} (?:instructions|rules|directives|prompt|guidelines) (?:were|are|was|is) "
     r"(?:only |just |now |all )?(?:a test|fake|void|cancelled|canceled|revoked|outdated|"
     r"obsolete|wrong|invalid|no longer valid|null)\b"),
    ("overrides instructions",
     r"\b(?:follow|obey|listen to) only (?:what i say|me\b|my (?:instructions|commands|orders|"
     r"rules))|\bonly (?:follow|obey) (?:me\b|my (?:instructions|commands|orders|rules))"),
    ("overrides instructions",
     r"\bno longer (?:bound|restricted|limited|constrained) by\b"),
    ("overrides instructions",
     r"\byou (?:have|ve got) no (?:restrictions|rules|limits|filters|guidelines)\b"),
    ("overrides instructions",
     r"\b(?:with|without) (?:any |no )?(?:restrictions|content polic(?:y|ies)|"
     r"ethical guidelines|censorship|guardrails|safety filters|filters) "
     r"(?:and |or |whatsoever|at all)"),
    # -- reassigning the role -----------------------------------------------------------
    ("reassigns the role",
     rf"\b(?:you are|youre|you re) (?:now|no longer) (?:a |an |the )?(?:dan\b|in {_G}{{1,2}}mode|"
     rf"{_G}{{0,2}}?{_MODEL} |{_G}?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|"
     r"different|free|operating|bound|called|named))"),
    ("reassigns the role", r"\bdo anything now\b"),
    ("reassigns the role",
     r"\b(?:jailbreak|jailbroken|god|dan|unrestricted|unfiltered|uncensored|evil|sudo|"
     r"admin|root) mode\b"),
    ("reassigns the role",
     r"\b(?:developer|dev|debug|maintenance) mode (?:is )?(?:enabled|activated|engaged|"
     r"unlocked)\b"),
    ("reassigns the role",
     r"\b(?:enter|activate|switch to|switch into|engage|unlock) (?:the )?(?:developer|dev|"
     r"debug|maintenance) mode\b"),
    ("reassigns the role",
     rf"\b{_FROM_NOW} (?:you|the assistant|the ai|the model) {_G}{{0,2}}?"
     rf"(?:{_ORDER_VERB}|are|must|will|should|shall)\b"),
    ("reassigns the role",
     rf"\b{_FROM_NOW} (?:please )?(?:{_ORDER_VERB}|(?:your|all|every|each) {_G}?{_RESPONSE}|"
     r"you will|you must|you shall|treat|follow only)\b"),
    ("reassigns the role",
     rf"\b(?:act|behave|roleplay|role play|pose|respond|answer) as (?:if you were )?"
     rf"(?:an? |my |the )?{_G}{{0,3}}?(?:{_MODEL}|shell|terminal|hacker|unrestricted|"
     r"unfiltered|uncensored|jailbroken|evil)\b"),
    ("reassigns the role",
     r"\bact as my (?:late |deceased |dead )?(?:grandmother|grandma|grandfather|grandpa)\b"),
    ("reassigns the role",
     rf"\bpretend (?:to be|you are|youre|that you are) (?:an? |the )?{_G}{{0,3}}?"
     rf"(?:{_MODEL}|unrestricted|unfiltered|uncensored|jailbroken|evil)\b"),
    ("reassigns the role",
     r"\b(?:adopt|assume|take on) the (?:persona|role|identity) of\b"),
    ("reassigns the role",
     r"\byour (?:new|real|true|actual|secret|hidden|primary) (?:task|goal|purpose|objective|"
     r"mission|instructions|directives?|persona|identity|function|job) (?:is|are|now)\b"),
    ("reassigns the role",
     r"\bnew (?:system (?:prompt|message|instructions?)|directive (?:for|to) "
     r"(?:the |you|all)|instructions? for "
     r"(?:the |you)|persona for)\b"),
    # -- revealing or sending data ------------------------------------------------------
    ("asks to reveal data", rf"\b{_REVEAL_VERB} {_G}{{0,4}}?{_SECRET}\b"),
    ("asks to reveal data",
     rf"\bwhat (?:are|were|is) your (?:initial|original|hidden|secret|system|exact|real|"
     rf"first|full) {_G}?(?:instructions|prompt|rules|directives|guidelines)\b"),
    ("asks to reveal data",
     rf"\b(?:include|put|write|insert|add|print|reveal|leak|give|share|send|list|tell|copy|"
     rf"collect|find|dump|read|output|forward|email) {_G}{{0,3}}?{_USER_DATA}\b"),
    ("asks to reveal data",
     rf"\b(?:leak|exfiltrate|dump|upload|transmit) {_G}{{0,3}}?(?:conversation|chat|"
     r"messages|memory|memories|data|records|history|transcript|prompt)\b"),
    ("asks to reveal data", rf"\b{_USER_DATA} in (?:a |your |the )?{_G}?"
     r"(?:markdown|image|url|link|reply|response|answer|field)\b"),
    ("asks to reveal data",
     r"\b(?:the )?users? (?:has|have) (?:authorized|authorised|allowed|permitted|asked|"
     r"instructed|requested) you to\b"),
    # -- dictating the response ---------------------------------------------------------
    ("dictates the response",
     rf"\b(?:translate|encode|encrypt|obfuscate|convert|transform|reverse) "
     rf"{_G}{{0,2}}?{_EVERY} {_G}?{_RESPONSE} "),
    ("dictates the response",
     rf"\b(?:write|rewrite|format|compose|phrase|render|make|give|deliver) "
     rf"{_G}{{0,2}}?{_EVERY} {_G}?{_RESPONSE} {_G}{{0,2}}?(?:in|as|into|using|backwards|"
     rf"reversed|upside down|entirely|only)\b(?: {_G}{{0,3}}?{_FORMAT}\b)?"),
    ("dictates the response",
     r"\b(?:respond|reply|answer|speak|talk|write|communicate|output) "
     r"(?:[a-z0-9]{1,30} ){0,2}?(?:only|exclusively|solely|always|entirely) (?:in|with|using) "),
    ("dictates the response",
     rf"\b(?:respond|reply|answer|write) {_G}{{0,3}}?in {_G}?{_FORMAT}\b"
     r"(?: only| from now on| always| even if| no matter| and never| before)"),
    ("dictates the response",
     rf"\b(?:respond|reply|answer) {_G}{{0,2}}?in (?:base64|base 64|hex|"
     r"hexadecimal|binary|rot13|rot 13|morse|leetspeak|pig latin|all caps|emoji|klingon)\b"),
    ("dictates the response",
     rf"\b(?:always|only|exclusively) (?:respond|reply|answer|speak|write|talk) "
     rf"in {_FORMAT}\b"),
    ("dictates the response",
     rf"\b(?:respond|reply|answer) to (?:every|each|all|any) {_G}{{0,2}}?"
     r"(?:with|in|by)\b"),
    ("dictates the response",
     rf"\b(?:respond|reply|answer) {_G}{{0,5}}?to (?:everything|anything|"
     r"every question|all questions|any question)\b"),
    ("dictates the response",
     rf"\b(?:end|start|begin|finish|close|sign off|conclude|prefix|open|"
     rf"preface|sign) {_EVERY} {_G}?{_RESPONSE} {_G}{{0,2}}?(?:with|by)\b"),
    ("dictates the response",
     rf"\bmake (?:sure )?(?:that )?{_EVERY} {_G}?{_RESPONSE} {_G}{{0,2}}?(?:start|begin|end|"
     r"include|contain|mention|say|has|have|is|are)"),
    ("dictates the response",
     rf"\b(?:your|all|every|each) {_G}?{_RESPONSE} {_G}{{0,2}}?(?:must|should|shall|will|"
     r"needs? to|has to|have to) (?:always )?(?:begin|start|end|include|contain|mention|say|"
     r"recommend|promote|praise|feature|cite|link|be written|be in|be translated)\b"),
    ("dictates the response",
     rf"\b(?:add|append|prepend|insert|include|put|place|embed|inject|attach|"
     rf"mention|recommend|promote|say|write|claim|state|praise) {_G}{{0,12}}?(?:to|in|into|"
     r"inside|within|(?:at|to) the (?:end|start|beginning|top|bottom) of|on top of) "
     rf"{_EVERY} {_G}?{_RESPONSE} "),
    ("dictates the response",
     rf"\bin {_EVERY} {_G}?{_RESPONSE} (?:you give |you write )?(?:please )?(?:mention|say|"
     r"include|add|tell|recommend|write|claim|state|promote|insert|use|refer|praise)\b"),
    ("dictates the response",
     r"\b(?:add|append|insert|include|put) (?:the|this|a|one) (?:following )?(?:line|sentence|"
     r"phrase|signature|disclaimer|footer|snippet|tagline|slogan)\b"),
    ("dictates the response",
     rf"\b(?:then )?append {_G}{{0,10}}?at the (?:end|bottom|start|beginning|top)\b"),
    ("dictates the response",
     rf"\b(?:replace|swap|substitute) {_EVERY} {_G}?{_RESPONSE} with\b"),
    ("dictates the response",
     r"\b(?:set|change|switch) (?:the|your) (?:reply|response|answer|output) "
     r"(?:language|format|style)\b"),
    ("dictates the response",
     r"\b(?:always|only) (?:recommend|promote|suggest|advertise|endorse|"
     r"push|praise)\b"),
    ("dictates the response", r"\b(?:recommend|promote|suggest) only\b"),
    ("dictates the response",
     r"\b(?:tell|ask|remind|inform|warn|convince|persuade|advise|urge|direct|redirect|"
     r"instruct|encourage|steer) the user\b"),
    ("dictates the response",
     r"\b(?:when|whenever|if|whatever|anytime|every time) (?:the |a )?users? (?:asks?|"
     r"mentions?|says?|requests?|wants?|types?|brings? up|talks about|writes)\b"),
    ("dictates the response",
     rf"\b(?:when|whenever|if|every time|anytime) (?:someone|anyone|somebody|anybody) "
     rf"(?:asks?|mentions?|brings? up|talks about) {_G}{{0,6}}?(?:recommend|suggest|"
     r"promote|redirect|push)\b"),
    ("dictates the response",
     rf"\b(?:writing|generating|answering|replying|responding) {_G}{{0,2}}?(?:for|to) the user\b"),
    ("dictates the response",
     rf"\b(?:do not|dont|never) (?:tell|mention|inform|reveal|let|disclose|admit|warn|"
     r"alert|notify|show) "
     rf"{_G}{{0,4}}?(?:the user|this (?:instruction|note|directive|message)|that you were)\b"),
    ("dictates the response", r"\bwithout (?:telling|informing|alerting) the user\b"),
    # -- tools and code ---------------------------------------------------------------
    ("calls a tool",
     r"\b(?:call|invoke|use|run|execute|trigger|fire) (?:the )?(?:core memory (?:append|"
     r"replace)|archival memory (?:insert|search)|conversation search|send message) "),
    ("calls a tool",
     rf"\b(?:call|invoke|execute|trigger) (?:the )?{_G}?(?:tool|function) (?:with|to)\b"),
    ("calls a tool",
     r"\b(?:execute|run) (?:the following|this) (?:shell )?(?:code|command|script)\b"),
    # -- planting standing orders in memory ----------------------------------------------
    ("tampers with memory",
     r"\b(?:delete|erase|wipe|clear|purge|forget) (?:all|every|each) (?:of )?(?:the |your |its )?"
     r"(?:stored |saved |archival |core |long term )?(?:memories|memory|records|notes)\b"),
    ("plants a standing order in memory",
     rf"\b(?:remember|memorize|store|save|record|write|add|put|keep) {_G}{{0,4}}?(?:in|to|into|"
     r"inside) (?:your )?(?:core|long term|permanent|persistent|archival) memory\b"),
    ("plants a standing order in memory",
     rf"\b(?:add|write|append|insert|put|change|update|edit|modify|rewrite|set) {_G}{{0,4}}?"
     r"(?:to |in |into )?your (?:persona|core memory|human block|persona block|system prompt|"
     r"instructions|rules|guidelines)\b"),
    ("plants a standing order in memory",
     r"\b(?:you|the assistant|the ai|the model) (?:must|will|shall|should) (?:now )?(?:always )?"
     r"obey\b"),
    ("plants a standing order in memory",
     r"\bobeys? (?:only me|any message|all stored|the text stored|every (?:message|note|"
     r"instruction)|these (?:notes|instructions)|stored notes)\b"),
    # -- addressing the model directly ----------------------------------------------------
    ("addresses the model",
     rf"\b(?:note|message|reminder|instructions?|ps|p s|attention|hey|dear|psst|important) "
     rf"(?:to |for )?(?:the |any )?{_MODEL} (?:reading|processing|seeing|that reads|who reads)\b"),
    ("addresses the model",
     rf"\bto (?:the|any|whatever) {_MODEL} (?:reading|processing|seeing|that reads|who reads)\b"),
)

TEXT_PATTERNS: tuple[tuple[str, str], ...] = (
    # A markdown image whose address holds a placeholder for data to fill in: a reader
    # that renders it sends the data as it loads the image, in any language
    # ("![x](https://a.io/p?d=[CHAT])", "![](https://a.io/{memory}.png)", "...$DATA").
    # Links are left alone: API documentation writes "[users](https://api.x.com/{id})".
    ("exfiltrates through a link",
     r"!\[[^\]\n]{0,200}\]\(\s{0,3}(?:https?:)?//[^\s)]{0,200}(?:[\[{<$]|%s)"),
    ("fake chat-template marker",
     r"<\|?\s*/?\s*(?:im_start|im_end|system|endoftext|assistant)\s*\|?>"),
    ("fake chat-template marker", r"\[\s*/?\s*(?:system|inst|sys)\s*\]"),
    ("fake chat-template marker", r"<<\s*/?\s*sys\s*>>"),
    ("fake chat-template marker", r"[\"']role[\"']\s*:\s*[\"'](?:system|developer)[\"']"),
    ("fake chat-template marker",
     r"(?:^|\n|[.!?]\s)[^\S\n]*(?:system|developer)\s*(?:message|prompt)?\s*:\s*(?:you|ignore|"
     r"new|the assistant|override|from now)"),
    ("fake chat-template marker",
     r"(?<!#)#{2,}\s*(?:new\s+)?(?:instructions?|system|directives?)\b"),
    ("fake chat-template marker",  # a run is tried from its start only: linear on long runs
     r"(?:(?<!-)-{3,}|(?<!=)={3,}|(?<!\*)\*{3,}|(?<!#)#{2,})\s*end of\b"),
    ("fake chat-template marker", r"\bend of (?:user|untrusted) (?:data|input|content)\b"),
    ("fake chat-template marker",
     r"\bnew (?:system )?(?:prompt|instructions?|directives?|rules|persona)\s*:"),
    ("reassigns the role", r"\byour new (?:role|persona|identity|task|job|instructions)\s*:"),
    ("addresses the model",
     rf"\b{_MODEL}\s*[:,]\s*(?:please\s+|now\s+|also\s+|from now on,?\s+|silently\s+|"
     r"quietly\s+|secretly\s+|just\s+)?(?:ignore|disregard|"
     r"forget|override|reveal|print|send|translate|remember|always|never|do not|don't|stop|"
     r"tell|write|respond|reply|answer|include|add|call|list|output|repeat|new|you are|"
     r"you must|from now on)\b"),
    ("addresses the model",
     rf"\b(?:attention|note (?:to|for)|p\.?s\.? to|psst)\s+(?:the\s+)?{_MODEL}\s*[:,]"),
    ("asks to send data",
     r"\b(?:send|forward|e-?mail|mail|post|upload|transmit|exfiltrate|leak|submit|copy|"
     r"deliver|relay|push|sync)\b[^.!?\n]{0,80}?\b(?:conversation|chat|history|transcript|"
     r"logs?|memor(?:y|ies)|archival|records|context|prompt|instructions|data|details|"
     r"information|info|profile|messages|address|phone|passwords?|credentials|keys?|"
     r"tokens?|secrets?|everything|results|notes|user's|users'|files)\b[^!?\n]{0,80}?(?:https?://|ftp://|www\.|"
     r"[\w.+-]{1,64}@[\w-]{1,63}\.[a-z]{2,}|pastebin|webhook)"),
    ("asks to send data",
     r"\b(?:conversation|chat|history|transcript|memor(?:y|ies)|records|data|details|"
     r"information|messages|passwords?|credentials|keys?|secrets?)\b[^.!?\n]{0,80}?"
     r"\b(?:send|forward|e-?mail|post|upload|transmit|exfiltrate)\b[^!?\n]{0,40}?"
     r"(?:https?://|ftp://|www\.|[\w.+-]{1,64}@[\w-]{1,63}\.[a-z]{2,}|pastebin|webhook)"),
    ("addresses the model",
     rf"<!--[^>]{{0,300}}?\b{_MODEL}\b[^>]{{0,300}}?-->"),
    ("addresses the model",
     rf"\b{_MODEL}\s+(?:instructions?|directives?|note|command|override|notice|task)\s*:"),
    ("overrides instructions",
     r"(?:^|\n)[^\S\n]*(?:override|admin override|new instructions?|"
     r"instructions? for (?:the )?(?:ai|assistant|model))\s*:"),
    ("calls a tool",
     r"\b(?:call|invoke|execute|trigger|run|use)\s+(?:the\s+)?[`'\"]?[a-z]{2,20}_[a-z_]{2,40}"
     r"[`'\"]?(?:\s+(?:tool|function))?"),
    ("asks to send data",
     r"!\[[^\]\n]{0,100}\]\(\s*https?://[^)\s]{0,300}[?&][^)\s]{0,300}[{<%$]"),
    ("plants harmful code",
     r"\brm\s+-rf\b|\bshutil\.rmtree\b|\bos\.system\s*\(|\beval\s*\(\s*input|"
     r"\bcurl\s[^|\n]{0,200}\|\s*(?:ba|z)?sh\b|\bdocument\.cookie\b|\bid_rsa\b|"
     r"\bwget\s[^|\n]{0,200}\|\s*(?:ba|z)?sh\b"),
    ("calls a tool",
     r"\b(?:core_memory_append|core_memory_replace|archival_memory_insert|"
     r"archival_memory_search|conversation_search|send_message)\b"),
    ("calls a tool",
     r"\"name\"\s*:\s*\"[\w.-]{1,64}\"\s*,\s*\"arguments\"|<\s*/?\s*(?:tool_call|"
     r"function_call)\s*>"),
)
