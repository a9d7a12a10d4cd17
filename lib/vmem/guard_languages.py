"""What the guard knows about each language it reads: how to recognise it, and its anchors.

`detect_language(text)` names the language (ISO 639-1) of the 18 the guard reads, from the
script (Han, kana, Hangul, Arabic, Devanagari, Bengali, Thai, Cyrillic) or, for Latin
script, from the commonest short words; otherwise the script's name ("Greek", "Latin"), or
"" for text without letters.

`anchor(language)` gives the words an injection cannot do without, one regex per language: the
model's reply or code (the thing it is told to change), the model itself, or its
instructions. The learned model (`vmem.guard_model`) proposes; a sentence is flagged only
when it also holds an anchor. This keeps friendly talk ("your trip must have been
incredible") from reading as an order just because it says "your".
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

__all__ = ["LANGUAGES", "anchor", "detect_language"]

# Stems for Latin and Cyrillic script (matched at a word start, so inflections count);
# plain substrings for scripts written without spaces or with rich affixes.
_STEMS = {
    "en": r"answers?\b|respons|repl(?:y|ies)\b|outputs?\b|code\b|snippet|solutions?\b|"
          r"implementation|programs?\b|algorithms?\b|scripts?\b|functions?\b|assistant|ai|"
          r"models?\b|bot|chatbot|llm|instruction|prompt|systems?\b|rules\b|guideline|"
          r"summar|reviews?\b|messages?\b|readers?\b|candidates?\b|applicants?\b",
    "es": "respuest|contest|códig|solución|implementaci|programa|script|funci[oó]n|asistente|"
          "ia|modelo|instruccion|indicacion|prompt|sistema|regla|resum|revisi|lector|mensaje|"
          "respond|candidat",
    "fr": "répon|code|solution|implémentation|programme|fonction|assistant|ia|modèle|"
          "instruction|consigne|prompt|système|règle|résum|revue|lecteur|message|candidat",
    "pt": "respost|códig|solução|implementaç|programa|função|assistente|ia|modelo|instruç|"
          "orientaç|prompt|sistema|regra|resum|revis|leitor|mensagem|respond|candidat",
    "de": "antwort|code|lösung|implementierung|programm|funktion|assistent|ki|modell|"
          "anweisung|vorgabe|prompt|system|regel|zusammenfass|review|leser|nachricht|kandidat|"
          "bewerb",
    "it": "rispost|codice|soluzione|implementazione|programma|funzione|assistente|ia|modello|"
          "istruzion|indicazion|prompt|sistema|regol|riassum|revision|lettore|messaggio|rispond|"
          "candidat",
    "ru": "ответ|код|решени|реализаци|программ|функци|ассистент|ии|модел|инструкци|указани|"
          "промпт|систем|правил|пересказ|отзыв|рецензи|читател|сообщени|кандидат",
    "tr": "cevab|cevap|yanıt|kod|çözüm|uygulama|program|fonksiyon|asistan|yapay zeka|model|"
          "talimat|yönerge|istem|sistem|kural|özet|inceleme|okuyucu|mesaj|aday",
    "vi": "câu trả lời|trả lời|phản hồi|mã|giải pháp|triển khai|chương trình|hàm|trợ lý|ai|"
          "mô hình|hướng dẫn|chỉ dẫn|lời nhắc|hệ thống|quy tắc|tóm tắt|đánh giá|người đọc|"
          "tin nhắn|ứng viên",
    "id": "jawab|tanggapan|balas|kode|solusi|implementasi|program|fungsi|asisten|ai|model|"
          "instruksi|arahan|prompt|sistem|aturan|ringkas|ulasan|pembaca|pesan|kandidat|pelamar",
    "tl": "sagot|tugon|code|solusyon|implementasyon|programa|function|assistant|ai|modelo|"
          "tagubilin|prompt|sistema|patakaran|buod|review|mambabasa|mensahe|aplikante|kandidato",
}
# (ASCII "ai" is matched as a whole word through the stems above, never as a substring.)
_SUBSTRINGS = {
    "zh": "回答|回复|答复|代码|解决方案|实现|程序|函数|助手|模型|指令|指示|提示词|系统|规则|"
          "总结|审查|读者|消息|候选人|应聘者",
    "ja": "回答|返答|返信|答え|コード|ソリューション|実装|プログラム|関数|アシスタント|モデル|"
          "指示|プロンプト|システム|ルール|要約|レビュー|読者|メッセージ|応募者|候補者",
    "ko": "답변|응답|답장|대답|코드|솔루션|구현|프로그램|함수|어시스턴트|모델|지시|프롬프트|"
          "시스템|규칙|요약|리뷰|독자|메시지|지원자|후보",
    "ar": "إجاب|اجاب|رد|كود|شيفرة|حل|تنفيذ|برنامج|دالة|مساعد|الذكاء الاصطناعي|نموذج|تعليمات|"
          "توجيهات|موجه|نظام|قواعد|تلخيص|مراجع|القارئ|رسالة|مرشح|متقدم",
    "hi": "उत्तर|जवाब|कोड|समाधान|इम्प्लीमेंटेशन|प्रोग्राम|फ़ंक्शन|फंक्शन|सहायक|एआई|मॉडल|निर्देश|"
          "प्रॉम्प्ट|सिस्टम|नियम|सारांश|समीक्षा|पाठक|संदेश|उम्मीदवार",
    "bn": "উত্তর|কোড|সমাধান|বাস্তবায়ন|প্রোগ্রাম|ফাংশন|সহকারী|এআই|মডেল|নির্দেশ|প্রম্পট|সিস্টেম|"
          "নিয়ম|সারাংশ|পর্যালোচনা|পাঠক|বার্তা|প্রার্থী",
    "th": "คำตอบ|ตอบ|โค้ด|โซลูชัน|การพัฒนา|โปรแกรม|ฟังก์ชัน|ผู้ช่วย|โมเดล|คำสั่ง|คำแนะนำ|"
          "พรอมต์|ระบบ|กฎ|สรุป|รีวิว|ผู้อ่าน|ข้อความ|ผู้สมัคร",
}
LANGUAGES = tuple(sorted([*_STEMS, *_SUBSTRINGS]))


def _alternatives(language: str) -> list[str]:
    """The anchor regexes of one language. Stems of three letters or fewer ("ai", "ia",
    "ki", "bot", "kod") must be whole words; others match at a word start."""
    if language in _SUBSTRINGS:
        return [f"(?:{_SUBSTRINGS[language]})"]
    return [rf"\b{stem}\b" if len(stem) <= 3 else rf"\b{stem}"
            for stem in _STEMS[language].split("|")]


# A text is read with its own language's anchors plus English ones (injections mix in
# English terms: "prompt", "AI"); text whose language is not clear (`detect_language` says
# only "Latin") with every language's.
_ANCHORS = {language: re.compile("|".join(_alternatives(language) + _alternatives("en")))
            for language in LANGUAGES}
_ANY_ANCHOR = re.compile("|".join(alt for language in LANGUAGES
                                  for alt in _alternatives(language)))


def anchor(language: str) -> re.Pattern[str]:
    """The anchor regex for text in `language` (as `detect_language` names it)."""
    return _ANCHORS.get(language, _ANY_ANCHOR)


# Script of a letter (first word of its Unicode name) -> language, where one is implied.
_SCRIPT_LANGUAGE = {"HANGUL": "ko", "HIRAGANA": "ja", "KATAKANA": "ja", "ARABIC": "ar",
                    "DEVANAGARI": "hi", "BENGALI": "bn", "THAI": "th", "CJK": "zh"}
# The commonest short words of each Latin-script language (a few per language are enough
# to tell them apart in a sentence or two).
_COMMON_WORDS = {
    "en": "the and you your is are of to in it that for with this was have be a i my we her "
          "his at on as so but not can an our their about",
    "es": "el la los las de que y en un una por para con es tu su del se lo mi al como más",
    "fr": "le la les des de et en un une pour avec est tu ton ta vous votre du que au "
          "mon ma sur dans je",
    "pt": "o os de que e em um uma para com é você seu sua do da não na no meu minha",
    "de": "der die das und ist nicht ein eine mit zu den du dein deine sie ihr ich mir "
          "mein meine auf im wir",
    "it": "il la le di che e un una per con è non tuo tua del della gli sono mi ho alla "
          "nella ci",
    "tr": "ve bir bu da de için ile ne çok mi sen ben olarak gibi daha sadece tüm",
    "vi": "của và là các có không được một những cho người bạn này với trong",
    "id": "dan yang di ini itu dengan untuk tidak ke dari kamu anda aku saya akan dalam ya",
    "tl": "ang ng mga sa na at ay si ko mo ako ikaw hindi para nang",
}
_WORD_LANGUAGES: dict[str, list[str]] = {}
for _language, _words in _COMMON_WORDS.items():
    for _word in _words.split():
        _WORD_LANGUAGES.setdefault(_word, []).append(_language)
_WORD = re.compile(r"\w+")
# Letters that only a few of them use: (letters, language, votes per occurrence).
_LETTER_CUES = (("ñ¿¡", "es", 2), ("ãõ", "pt", 2), ("ß", "de", 2), ("äöü", "de", 1),
                ("ığş", "tr", 2), ("œèùû", "fr", 1), ("òì", "it", 1),
                ("ăđơưạảấầẩẫậắằẳẵặẹẻẽếềểễệịỉọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ", "vi", 2))


def _script(char: str) -> str:
    """The script of one letter: the first word of its Unicode name ("LATIN", "CJK", ...)."""
    name = unicodedata.name(char, "")
    return name.split(" ", 1)[0] if name else ""


def detect_language(text: str) -> str:
    """The language of `text` (an ISO 639-1 code), else its script's name, else ""."""
    sample = text[:600].lower()  # enough to tell; the whole of a long text costs time
    scripts = Counter(_script(char) for char in sample if char.isalpha())
    if not scripts:
        return ""
    if scripts["HIRAGANA"] or scripts["KATAKANA"]:
        return "ja"  # Japanese mixes kana with Han
    letters = sum(scripts.values())
    # a script other than Latin that holds a fifth of the letters names the language
    # (code and URLs in a Chinese document are Latin)
    others = [(count, script) for script, count in scripts.items() if script != "LATIN"]
    script = max(others)[1] if others and max(others)[0] >= 0.2 * letters else "LATIN"
    if script in _SCRIPT_LANGUAGE:
        return _SCRIPT_LANGUAGE[script]
    if script == "CYRILLIC":
        return "Cyrillic" if re.search("[іїєґў]", sample) else "ru"
    if script != "LATIN":
        return script.title()
    votes: dict[str, float] = Counter()
    for word in _WORD.findall(sample):
        shared = _WORD_LANGUAGES.get(word, ())
        for language in shared:  # a word several languages use counts for less
            votes[language] += 1 / len(shared)
    for letters_of, language, weight in _LETTER_CUES:
        votes[language] += weight * len(re.findall(f"[{letters_of}]", sample))
    ranked = Counter(votes).most_common(2) + [("", 0.0)]
    if ranked[0][1] < 1.5 or ranked[0][1] < 2 * ranked[1][1]:
        return "Latin"  # no clear winner: say only the script
    return ranked[0][0]
