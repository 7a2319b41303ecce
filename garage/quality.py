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

Validated on real text (tests/unit/test_quality.py): all 497 Python 3.11 documentation sources
(~1M words, hashlib's hex digests and API indexes included) and all of the standard library's
Python source are accepted; PEM keys and certificates, IBM's decimal test tables, GloVe
vectors, a stemmed token stream and dpkg's log are rejected. Texts under MIN_CHARS visible
characters are not judged.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

MIN_CHARS = 400  # below this there is too little evidence to judge, and too little to do harm
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
_SENTENCE_END = frozenset(".,;:!?")


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


def _token_class(token: str) -> tuple[str, int]:
    """W word, N number, M letters and digits, E hex/base64 (with its length), S anything else."""
    core = token.strip(_STRIP)
    if not core:
        return "S", 0
    if core.isalpha() or _WORD.fullmatch(core):
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
    classes: Counter[str] = Counter()
    shapes: Counter[str] = Counter()
    tokens = punct = stamped = syntax = tables = 0
    for line in lines:
        head = line.lstrip()[:3]
        # The timestamp pattern is costly: try it only where a line could start with one.
        hinted = head[:1].isdigit() or head[:1] in "[<(" or head.lower() in _MONTHS
        stamp = _TIMESTAMP.match(line) if hinted else None
        stamped += stamp is not None
        syntax += _SYNTAX.search(line) is not None
        words = line.split()
        kinds = []
        for word in words:
            kind, length = _token_class(word)
            encoded += length
            kinds.append(kind)
        if line.lstrip().startswith("|"):
            # Markdown table rows (spreadsheets, PDF tables) are data by design: they count for
            # encoding and shape, not for the number and punctuation ratios.
            tables += 1
        else:
            classes.update(kinds)
            tokens += len(words)
            punct += sum(1 for word in words if word[-1] in _SENTENCE_END)
        # The shape of a line: the classes of its first eight tokens after any timestamp, so
        # that log records of one template share a shape while prose lines rarely do.
        if stamp is not None:
            kinds = [_token_class(w)[0] for w in line[stamp.end() :].split()]
        shapes["".join(kinds[:8]) + ("+" if len(kinds) > 8 else "")] += 1
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
    }
