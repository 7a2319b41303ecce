"""Which rare words of a question no excerpt contains: evidence, shown to the model, that
search found something near the question rather than about it.

Search returns excerpts for every question, so a small model shown six excerpts about Python
and asked how to configure Nginx sees text that looks relevant and answers from memory. What
it cannot easily see is that no excerpt says "Nginx" at all. A person checking excerpts looks
for the question's subject first; this module does the same, word by word, and the prompt
lists the words found nowhere. The model still decides: a question may use a word the
excerpts put otherwise ("a copy of a list" / "copying lists").

Only rare words are listed: those in at most one chunk in ``RARE_SHARE`` of the index (by the
keyword leg's own statistics, ``bm25_postings``), the words that name a subject (a program, a
place, a person) rather than a way of asking ("result", "define", "existing"). A common word
missing from six excerpts says nothing; a rare one missing says the subject is elsewhere or
nowhere.

Words are compared on a crude stem (lower case, common English endings removed), so plurals
and verb forms match; a word counts as found when any excerpt has a word of the same stem.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg.rows import tuple_row

# A word in at most this share of the index's chunks is rare (1 in 200; in an index under 200
# chunks, only a word in none).
RARE_SHARE = 1 / 200

# Words that carry no subject: function words, and the verbs and nouns of asking itself.
STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each either
    else ever every few for from further get gets getting give given go goes going got had has
    have having he her here hers him his how i if in into is it its itself just let like may me
    might more most much must my myself need needs neither no nor not now of off on once one
    only or other our ours out over own per same shall she should so some such than that the
    their theirs them then there these they this those through to too under until up upon us
    use used uses using very via was way ways we were what whats when where whether which while
    who whom whose why will with within without would yes yet you your yours yourself
    anything something everything nothing someone anyone thing things kind kinds best better
    good right wrong new old make makes making made want wants tell know mean means meaning
    happen happens possible instead example examples really still already usually always often
    never sometimes else difference different differences first last many several lot lots
    work works working find write writes written see say says said show called call
    dont doesnt didnt isnt arent cant wont shouldnt wouldnt couldnt whats hows
    """.split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[+#]+|(?:[.\-'][A-Za-z0-9]+)*)")
_ENDINGS = ("ations", "ation", "ingly", "ings", "ing", "ies", "ied", "es", "ed", "ly", "s")
MIN_WORD = 3
_PART = re.compile(r"[A-Za-z0-9]+")


def stem(word: str) -> str:
    """A crude stem: lower case, one common ending removed when enough of the word is left."""
    word = word.lower().replace("'", "")
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            word = word[: -len(ending)]
            if ending in ("ies", "ied"):
                word += "y"
            break
    # "configure" and "configuring" meet at "configur".
    if word.endswith("e") and len(word) >= 5:
        word = word[:-1]
    return word


def question_words(question: str) -> list[str]:
    """The question's words that could name its subject, in order, each once."""
    seen: dict[str, str] = {}
    for match in _WORD.finditer(question):
        word = match.group()
        lowered = word.lower().replace("'", "")
        if len(lowered) < MIN_WORD or lowered in STOPWORDS:
            continue
        seen.setdefault(stem(word), word)
    return list(seen.values())


def missing_words(question: str, excerpts: Iterable[str], rare: Iterable[str]) -> list[str]:
    """The question's ``rare`` words (see :func:`rare_words`) that no excerpt contains,
    compared on their stems; a hyphenated or dotted word is found when all its parts are
    ("worst-case" in "the worst case")."""
    texts = list(excerpts)
    found = {stem(m.group()) for text in texts for m in _WORD.finditer(text)}
    found.update(stem(part) for text in texts for part in _PART.findall(text))
    wanted = set(rare)
    return [
        word
        for word in question_words(question)
        if word in wanted
        and stem(word) not in found
        and not all(stem(part) in found for part in _PART.findall(word))
    ]


def rare_words(conn: psycopg.Connection[Any], words: Sequence[str]) -> list[str]:
    """Those of ``words`` that at most one chunk in ``RARE_SHARE`` of the index holds, by the
    keyword leg's statistics (a word whose text search drops as a stop word is not rare). A
    word of several lexemes ("one-liners") is rare when one of them is."""
    if not words:
        return []
    # A tuple cursor: callers' connections may carry a dict row factory.
    with conn.cursor(row_factory=tuple_row) as cur:
        row = cur.execute("SELECT coalesce(sum(chunks), 0) FROM bm25_corpus").fetchone()
        most = int(int(row[0] if row else 0) * RARE_SHARE)
        rows = cur.execute(
            """
        SELECT DISTINCT l.word
          FROM unnest(%(words)s::text[]) AS l(word)
         CROSS JOIN LATERAL unnest(tsvector_to_array(to_tsvector('english', l.word))) AS t(term)
         WHERE (SELECT count(*) FROM (SELECT 1 FROM bm25_postings p
                                       WHERE p.term = t.term LIMIT %(most)s + 1) AS s) <= %(most)s
        """,
            {"words": list(words), "most": most},
        ).fetchall()
    rare = {r[0] for r in rows}
    return [w for w in words if w in rare]
