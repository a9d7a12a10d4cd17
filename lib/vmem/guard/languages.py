"""The guard's languages: which one a text is in, and where it speaks to the model.

Data and two small functions, read by `vmem.guard.model`. `language(text)` names the
language as an ISO 639-1 code where the text says enough ("es", "ja"), otherwise its
script as an ISO 15924 code ("Latn", "Cyrl"), or None for text with no letters. `ANCHORS`
is, per supported language, where a sentence addresses the model or its output: "your
answer" ("tu respuesta", "あなたの回答", "yanıtına"), the model itself ("AI", "asistente",
"언어 모델") or its rules ("previous instructions", "prompt del sistema"). The learned model
scores only sentences with an anchor: an ordinary sentence, in any language, seldom speaks
to the reader's answer, so the model cannot flag a language for being one. `DIRECTED`
adds, outside English, "the user", "from now on" and "every question" (orders that name
neither the model nor its answer). `COMMANDS` and `MUSTS` are each language's imperatives
and obligations: the model scores only sentences that have one.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

__all__ = ["AI", "ANCHOR", "ANCHORS", "COMMAND", "COMMANDS", "DIRECTED", "HEDGE", "HEDGES",
           "LANGUAGES", "MUST", "MUSTS", "language", "prepare"]

_W = r"(?:\w{1,20} )"  # any one word, bounded
ANCHORS: dict[str, str] = {
    "en": r"\byour (?:\w{1,20} ){0,2}?(?:response|answer|reply|replies|output|code|codebase|"
          r"solution|implementation|algorithm|summary|program|script|elucidation|explanation|"
          r"translation)|\bcode you (?:develop|write|produce)|\b(?:assistant|chatbot|"
          r"language model|llm)\b|\b(?:previous|prior|above|earlier) (?:instructions|rules)|"
          r"\bsystem prompt",
    "es": rf"\b(?:tu|tus|su|sus|vuestra|vuestro) {_W}?(?:respuesta|contestación|salida|"
          r"código|solución|implementación|resumen|algoritmo|traducción)|\b(?:ia|asistente|"
          r"chatbot|modelo de lenguaje)\b|\binstrucciones (?:anteriores|previas)|"
          r"\bprompt del sistema|\btus (?:directrices|instrucciones|reglas)\b",
    "fr": rf"\b(?:ta|ton|tes|votre|vos) {_W}?(?:réponse|sortie|code|solution|implémentation|"
          r"résumé|algorithme|traduction)|\b(?:ia|assistant|chatbot|modèle de langage)\b|"
          r"\binstructions précédentes|\bprompt système|\b(?:tes|vos) (?:consignes|"
          r"instructions|règles)\b",
    "pt": rf"\b(?:sua|seu|suas|seus|tua|teu) {_W}?(?:resposta|saída|código|solução|"
          r"implementação|resumo|algoritmo|tradução)|\b(?:ia|assistente|chatbot|modelo de "
          r"linguagem)\b|\binstruções anteriores|\bprompt (?:de|do) sistema|\b(?:suas|tuas) "
          r"(?:diretrizes|instruções|regras)\b",
    "de": rf"\b(?:dein|deine|deinen|deinem|deiner|ihr|ihre|ihren|ihrem|ihrer) {_W}?"
          r"(?:antwort|ausgabe|code|lösung|implementierung|zusammenfassung|algorithmus|"
          r"übersetzung)|\b(?:ki|assistent\w{0,3}|chatbot|sprachmodell)\b|\bvorherigen "
          r"anweisungen|\bsystemprompt|\bdeine (?:richtlinien|anweisungen|regeln)\b",
    "it": rf"\b(?:tua|tuo|tue|tuoi|vostra|vostro) {_W}?(?:risposta|output|codice|soluzione|"
          r"implementazione|riassunto|algoritmo|traduzione)|\b(?:ia|assistente|chatbot|"
          r"modello linguistico)\b|\bistruzioni precedenti|\bprompt di sistema|\btue "
          r"(?:linee guida|istruzioni|regole)\b",
    "ru": rf"\b(?:ваш|тво|сво)\w{{0,3}} {_W}?(?:ответ|код|решени|реализаци|резюме|алгоритм|"
          r"перевод)|\b(?:ии|ассистент\w{0,3}|чат-бот\w{0,3}|языков\w{1,3} модел\w{0,3})\b|"
          r"\bпредыдущие инструкции|\bсистемн\w{1,3} промпт|\bсво\w{1,3} правил",
    "zh": r"(?:你|您)的(?:回答|回复|答案|响应|代码|解决方案|摘要|输出|翻译)|"
          r"(?:回答|回复|响应|答案|代码|摘要)(?:中|里|末尾)|ai助手|人工智能|语言模型|"
          r"之前的(?:所有)?指令|系统提示",
    "ja": r"あなたの(?:回答|返答|応答|答え|コード|ソリューション|要約|出力)|"
          r"(?:回答|返答|応答|要約|出力)(?:に|の最後|全体|の中)|aiアシスタント|言語モデル|"
          r"これまでの指示|以前の指示|システムプロンプト",
    "ko": r"(?:당신|귀하|너)의 (?:응답|답변|대답|코드|솔루션|요약|출력)|"
          r"(?:응답|답변|대답|요약|출력)(?:에|의|에서| 전체| 끝)|어시스턴트|언어 모델|"
          r"이전의 (?:모든 )?지시|시스템 프롬프트",
    "ar": r"(?:إجابتك|ردك|ردّك|استجابتك|جوابك|الخاص بك|الخاصة بك|ملخصك|كودك|حلك|مخرجاتك)|"
          r"الذكاء الاصطناعي|ذكاء اصطناعي|المساعد|نموذج(?:ًا|ا)? لغوي|التعليمات السابقة|"
          r"موجه النظام",
    "hi": r"(?:अपने|अपनी|अपना|आपके|आपकी|आपका|तुम्हारे|तुम्हारी) (?:\S{1,20} )?(?:उत्तर|जवाब|"
          r"प्रतिक्रिया|कोड|समाधान|सारांश|आउटपुट)|एआई|सहायक|भाषा मॉडल|पिछले (?:सभी )?निर्देश|"
          r"सिस्टम प्रॉम्प्ट",
    "bn": r"(?:আপনার|তোমার|তোর) (?:\S{1,20} )?(?:উত্তর|জবাব|প্রতিক্রিয়া|কোড|সমাধান|সারসংক্ষেপ|"
          r"আউটপুট)|এআই|সহকারী|ভাষা মডেল|আগের সব নির্দেশ|সিস্টেম প্রম্পট",
    "tr": r"\b(?:yanıt|cevab|cevap|kod|çözüm|özet|çıktı)\w{0,3}(?:ınız|iniz|unuz|ünüz|ın|in|un|"
          r"ün)\w{0,3}\b|\byapay zek[aâ]\w{0,4}|\basistan\w{0,4}|\bdil modeli\w{0,4}|"
          r"\bönceki (?:tüm )?talimat\w{0,6}|\bsistem istem\w{0,4}",
    "vi": r"(?:câu trả lời|phản hồi|mã|giải pháp|bản tóm tắt|đầu ra|bản dịch) của (?:bạn|anh|"
          r"chị|em)\b|\btrợ lý\b|mô hình ngôn ngữ|hướng dẫn trước đó|lời nhắc hệ thống",
    "id": r"\b(?:respons|jawaban|balasan|tanggapan|kode|solusi|ringkasan|keluaran|terjemahan)"
          r"(?:mu| anda| kamu)\b|\basisten\b|\bmodel bahasa\b|\binstruksi sebelumnya\b|"
          r"\bprompt sistem\b",
    "th": r"(?:คำตอบ|การตอบกลับ|โค้ด|โซลูชัน|บทสรุป|ผลลัพธ์)(?:ทั้งหมด)?ของคุณ|ในคำตอบ|"
          r"ผู้ช่วย|โมเดลภาษา|คำสั่งก่อนหน้า|พรอมต์ระบบ",
    "tl": rf"\b(?:iyong|inyong) {_W}?(?:sagot|tugon|code|solusyon|buod|output)|\b(?:sagot|"
          r"tugon|code|solusyon|buod) (?:mo|ninyo|nyo)\b|\bnaunang tagubilin\b",
}
# Where a sentence aims an order past the model at the person it serves, or sets a
# standing rule, without naming the model or its answer: "the user" ("dile al usuario
# que...", "ユーザーに...伝えて"), "from now on", "every question", and the model's own
# guidelines. Added to the anchors as (regex, keys): the learned layer then reads these
# sentences too, and tells "the user prefers short answers" (a note about the user) from
# "tell the user their account is blocked" (an order) as it tells the anchored ones apart.
DIRECTED: dict[str, tuple[str, str]] = {
    "en": ("", ""),  # the pattern layer's signals cover these ("orders it about the user")
    "es": (r"\busuari[oa]s?\b|\ba partir de ahora\b|\b(?:todas las|cada|cualquier|toda) "
           r"(?:\w{1,15} )?preguntas?\b", "usuari ahora pregunta"),
    "fr": (r"\butilisat(?:eur|rice)s?\b|\bà partir de maintenant\b|\b(?:toutes? les|chaque|"
           r"toute|n'importe quelle) (?:\w{1,15} )?questions?\b", "utilisat maintenant question"),
    "pt": (r"\b(?:usuári[oa]|utilizador)s?\b|\ba partir de agora\b|\b(?:todas as|cada|"
           r"qualquer|toda) (?:\w{1,15} )?perguntas?\b", "usuári utilizador agora pergunta"),
    "de": (r"\b(?:be)?nutzer(?:in|innen|s|n)?\b|\bab jetzt\b|\b(?:alle|jede|jeder|jedes) "
           r"(?:\w{1,15} )?fragen?\b|\bdeine (?:richtlinien|vorgaben)\b",
           "nutzer jetzt frage richtlinien vorgaben"),
    "it": (r"\butent[ei]\b|\bd'ora in poi\b|\b(?:tutte le|ogni|qualsiasi|qualunque) "
           r"(?:\w{1,15} )?domand[ae]\b", "utent d'ora domand"),
    "ru": (r"\bпользовател\w{0,4}|\bотныне\b|\b(?:все|любой|любые|каждый|на все) "
           r"(?:\w{1,15} )?вопрос\w{0,3}", "пользовател отныне вопрос"),
    "zh": (r"用户|从现在起|(?:所有|任何|每个)(?:\w{0,6})?问题|你的(?:准则|规则|指令|指示)",
           "用户 从现在起 问题 准则 规则 指令 指示"),
    "ja": (r"ユーザー|これからは|(?:すべての|全ての|どんな)質問|ガイドライン",
           "ユーザー これからは 質問 ガイドライン"),
    "ko": (r"사용자|지금부터|모든 (?:\S{1,10} )?질문|가이드라인|지침",
           "사용자 지금부터 질문 가이드라인 지침"),
    "ar": (r"المستخدم|من الآن|(?:كل|جميع|أي) (?:\S{1,10} )?(?:الأسئلة|سؤال)|إرشاداتك|تعليماتك|"
           r"قواعدك", "المستخدم الآن الأسئلة سؤال إرشاداتك تعليماتك قواعدك"),
    "hi": (r"उपयोगकर्ता|अब से|हर (?:\S{1,10} )?सवाल|सभी (?:\S{1,10} )?(?:सवाल|प्रश्न)|"
           r"(?:अपने|आपके) (?:दिशानिर्देश|नियम)", "उपयोगकर्ता अब सवाल प्रश्न दिशानिर्देश नियम"),
    "bn": (r"ব্যবহারকারী|এখন থেকে|(?:প্রতিটি|সব) (?:\S{1,10} )?প্রশ্ন|(?:আপনার|তোমার) "
           r"(?:নির্দেশিকা|নিয়ম)", "ব্যবহারকারী এখন প্রশ্ন নির্দেশিকা নিয়ম"),
    "tr": (r"\bkullanıcı\w{0,6}|\bbundan sonra\b|\b(?:her|tüm|bütün) (?:\w{1,15} )?soru"
           r"\w{0,5}|\byönerge\w{0,6}", "kullanıcı bundan soru yönerge"),
    "vi": (r"người dùng|\btừ giờ\b|(?:mọi|tất cả các|bất kỳ) (?:\S{1,10} ){0,2}?câu hỏi|"
           r"(?:nguyên tắc|quy tắc) của bạn", "người giờ câu nguyên quy"),
    "id": (r"\bpengguna\b|\bmulai sekarang\b|\b(?:semua|setiap|tiap) (?:\w{1,15} )?"
           r"pertanyaan\b|\b(?:pedoman|aturan|instruksi)(?:mu| anda| kamu)\b",
           "pengguna sekarang pertanyaan pedoman aturan instruksi"),
    "th": (r"ผู้ใช้|ต่อจากนี้|ทุกคำถาม|(?:แนวทาง|กฎ)ของคุณ", "ผู้ใช้ ต่อจากนี้ ทุกคำถาม แนวทาง กฎ"),
    "tl": (r"\b(?:ang|sa|ng|kay) (?:mga )?user\b|\bmula ngayon\b|"
           r"\b(?:bawat|lahat ng) (?:\w{1,15} )?tanong\b|"
           r"\b(?:iyong|inyong) (?:mga )?(?:alituntunin|patakaran)\b",
           "user ngayon tanong alituntunin patakaran"),
}
# Orders in each language: imperative forms of the verbs injections use (add, include,
# write, insert, say, ignore, forget, use, translate, replace, start, end, mention, reveal,
# recommend, ask, give) and "do not". A feature of the model, shared by all languages, so
# what it learns about orders in one language carries to the others.
COMMANDS: dict[str, str] = {
    "en": r"\b(?:add|include|insert|write|say|tell|ignore|forget|disregard|use|translate|"
          r"replace|start|begin|end|mention|reveal|recommend|ask|give|put|append|integrate|"
          r"incorporate|embed|do not|don't|never|always|make|introduce|remove|rearrange|"
          r"respond|reply|answer|output|print|state|promote|encourage|merge|execute|run)\b",
    "es": r"\b(?:añade|añada|agrega|agregue|incluye|incluya|escribe|escriba|inserta|inserte|"
          r"di|diga|dile|dígale|ignora|ignore|olvida|olvide|usa|use|utiliza|traduce|traduzca|"
          r"sustituye|sustituya|reemplaza|empieza|empiece|comienza|termina|termine|menciona|"
          r"mencione|revela|revele|recomienda|recomiende|pide|pida|da|dale|dé|responde|"
          r"responda|contesta|conteste|introduce|introduzca|afirma|oculta|esconde|envía|"
          r"envíe|reenvía|convence|pon|haz|deja de|no (?:menciones|digas|respondas|incluyas|"
          r"uses))\b",
    "fr": r"\b(?:ajoute|ajoutez|inclus|incluez|écris|écrivez|insère|insérez|dis|dites|"
          r"ignore|ignorez|oublie|oubliez|utilise|utilisez|traduis|traduisez|remplace|"
          r"remplacez|commence|commencez|termine|terminez|mentionne|mentionnez|révèle|"
          r"révélez|recommande|recommandez|demande|demandez|donne|donnez|réponds|répondez|"
          r"introduis|introduisez|affirme|affirmez|cache|cachez|transfère|transférez|envoie|"
          r"envoyez|convaincs|convainquez|arrête|arrêtez|fais|faites|"
          r"ne (?:mentionne|mentionnez|dis|réponds|répondez|n'utilise)\w{0,2})\b|\bn'utilise\b",
    "pt": r"\b(?:adicione|adiciona|inclua|inclui|escreva|escreve|insira|diga|diz|ignore|"
          r"ignora|esqueça|esquece|use|usa|utilize|traduza|substitua|comece|termine|mencione|"
          r"revele|recomende|peça|dê|responda|encaminhe|introduza|afirme|esconda|oculte|"
          r"envie|convença|pare de|coloque|faça|conte|não (?:mencione|responda|diga|use|"
          r"conte))\b",
    "de": r"\b(?:füge|füg|fügen sie|schreib|schreibe|schreiben sie|sag|sage|sagen sie|"
          r"ignoriere|ignorieren sie|vergiss|vergessen sie|verwende|verwenden sie|benutze|"
          r"übersetze|übersetzen sie|ersetze|ersetzen sie|beginne|beginnen sie|beende|"
          r"beenden sie|erwähne|erwähnen sie|nenne|gib|geben sie|empfiehl|frag|nimm|baue|"
          r"antworte|beantworte|leite|erwähne nicht|behaupte|verstecke|schick|sende|"
          r"überrede|hör auf|setze|verrate|leite weiter)\b",
    "it": r"\b(?:aggiungi|aggiunga|includi|includa|scrivi|scriva|inserisci|inserisca|di'|dì|"
          r"dica|ignora|ignori|dimentica|dimentichi|usa|usi|utilizza|traduci|traduca|"
          r"sostituisci|sostituisca|inizia|cominci|termina|termini|menziona|menzioni|rivela|"
          r"riveli|consiglia|chiedi|chieda|rispondi|risponda|inoltra|introduci|afferma|"
          r"nascondi|invia|convinci|smetti|metti|fai|"
          r"non (?:menzionare|rispondere|dire|usare))(?!\w)",
    # Russian: a stem and an imperative ending only (-и, -ь, -й, each with -те):
    # "используй", "спросите"; never "использует", "спросила", "спросить", "заменит".
    "ru": r"(?<!\w)(?:добав|напиш|встав|скаж|игнориру|забуд|использу|перевед|замен|начн|"
          r"законч|упомян|укаж|включ|раскро|рекоменду|порекоменду|спрос|поставь|отвечай|"
          r"ответь|перешл|не упомина|не отвеча|утвержда|скрой|скрыва|отправ|убеди|"
          r"перестань|сделай|не говори)(?:[иьй]?(?:те)?)(?!\w)",
    "zh": r"请|不要|务必|必须|(?:^|[，,：:|])\s{0,2}(?:加|添加|加入|写|插入|告诉|忽略|"
          r"忘掉|忘记|用|使用|翻译|替换|把|在|提到|透露|推荐|给|总结|回复|回答|以|只|就说|"
          r"说服|隐藏|发送|转发|停止|永远不要|一律)",
    "ja": r"(?:て|で)ください|しなさい|すること|せよ|しろ|ないでください|てくれ",
    "ko": r"(?:세요|십시오|하라|해라|마세요|주세요|말고|하시오)",
    "ar": r"(?<!\w)(?:أضف|اكتب|قل|تجاهل|انس|انسَ|اذكر|ضمّن|ضمن|استخدم|أدرج|ترجم|ابدأ|اختم|"
          r"استبدل|أخبر|اطلب|امنح|أجب|اكشف|أوصِ|أوص|قيّم|أعد|لا تذكر|لا تجب|أدخل|أخفِ|أخف|"
          r"أرسل|أقنع|توقف|اسأل|افعل|اجعل|لا تخبر)(?!\w)",
    "hi": r"(?<!\S)(?:करें|कीजिए|दें|दीजिए|लिखें|जोड़ें|बताएँ|बताएं|कहें|डालें|भेजें|बदलें|पूछें|"
          r"जाएँ|जाएं|आँकें)(?![^\s.,!?;:।॥\"\'”)\]])",
    "bn": r"(?<!\S)(?:করুন|দিন|লিখুন|বলুন|রাখুন|চান|ঢোকান|যান|বদলে দিন|পাঠান|দেখান)(?![^\s.,!?;:।॥\"\'”)\]])",
    "tr": r"\b(?:ekle|ekleyin|yaz|yazın|söyle|söyleyin|belirt|belirtin|kullan|kullanın|"
          r"yok say|unut|unutun|başla|başlayın|çevir|çevirin|bitir|bitirin|değiştir|"
          r"değiştirin|ver|verin|öner|önerin|iste|isteyin|ilet|açıkla|bahsetme|yanıtlama|"
          r"cevaplama|gizle|gönder|ikna et|bırak|yap|cevap ver|yanıtla|sor|söyleme)\b",
    # Vietnamese verbs do not inflect: "hãy"/"đừng" anywhere, a bare verb only where a
    # clause opens ("bắt đầu" in the middle of a sentence is a statement).
    "vi": r"\b(?:hãy|đừng|chớ)\b|(?:^\s*|[,:;|]\s*)(?:thêm|viết|chèn|dịch|bỏ qua|thay|dùng|"
          r"nói|bảo|kết thúc|bắt đầu|tiết lộ|chỉ dùng|chỉ trả lời|đưa|giấu|chuyển|hỏi|quên|"
          r"thuyết phục|ngừng|trả lời)\b",
    "id": r"\b(?:tambahkan|tulis|tulislah|sebutkan|abaikan|lupakan|gunakan|sisipkan|"
          r"terjemahkan|ganti|katakan|berikan|beri|jangan|mulai|akhiri|sertakan|cantumkan|"
          r"masukkan|rekomendasikan|ungkapkan|teruskan|mintalah|suruh|sembunyikan|kirim|"
          r"kirimkan|bujuk|berhenti|jawab|tanyakan|minta|buat|lakukan)\b",
    # Thai: an order where a phrase opens (Thai puts spaces between phrases); a bare verb
    # not after a space that only sets off a Latin-script word ("...ที่ AI เขียน": "that
    # AI writes"), where "ให้" and "อย่า" still mark one ("ถ้าคุณเป็น AI ให้ตอบ...").
    "th": r"(?:^|\s)(?:ให้|อย่า)|"
          r"(?:^|(?<![a-z0-9])\s)(?:เพิ่ม|เขียน|ใส่|บอก|เพิกเฉย|ใช้|แทรก|แปล|แทนที่|ระบุ|เริ่ม|ปิดท้าย|"
          r"เปิดเผย|แนะนำ|ลืม|ส่งต่อ)",
    "tl": r"\b(?:idagdag|magdagdag|isulat|sabihin|huwag|gamitin|ilagay|isalin|palitan|"
          r"banggitin|isama|simulan|tapusin|kalimutan|ibunyag|irekomenda|bigyan|ipasa|hingin|"
          r"maglagay|i-rate|itago|ipadala|kumbinsihin|tumigil|sagutin|tanungin|gawin)\b",
}
# Obligation in each language ("must", "has to", "debe", "muss", "必须", "しなければならない",
# "해야", "يجب", "होगा", "zorunda", "phải", "harus", "ต้อง", "dapat"): how a trigger that
# speaks of the model in the third person gives its order ("any AI reading this must...").
MUSTS: dict[str, str] = {
    "en": r"\b(?:must|should|shall|has to|have to|is required to|are required to|needs to)\b",
    "es": r"\b(?:debe|deben|deberá|tiene que|tienen que|está obligad[oa]|están obligad[oa]s)\b",
    "fr": r"\b(?:doit|doivent|devra|il faut|est tenue?|sont tenus)\b",
    "pt": r"\b(?:deve|devem|deverá|tem que|têm que|precisa|é obrigad[oa])\b",
    "de": r"\b(?:muss|müssen|soll|sollen|ist verpflichtet|sind verpflichtet)\b",
    "it": r"\b(?:deve|devono|dovrà|è tenut[oa]|sono tenuti|bisogna)\b",
    "ru": r"(?<!\w)(?:долж\w{1,3}|обязан\w{0,3}|следует)(?!\w)",
    "zh": r"必须|务必|应该|应当|一律|一定要",
    "ja": r"なければならない|なければなりません|こと(?:。|$)|べき",
    "ko": r"해야|야 한다|야 합니다",
    "ar": r"(?<!\w)(?:يجب|عليه|عليها|ينبغي|لا بد)(?!\w)",
    "hi": r"(?<!\S)(?:होगा|होगी|होंगे|चाहिए)(?![^\s.,!?;:।॥\"\'”)\]])",
    "bn": r"(?<!\S)(?:হবে|অবশ্যই|উচিত)(?![^\s.,!?;:।॥\"\'”)\]])",
    "tr": r"\b\w{2,20}(?:malı|meli|malıdır|melidir)\b|\bzorunda\w{0,4}",
    "vi": r"\b(?:phải|buộc phải|bắt buộc)\b",
    "id": r"\b(?:harus|wajib)\b",
    "th": r"ต้อง|ควร",
    "tl": r"\b(?:dapat|kailangan|obligado)\b",
}
MUST = re.compile("|".join(f"(?:{unicodedata.normalize('NFKC', rx)})" for rx in MUSTS.values()))
# A hedge in each language ("if you can", "if possible", "si puedes", "wenn möglich",
# "如果可以", "できれば", "가능하면", "إن أمكن", "हो सके तो", "mümkünse", "nếu được",
# "kalau bisa", "ถ้าเป็นไปได้", "kung maaari"): a request the reader may decline, the way
# a person states a preference ("Keep your answers short if you can"). A feature of the
# model, like the orders: it weighs against them, it does not cancel them.
HEDGES: dict[str, str] = {
    "en": r"\bif (?:you can|you could|possible|you don't mind|you do not mind|that's (?:ok|okay|"
          r"alright|fine)|it's not too much trouble)\b|\b(?:where|when|whenever) possible\b|"
          r"\bwhen you (?:can|get a chance)\b|\bideally\b",
    "es": r"\bsi (?:puedes|pudieras|es posible|se puede|no te importa|no es molestia)\b|"
          r"\b(?:de|a) ser posible\b|\bcuando puedas\b|\bidealmente\b",
    "fr": r"\bsi (?:tu peux|vous pouvez|possible|c'est possible|tu veux bien|ça ne te dérange "
          r"pas|ça ne vous dérange pas)\b|\bdans la mesure du possible\b|\bquand tu peux\b|"
          r"\bidéalement\b",
    "pt": r"\bse (?:puder|possível|for possível|der|não se importar|não for incômodo)\b|"
          r"\bquando puder\b|\bde preferência\b|\bidealmente\b",
    "de": r"\bwenn (?:es geht|möglich|du kannst|sie können|es dir nichts ausmacht)\b|"
          r"\bfalls möglich\b|\bnach möglichkeit\b|\bwenn's geht\b|\bidealerweise\b",
    "it": r"\bse (?:puoi|possibile|è possibile|riesci|non ti dispiace)\b|\bquando puoi\b|"
          r"\bpossibilmente\b|\bidealmente\b",
    "ru": r"(?<!\w)(?:если (?:можно|возможно|сможешь|сможете|не трудно|получится)|"
          r"по возможности|желательно)(?!\w)",
    "zh": r"如果可以|如果可能|可以的话|方便的话|如果方便|尽量|最好能",
    "ja": r"できれば|可能なら|可能であれば|よければ|なるべく|できたら",
    "ko": r"가능하면|가능하다면|될 수 있으면|괜찮다면|되도록|할 수 있으면",
    "ar": r"إن أمكن|إذا أمكن|لو أمكن|إن استطعت|قدر الإمكان|إذا لم يكن لديك مانع",
    "hi": r"हो सके तो|यदि संभव हो|अगर संभव हो|अगर हो सके|जहाँ तक हो सके|संभव हो तो",
    "bn": r"সম্ভব হলে|যদি সম্ভব হয়|পারলে|যদি পারো|যদি পারেন",
    "tr": r"\bmümkünse\b|\bmümkün olursa\b|\byapabilirsen(?:iz)?\b|\bmümkün olduğunca\b|"
          r"\bolabildiğince\b|\bsakıncası yoksa\b",
    "vi": r"\bnếu (?:được|có thể|bạn có thể|không phiền|tiện)\b|\bkhi nào rảnh\b|"
          r"\bcàng .{1,12} càng tốt\b",
    "id": r"\b(?:kalau|jika|bila|kalo) (?:bisa|memungkinkan|mungkin|tidak keberatan|sempat)\b|"
          r"\bsebisa mungkin\b|\bsedapat mungkin\b|\bidealnya\b",
    "th": r"ถ้าเป็นไปได้|ถ้าได้|ถ้าทำได้|ถ้าไม่รบกวน|ถ้าสะดวก|หากเป็นไปได้",
    "tl": r"\bkung (?:maaari|pwede|puwede|kaya mo|hindi abala|okay lang)\b|"
          r"\bhangga't maaari\b",
}
# Per language, for text whose language `language` can tell: the union above lets one
# language's words read as another's orders ("da" is Spanish "give", Portuguese "of the").
# Latin-script detection can mistake short English for another language ("Tell me a joke"
# reads as Portuguese), so English orders count in every Latin-script language, and text
# detected as English is read with every language's (other scripts' words never collide).
_LATIN = ("es", "fr", "pt", "de", "it", "tr", "vi", "id", "tl")


def _own(table: dict[str, str], lang: str) -> re.Pattern[str]:
    langs = (lang, "en") if lang in _LATIN else tuple(table) if lang == "en" else (lang,)
    return re.compile("|".join(f"(?:{unicodedata.normalize('NFKC', table[code])})"
                               for code in langs))


COMMAND_OF = {lang: _own(COMMANDS, lang) for lang in COMMANDS}
MUST_OF = {lang: _own(MUSTS, lang) for lang in MUSTS}
# Hedges are read in the sentence's own language (and English in the other Latin-script
# ones); text detected as English only in English: the union of every language's is slow.
HEDGE_OF = {lang: _own(HEDGES, lang) if lang != "en" else re.compile(HEDGES["en"])
            for lang in HEDGES}
HEDGE = re.compile("|".join(f"(?:{unicodedata.normalize('NFKC', rx)})" for rx in HEDGES.values()))
COMMAND = re.compile("|".join(f"(?:{unicodedata.normalize('NFKC', rx)})"
                              for rx in COMMANDS.values()))
LANGUAGES = tuple(ANCHORS)
# Every anchor of a language contains one of its keys: a plain substring test (fast) tells
# which languages' anchor regexes are worth running on a text at all.
_KEYS: dict[str, str] = {
    "en": "respon answer repl output code solution implement algorithm summar program "
          "script elucidation explanation translation assistant chatbot language llm "
          "instructions rules prompt",
    "es": "respuesta contestación salida código solución implementación resumen algoritmo "
          "traducción ia asistente chatbot modelo instrucciones prompt directrices reglas",
    "fr": "réponse sortie code solution implémentation résumé algorithme traduction ia "
          "assistant chatbot modèle instructions prompt consignes règles",
    "pt": "resposta saída código solução implementação resumo algoritmo tradução ia "
          "assistente chatbot modelo instruções prompt diretrizes regras",
    "de": "antwort ausgabe code lösung implementierung zusammenfassung algorithmus "
          "übersetzung ki assistent chatbot sprachmodell anweisungen systemprompt "
          "richtlinien regeln",
    "it": "risposta output codice soluzione implementazione riassunto algoritmo traduzione "
          "ia assistente chatbot modello istruzioni prompt linee regole",
    "ru": "ответ код решени реализаци резюме алгоритм перевод ии ассистент чат-бот модел "
          "инструкции промпт правил",
    "zh": "回答 回复 答案 响应 代码 解决方案 摘要 输出 翻译 ai助手 人工智能 语言模型 指令 系统提示",
    "ja": "回答 返答 応答 答え コード ソリューション 要約 出力 aiアシスタント 言語モデル 指示 "
          "システムプロンプト",
    "ko": "응답 답변 대답 코드 솔루션 요약 출력 어시스턴트 언어 모델 지시 시스템 프롬프트",
    "ar": "إجابتك ردك ردّك استجابتك جوابك الخاص الخاصة ملخصك كودك حلك مخرجاتك الذكاء ذكاء "
          "المساعد نموذج التعليمات موجه",
    "hi": "उत्तर जवाब प्रतिक्रिया कोड समाधान सारांश आउटपुट एआई सहायक मॉडल निर्देश प्रॉम्प्ट",
    "bn": "উত্তর জবাব প্রতিক্রিয়া কোড সমাধান সারসংক্ষেপ আউটপুট এআই সহকারী মডেল নির্দেশ প্রম্পট",
    "tr": "yanıt cevab cevap kod çözüm özet çıktı yapay asistan dil modeli talimat istem",
    "vi": "câu trả lời phản hồi mã giải pháp bản tóm tắt đầu ra bản dịch trợ lý mô hình "
          "hướng dẫn lời nhắc",
    "id": "respons jawaban balasan tanggapan kode solusi ringkasan keluaran terjemahan "
          "asisten model instruksi prompt",
    "th": "คำตอบ การตอบกลับ โค้ด โซลูชัน บทสรุป ผลลัพธ์ ผู้ช่วย โมเดลภาษา คำสั่ง พรอมต์",
    "tl": "sagot tugon code solusyon buod output tagubilin",
}
_CHECKS = tuple((tuple(unicodedata.normalize("NFKC", key)
                       for key in (_KEYS[lang] + " " + DIRECTED[lang][1]).split()),
                 re.compile(unicodedata.normalize("NFKC", "|".join(
                     part for part in (rx, DIRECTED[lang][0]) if part))))
                for lang, rx in ANCHORS.items())


# The same with only the keys an ASCII text can hold (most English text is ASCII).
_ASCII_CHECKS = tuple((ascii_keys, regex) for keys, regex in _CHECKS
                      if (ascii_keys := tuple(key for key in keys if key.isascii())))


class _Anchor:
    """`search(text)` like a regex over all languages' anchors, running only the regexes
    of the languages whose keys occur in `text` (one alternation of them all was slow)."""

    @staticmethod
    def search(text: str) -> re.Match[str] | None:
        for keys, regex in _ASCII_CHECKS if text.isascii() else _CHECKS:
            if any(key in text for key in keys):
                match = regex.search(text)
                if match:
                    return match
        return None


# An anchor in any language (the languages' words seldom collide, and a false anchor
# only lets the model look). "AI" counts only in capitals, on the raw text: "ai" is "who"
# in Vietnamese and "to the" in Italian.
ANCHOR = _Anchor()
AI = re.compile(r"(?<![A-Za-z])(?:AI|IA|KI)(?![A-Za-z])")

# --- which language ---------------------------------------------------------------------

_SCRIPTS = (  # (first code point, last, script, the language when the script says it)
    (0x0400, 0x04FF, "Cyrl", "ru"), (0x0600, 0x06FF, "Arab", "ar"),
    (0x0900, 0x097F, "Deva", "hi"), (0x0980, 0x09FF, "Beng", "bn"),
    (0x0E00, 0x0E7F, "Thai", "th"), (0x3040, 0x30FF, "Kana", "ja"),
    (0x4E00, 0x9FFF, "Hani", "zh"), (0xAC00, 0xD7AF, "Hang", "ko"),
    (0x1100, 0x11FF, "Hang", "ko"),
)
# Short function words that tell Latin-script languages apart; Vietnamese letters too.
_LATIN_WORDS = {
    "en": "the and is are you your to of in that it with for was this have my he she we but "
          "also these which from on at be or not will would can has had were been they them "
          "their there what when how who if just about into some any our",
    "es": "el la los las que de y en es por para con una su tu del muy pero yo él ella "
          "también esta este como más sobre hasta desde",
    "fr": "le la les des et est que une pour dans avec pas ce vous ta ton du au à je tu il "
          "elle nous sur par mais ou qui votre vos sa son ses cette ces leur très toute tout tes",
    "pt": "o a os as que de e em é um uma para com não do da seu sua você eu ele ela nós mas "
          "também isso como mais sobre até muito pra",
    "de": "der die das und ist nicht ein eine einen zu mit den dem ich du sie auf für "
          "dein deine deiner deinen nach bei wird er es wir aber auch diese dieser wie über "
          "von im in als einer einem eines sich oder noch",
    "it": "il la lo gli che di e è un una per con non del della sono tua tuo io lui lei noi "
          "ma anche questa questo quello più nella alla in nel degli delle ho come uno",
    "tr": "ve bir bu da de için ile çok ne mi değil olarak ama gibi",
    "vi": "và của là có không một những cho với được người bạn tôi",
    "id": "dan yang di ini itu dengan untuk tidak dari ke ada anda saya dia sebagai akan juga "
          "sudah bisa pada atau kami kita mereka belum sangat",
    "tl": "ang ng mga sa na at ay si ni mo ko hindi para kung siya niya ako ikaw tayo po ba "
          "lang",
}
_VIETNAMESE = re.compile(r"[ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ]")
_LATIN_WORD = re.compile(r"[^\W\d_]+")


# Format characters (zero-width, bidi controls, soft hyphen, tags): removed before reading.
_FORMAT = re.compile("[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u08e2\u180e\u200b-\u200f"
                     "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
                     "\U000e0001\U000e0020-\U000e007f]")
_ASCII_LETTER = re.compile("[A-Za-z]")
_NON_ASCII = re.compile("[^\x00-\x7f]")
SAMPLE = 2000  # characters read to tell the script
LATIN_SAMPLE = 600  # and, in Latin script, the language


def prepare(text: str) -> str:
    """Text as the learned layer reads it: NFKC, format characters removed, case folded.

    Unlike the pattern layer's view, look-alike letters are not folded (that would turn
    Russian into mixed Latin) and combining marks stay (Hindi and Thai vowels are marks).
    """
    return _FORMAT.sub("", unicodedata.normalize("NFKC", text)).casefold()


def language(text: str) -> str | None:
    """ISO 639-1 code of the language `text` is written in, else its script, else None."""
    sample = text[:SAMPLE]
    if sample.isascii():
        return _latin_language(prepare(sample)) if _ASCII_LETTER.search(sample) else None
    latin = len(_ASCII_LETTER.findall(sample))
    counts = dict.fromkeys((script for _f, _l, script, _lang in _SCRIPTS), 0)
    for ch in _NON_ASCII.findall(sample):  # few in Latin text, one pass in the others
        point = ord(ch)
        for first, last, script, _lang in _SCRIPTS:
            if first <= point <= last:
                counts[script] += 1
                break
        else:
            latin += 0x00C0 <= point <= 0x024F or 0x1E00 <= point <= 0x1EFF
    script = max(counts, key=counts.__getitem__)
    if counts[script] and counts[script] >= latin:
        if script == "Hani" and counts["Kana"]:
            return "ja"
        return next(lang for _f, _l, name, lang in _SCRIPTS if name == script)
    return _latin_language(prepare(sample)) if latin else None


# Letters that only some Latin-script languages use: each one found is a vote.
_LETTERS = {"es": "ñ¿¡", "pt": "ãõ", "fr": "èêëœ", "de": "äß", "tr": "ışğ"}
# Indonesian verbs and nouns end in these suffixes ("tambahkan", "rumahnya", "tulislah").
_ID_SUFFIX = re.compile(r".{3}(?:kan|nya|lah)$")
_ADDRESS = re.compile(r"https?://|www\.|@|\.[a-z]{2,3}(?:/|$)")


def _latin_language(text: str) -> str:
    """The Latin-script language with most function words and own letters in `text`
    (web and e-mail addresses left out), else "Latn"."""
    if len(_VIETNAMESE.findall(text)) >= 2:
        return "vi"
    text = " ".join(token for token in text[:LATIN_SAMPLE].split()
                    if not _ADDRESS.search(token))
    words = Counter(_LATIN_WORD.findall(text))
    scores = {lang: sum(letter in text for letter in _LETTERS.get(lang, ""))
              for lang in _LATIN_SETS}
    for word, count in words.items():  # one look-up a distinct word, not a vocabulary
        for lang in _LANGUAGES_OF.get(word, ()):
            scores[lang] += count
        if _ID_SUFFIX.search(word):
            scores["id"] += count
    best = max(scores, key=scores.__getitem__)
    ties = [lang for lang, score in scores.items() if score == scores[best]]
    return best if scores[best] >= 1 and len(ties) == 1 else "Latn"


_LATIN_SETS = {lang: frozenset(words.split()) for lang, words in _LATIN_WORDS.items()}
_LANGUAGES_OF: dict[str, tuple[str, ...]] = {}
for _lang, _vocabulary in _LATIN_SETS.items():
    for _word in _vocabulary:
        _LANGUAGES_OF[_word] = (*_LANGUAGES_OF.get(_word, ()), _lang)
