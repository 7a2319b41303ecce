"""The quality gate: reject text that no human wrote, before it is chunked and embedded.

A personal corpus is full of machine output (one macOS sysdiagnose bundle produced ~200k chunks):
logs, certificates, key dumps, vectors, test tables. ``assess`` is the content-based backstop.
It measures structural signals over the text (line-shape repetition, timestamp prefixes,
hex/base64 density, numeric tokens, the alphabetic ratio, sentence punctuation) and rejects only
on a *decisive* signal, one that no human document reaches, or on *corroboration*: two
suspicious signals, at least one of them structural. Any single signal has false positives (a
bibliography repeats its line shapes, a cryptography paper quotes hex digests, a spreadsheet is
mostly numbers), and the texture signals alone (few sentence marks, many letter-digit tokens)
describe every config file, so they never reject by themselves.

Code is judged too, and must pass: source is recognised by its syntax (calls, assignments,
braces, trailing commas, string-literal and comment lines) and then needs three signals, or
only a decisive one, so that the generated tables inside real source files are kept.

Tables are data by design, and people keep them: a table an extractor found in a spreadsheet,
a PDF or an Office file (Markdown rows) is set aside whole, as a sheet is, and so is a table
aligned with spaces in plain text unless its first column gives it away as a generated listing
(ids in ascending order, or a few values repeated). Rows set aside still count for hex/base64
density and timestamps. Mail quoting and list markers are not part of a line's shape, a name
with its mail address is a list entry, not a record, and three distinct sentences a person
wrote, a tenth of the words or more, vouch for the output pasted between them (a how-to).

Validated on real text (tests/unit/test_quality.py, test_quality_corpus.py): 4,401 human
documents from four registry packages (the Python 3.11 docs, Git's manuals and how-tos, Django's
docs and AUTHORS, 2,954 20 Newsgroups posts full of hand-made tables) and all of the standard
library's Python source are accepted; PEM keys and certificates, IBM's decimal test tables,
GloVe vectors, a stemmed token stream, dpkg's and apt's logs and usb.ids are rejected. Texts
under MIN_CHARS visible characters are not judged.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

MIN_CHARS = 400  # below this there is too little evidence to judge, and too little to do harm
PROSE_SENTENCES = 3  # distinct sentences a person wrote, for the prose to vouch for a text…
PROSE_SHARE = 0.1  # …when they are at least this share of its words (a preface does not)
MAX_LINES = 20_000  # larger texts are judged on an even sample of lines, to bound the cost

# A timestamp at the start of a line: ISO dates, syslog, dmesg, bare clock times, epochs.
_TIMESTAMP = re.compile(
    r"""^\s*[\[<(]?\s*(?:<\d+>\s*)?(?:
        \d{4}[-/.]\d{2}[-/.]\d{2}(?:[T\s_]+\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?\S*)?
      | \d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}[T\s,]+\d{1,2}:\d{2}(?::\d{2})?
      | (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\s+\d{1,2}\s+\d{1,2}:\d{2}:\d{2}
      | \d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?
      | \d{10}(?:\.\d+)?\b
      | \d+\.\d{3,6}\]
    )[\])>]?""",
    re.IGNORECASE | re.VERBOSE,
)
_MONTHS = frozenset("jan feb mar apr may jun jul aug sep oct nov dec".split())
_HEX = re.compile(r"(?:0x)?[0-9a-fA-F]{16,}|(?:[0-9a-fA-F]{2}[:\-]){7,}[0-9a-fA-F]{0,2}")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")
_WORD = re.compile(r"[^\W\d_]+(?:['’\-][^\W\d_]+)*")
_NUMBER = re.compile(r"[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+(?:[.,:/\-]\d+)*|\.\d+)(?:[eE][-+]?\d+)?)%?")
_DIGIT = re.compile(r"\d")
_NON_LETTERS = re.compile(r"[\W\d_]+")
_LETTER = re.compile(r"[^\W\d_]")
# Lines that only source code has: calls, assignments, braces, continuation commas, lines that
# open with a string literal or a comment marker, and statement keywords.
_SYNTAX = re.compile(
    r"""\w\(|\s=\s|[=!<>]=|:=|[-+*/|&]=|=>|::|[{};]\s*$|^\s*[][(){}]|,\s*(?:$|\#|//)|\\$
      | ^\s*(?:['"]|\#|//|/\*|\*\s)
      | ^\s*(?:def|class|return|import|from|if|elif|else|for|while|try|except|with|const|let
             |var|function|func|fn|pub|package|use|end|begin)\b""",
    re.VERBOSE,
)
_STRIP = "\"'`()[]{}<>,;:.!?*_#"
_QUOTED = re.compile(r"^\s*(?:[>|]\s?)+")  # mail quoting, "> " or "|" before each line
_CELL_GAP = re.compile(r"\S(?: {2,}|[ \t]*\t[ \t]*)(?=\S)")  # cells apart: 2+ spaces or a tab
# An identifier as generated listings key their rows: zero-padded numbers, hex with letters.
_ID = re.compile(r"0\d{2,}|(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{4,}")
_HEX_ID = re.compile(r"[0-9a-fA-F]{2,16}")
_DIGITS = re.compile(r"(\d+)")
# The marker of a list item: "1.", "12)", "a)", "(iv)", "-", "*", "•" before the item's text.
_LIST_MARKER = re.compile(
    r"^\s*(?:\(?(?:\d{1,3}|[a-zA-Z]|[ivxlc]{1,5})(?:\.\s+|\)\s*)|[-*•+]\s+)(?=\S)"
)
_CELL_SPLIT = re.compile(r" {2,}|[ \t]*\t[ \t]*")
_COMMENT = re.compile(r"^\s*(?:#|--|//|;|%|/\*|\*\s|REM\b)")  # comments in data and code
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+")
_SENTENCE_ENDS = (".", "!", "?", '."', ".)", "?)", ".'")
_FUNCTION_WORDS = frozenset(
    """the a an of to in is are was were be been it its that this these for on with as by at
    from or and not but if you we he she they i me my your our his her their there have has
    had do does did can could will would should may might must no all any which who what when
    le la les des un une est et de du en que qui pour dans pas sur au aux ce il elle nous vous
    der die das und ist nicht ein eine zu mit den von sich auch auf für im dem des
    el los las es y por para con una se lo como más pero""".split()
)
# A person's contact beside their name (mail addresses, web pages): lists of people carry them.
_CONTACT = re.compile(r"<?(?:[\w.+-]+@[\w-]+(?:\.[\w-]+)+|(?:https?://|www\.)\S+)>?[,;.]?")
_PUNCT_END = re.compile(r"[.,;:!?](?=\s|$)")  # a token that ends a sentence or a clause


@dataclass(frozen=True)
class QualityVerdict:
    accepted: bool
    reason: str | None  # why it was rejected, naming the signals and their values
    signals: dict[str, float] = field(default_factory=dict)  # every signal, for logs and metadata


def assess(text: str) -> QualityVerdict:
    """Judge whether ``text`` is worth indexing (human-written prose, notes or code)."""
    signals = _signals(text)
    if signals["chars"] < MIN_CHARS:
        return QualityVerdict(True, None, signals)
    reason = _decisive(signals) or _corroborated(signals)
    return QualityVerdict(reason is None, reason, signals)


def exceeds_chunk_cap(n_chunks: int, max_chunks_per_document: int) -> bool:
    """The final backstop: a document that still splits into more chunks than the cap is refused
    whole (a partial document would mislead search). A cap of 0 or less means no cap."""
    return max_chunks_per_document > 0 and n_chunks > max_chunks_per_document


# -- decisions ----------------------------------------------------------------------------------


def _decisive(s: dict[str, float]) -> str | None:
    """A signal strong enough alone: no document in the prose or code corpora comes near it."""
    encoded_limit = 0.9 if s["code_syntax"] >= 0.25 else 0.7  # source may embed a blob or two
    if s["blob_density"] >= encoded_limit:
        return f"encoded data: hex/base64 density {s['blob_density']:.2f}"
    if s["numeric_ratio"] >= 0.8 and s["sentence_punct"] < 0.2:
        # Whitespace-separated numbers (vectors, measurements); code separates them with commas.
        return f"numeric data: {s['numeric_ratio']:.2f} of tokens are numbers"
    if (
        s["tokens"] >= 1000
        and s["word_ratio"] >= 0.8
        and s["sentence_punct"] < 0.005
        and s["uppercase_ratio"] < 0.005
    ):
        # Words with no sentence punctuation and no capitals at all: stemmed or tokenised text.
        return (
            f"token stream: sentence punctuation {s['sentence_punct']:.3f} and capitals "
            f"{s['uppercase_ratio']:.3f} over {int(s['tokens'])} tokens"
        )
    return None


# Signals of machine structure, and signals of a texture that is merely not prose; the second
# kind alone never rejects (markup and config files share it).
# (signal, threshold, suspicious when above?, how it reads in a reason)
_STRUCTURE: tuple[tuple[str, float, bool, str], ...] = (
    ("blob_density", 0.25, True, "hex/base64 density"),
    ("numeric_ratio", 0.25, True, "numeric tokens"),
    ("timestamp_lines", 0.5, True, "timestamp-prefixed lines"),
    ("shape_repetition", 0.5, True, "line-shape repetition"),
)
_TEXTURE: tuple[tuple[str, float, bool, str], ...] = (
    ("mixed_ratio", 0.12, True, "letter-digit tokens"),
    ("alpha_ratio", 0.5, False, "alphabetic ratio"),
    ("sentence_punct", 0.1, False, "sentence punctuation"),
)


def _corroborated(s: dict[str, float]) -> str | None:
    """Two suspicious signals, one of them structural, reject; source code needs three."""
    if s["tokens"] < 50:
        return None
    if s["prose_sentences"] >= PROSE_SENTENCES and s["prose_share"] >= PROSE_SHARE:
        # A person writing between the output they pasted (a how-to, a question about a file):
        # the prose vouches for the rest, unless a decisive signal says otherwise.
        return None
    structure = _hits(s, _STRUCTURE)
    hits = structure + _hits(s, _TEXTURE)
    syntax = s["code_syntax"]
    needed = 2 if syntax < 0.3 else 3 if syntax < 0.6 else len(hits) + 1
    if not structure or len(hits) < needed:
        return None
    return "machine text: " + " and ".join(hits)


def _hits(s: dict[str, float], flags: tuple[tuple[str, float, bool, str], ...]) -> list[str]:
    hits = []
    for name, threshold, above, label in flags:
        value = s[name]
        if (value >= threshold) if above else (value < threshold):
            hits.append(f"{label} {value:.2f}")
    return hits


# -- signals ------------------------------------------------------------------------------------


# Tokens repeat (words, operators, the same identifiers): a cache makes most lookups one dict hit.
@lru_cache(maxsize=1 << 16)
def _token_class(token: str) -> tuple[str, int]:
    """W word, N number, M letters and digits, E hex/base64 (with its length), S anything else."""
    if token.isalpha():  # most tokens, and nothing to strip from them
        return "W", 0
    core = token.strip(_STRIP)
    if not core:
        return "S", 0
    if core.isalpha() or _WORD.fullmatch(core) or _CONTACT.fullmatch(token):
        return "W", 0
    if len(core) >= 16 and (
        _HEX.fullmatch(core)
        or (
            _BASE64.fullmatch(core)
            and _DIGIT.search(core)
            and not core.islower()
            and not core.isupper()
        )
    ):
        return "E", len(core)
    if _NUMBER.fullmatch(core):
        return "N", 0
    if _DIGIT.search(core) and _LETTER.search(core):
        return "M", 0
    return "S", 0


def _prose(lines: list[str], tokens: int) -> dict[str, float]:
    """Sentences a person wrote: 6 to 80 words, nearly all of them words (not ids, paths or
    numbers), two of them function words ("the", "of", "de", "und", …), which device names, log
    templates and token streams lack, ending as sentences end. Each is counted once by its
    first three words, so that a template repeated a thousand times is one sentence."""
    openings: set[tuple[str, ...]] = set()
    words = 0
    for sentence in _SENTENCE_SPLIT.split(" ".join(lines)):
        if not sentence.endswith(_SENTENCE_ENDS):
            continue
        parts = sentence.split()
        if not 6 <= len(parts) <= 80:
            continue
        found = [w.lower() for w in _WORD.findall(sentence)]
        plain = sum(1 for part in parts if _token_class(part)[0] == "W")
        if plain < 0.8 * len(parts) or sum(w in _FUNCTION_WORDS for w in found) < 2:
            continue
        opening = tuple(found[:3])
        if opening not in openings:
            openings.add(opening)
            words += len(parts)
    return {"prose_sentences": float(len(openings)), "prose_share": words / (tokens or 1)}


def _table_rows(lines: list[str]) -> tuple[set[int], set[int]]:
    """The indexes of table rows: Markdown rows (``| a | b |``, as the extractors write the
    tables of spreadsheets, PDFs and Office files), and rows aligned with runs of spaces or tabs
    (three or more cells, and the rows of two cells next to them: a table's continuation lines
    and sparse rows), as plain text holds tables."""
    gaps = []
    markdown: set[int] = set()
    aligned: set[int] = set()
    for i, line in enumerate(lines):
        stripped = line.strip()
        gaps.append(len(_CELL_GAP.findall(stripped)))
        if stripped.startswith("|") and stripped.endswith("|") and stripped.count("|") >= 3:
            markdown.add(i)
        elif gaps[i] >= 2:
            aligned.add(i)
    for order in (range(len(lines)), range(len(lines) - 1, -1, -1)):
        for i in order:
            if i in markdown or i in aligned or gaps[i] != 1:
                continue
            if {i - 1, i + 1} & aligned:
                aligned.add(i)
    return markdown, aligned


def _tables_are_human(lines: list[str], table_rows: set[int]) -> bool:
    """Whether the text's table rows are a person's tables rather than a generated listing.

    A person's table has a row per thing, each named in its first cell (a team, a product, a
    player, a rank), in no machine order. Generated listings give themselves away in that first
    cell: identifiers in ascending order, one per row (test cases ``ddabs001``, ``ddabs002``;
    device ids ``0014``, ``001c``), or a few values repeated down the column, as command output
    has (``ps``'s users, ``ls -l``'s permissions, ``dpkg -l``'s ``ii``)."""
    rows = len(table_rows)
    if rows < 10:
        return True
    keys: list[tuple[object, ...]] = []
    firsts: set[str] = set()
    for i in sorted(table_rows):
        text = _LIST_MARKER.sub("", lines[i]).strip()
        firsts.add(_CELL_SPLIT.split(text, maxsplit=1)[0])
        first = text.split(maxsplit=1)[0].strip(_STRIP)
        if _ID.fullmatch(first) or _token_class(first)[0] in "ME":
            keys.append(_order(first))
    if len(firsts) < 0.5 * rows:
        return False
    if len(keys) < 0.3 * rows or len(keys) < 10:
        return True
    ascending = sum(1 for a, b in zip(keys, keys[1:], strict=False) if _less(a, b))
    return ascending < 0.8 * (len(keys) - 1)


def _order(key: str) -> tuple[object, ...]:
    """A key's place in a listing: hex ids by value, others by their text and numbers."""
    if _HEX_ID.fullmatch(key):
        return (0, int(key, 16))
    return (1, *((int(p) if p.isdigit() else p) for p in _DIGITS.split(key) if p))


def _less(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    try:
        return a < b  # type: ignore[operator]
    except TypeError:  # a number where the other key has text
        return str(a) < str(b)


def _signals(text: str) -> dict[str, float]:
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > MAX_LINES:
        lines = lines[:: len(lines) // MAX_LINES + 1]
    n_lines = len(lines) or 1
    sample = "".join(lines)
    chars = len(sample) - sample.count(" ") - sample.count("\t")
    letters_only = _NON_LETTERS.sub("", sample)  # C speed: a Python loop per character is not
    letters, upper = len(letters_only), sum(map(str.isupper, letters_only))
    encoded = 0
    kinds_seen: list[str] = []  # every counted token's class, tallied once at the end
    shapes: Counter[str] = Counter()
    tokens = punct = stamped = syntax = tables = 0
    prose: list[str] = []  # lines that may hold sentences (not tables, logs or comments)
    # A table an extractor found is a table, as a spreadsheet's sheet is; one aligned in plain
    # text is set aside too, unless it is a generated listing, judged line by line as any text.
    markdown, aligned = _table_rows(lines)
    table_rows = markdown | aligned if _tables_are_human(lines, aligned) else markdown
    for index, line in enumerate(lines):
        stripped = line.lstrip()
        head = stripped[:3]
        # The timestamp pattern is costly: try it only where a line could start with one.
        hinted = head[:1].isdigit() or head[:1] in "[<(" or head.lower() in _MONTHS
        stamp = _TIMESTAMP.match(line) if hinted else None
        stamped += stamp is not None
        syntax += _SYNTAX.search(line) is not None
        # Mail quoting ("> ", "|") and list markers are not part of what a line says.
        body = line
        if stamp is None:
            if stripped.startswith((">", "|")):
                body = _QUOTED.sub("", body)
            marker = _LIST_MARKER.match(body)
            if marker is not None:
                body = body[marker.end() :]
        words = body.split()
        pairs = list(map(_token_class, words))
        kinds = [kind for kind, _ in pairs]
        if "E" in kinds:
            encoded += sum(length for _, length in pairs)
        if stamp is None and (len(words) == 1 or index in table_rows):
            # Table rows (spreadsheets, tables in a PDF, an Office file or a post) and lists of
            # one entry a line are data by design, as a sheet is: they count for encoding and
            # timestamps, not for the number and punctuation ratios or line shapes.
            tables += 1
            continue
        kinds_seen += kinds
        if not _COMMENT.match(body):
            prose.append(body)
        tokens += len(words)
        # Tokens that end a sentence or clause: a mark followed by a space or the line's end.
        punct += len(_PUNCT_END.findall(body))
        # The shape of a line: the classes of its first eight tokens after any timestamp, so
        # that log records of one template share a shape while prose lines rarely do.
        if stamp is not None:
            kinds = [_token_class(w)[0] for w in line[stamp.end() :].split()]
        shapes["".join(kinds[:8]) + ("+" if len(kinds) > 8 else "")] += 1
    classes = Counter(kinds_seen)
    floor = max(3, 0.01 * n_lines)
    repeated = sum(
        count
        for shape, count in shapes.items()
        if count >= floor and len(shape) >= 3 and set(shape) - {"W", "+"}  # all-word lines: prose
    )
    n_tokens = tokens or 1
    return {
        "chars": float(chars),
        "lines": float(len(lines)),
        "tokens": float(tokens),
        "alpha_ratio": letters / (chars or 1),
        "uppercase_ratio": upper / (letters or 1),
        "blob_density": encoded / (chars or 1),
        "numeric_ratio": classes["N"] / n_tokens,
        "word_ratio": classes["W"] / n_tokens,
        "mixed_ratio": classes["M"] / n_tokens,
        "sentence_punct": punct / n_tokens,
        "timestamp_lines": stamped / n_lines,
        "shape_repetition": repeated / n_lines,
        "code_syntax": syntax / n_lines,
        "table_lines": tables / n_lines,
        **_prose(prose, tokens),
    }
