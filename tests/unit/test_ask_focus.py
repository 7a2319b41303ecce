"""rag_ask's excerpts: the sentences of a chunk around the part that best matches the
question, within a character budget."""

from __future__ import annotations

from garage.ask.focus import focus_all, pieces, window

CHUNK = (
    "Git keeps a history of every change. Commits are snapshots of the tree.\n"
    "Branches are cheap pointers to commits, and switching is fast.\n"
    "Use git stash to record the current state of the working directory and go back to a "
    "clean one. The stash can be applied later with git stash pop.\n"
    "Tags name a commit for good, such as a release. They do not move."
)


def test_a_chunk_is_cut_into_sentences_and_lines_short_ones_joined() -> None:
    text = (
        "Yes.\nA line that is long enough to stand alone here.\n"
        "A sentence of its own, long enough to count. And a second sentence after it.\nOk."
    )
    assert [text[p.start : p.end] for p in pieces(text)] == [
        "Yes.\nA line that is long enough to stand alone here.",
        # Too short to stand alone at the end: joined to the piece before.
        "A sentence of its own, long enough to count. And a second sentence after it.\nOk.",
    ]


def test_the_window_grows_around_the_best_piece_within_the_limit() -> None:
    spans = pieces(CHUNK)
    best = next(i for i, p in enumerate(spans) if "git stash to" in CHUNK[p.start : p.end])
    part = window(CHUNK, spans, best, 200)
    assert "Use git stash to record" in part.text
    assert len(CHUNK[part.start : part.end]) <= 200
    assert part.text.startswith("… ") and part.text.endswith(" …")
    # The whole chunk fits: nothing is marked as cut.
    whole = window(CHUNK, spans, best, 10_000)
    assert whole.text == CHUNK.strip() and (whole.start, whole.end) == (0, len(CHUNK))


def test_a_lone_piece_longer_than_the_limit_is_cut_at_a_word() -> None:
    text = "word " * 100
    part = window(text, pieces(text), 0, 120)
    assert part.end - part.start <= 120 and part.text.endswith(" …")
    assert not part.text.startswith("…")


def test_the_embedding_decides_which_part_is_kept() -> None:
    def embed(texts: list[str]) -> list[list[float]]:
        # A fake embedding written for the test: the question and any piece about stashing
        # point one way, everything else the other.
        return [[1.0, 0.0] if ("aside" in t or "stash" in t) else [0.0, 1.0] for t in texts]

    [part] = focus_all("How do I put my edits aside?", [CHUNK], 160, embed)
    assert "git stash" in part.text and "Tags name" not in part.text


def test_without_an_embedding_shared_words_decide_and_short_chunks_stay_whole() -> None:
    def broken(texts: list[str]) -> list[list[float]]:
        raise OSError("connection refused")

    short = "A short chunk."
    parts = focus_all("Which tags name a release?", [CHUNK, short], 120, broken)
    assert "Tags name a commit" in parts[0].text
    assert parts[1].text == short
    assert focus_all("Which tags name a release?", [CHUNK], 120, None)[0].text == parts[0].text
