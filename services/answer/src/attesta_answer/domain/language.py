"""What the answer says in the question's language (pure).

The KB is written in English, and answers quote it verbatim (citations must reconcile). A
question asked in another language is answered from the English cards, and the answer says so
in that language; a question the KB cannot answer is told so in that language too. The
languages the assistant is measured in have lines here (Portuguese, Spanish); others get the
English lines.
"""

from __future__ import annotations

from attesta_answer.domain.model import NO_CONTEXT_ANSWER

# ISO 639-1 code -> the note put before an answer quoted from the English cards.
SOURCES_IN_ENGLISH = {
    "pt": "As fontes estão em inglês; a resposta cita-as tal como estão:",
    "es": "Las fuentes están en inglés; la respuesta las cita tal como están:",
}
SOURCES_IN_ENGLISH_OTHER = "The sources are in English; the answer quotes them as they are:"
NOT_IN_KB = {
    "pt": "Não encontrei isto na base de conhecimento verificada.",
    "es": "No encontré esto en la base de conocimiento verificada.",
}


def is_english(language: str | None) -> bool:
    return language in (None, "", "en")


def with_sources_note(answer: str, language: str | None) -> str:
    """``answer`` (quoted from the English cards) with a note in ``language`` saying so."""
    if is_english(language):
        return answer
    note = SOURCES_IN_ENGLISH.get(language or "", SOURCES_IN_ENGLISH_OTHER)
    return f"{note} {answer}"


def no_context_answer(language: str | None) -> str:
    return NO_CONTEXT_ANSWER if is_english(language) else NOT_IN_KB.get(language or "", NO_CONTEXT_ANSWER)
