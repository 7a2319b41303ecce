"""What one enrich-facts run did: its counts, and the line `garage enrich-facts` prints (the
potential_facts asset shows the same counts)."""

from __future__ import annotations

from dataclasses import dataclass, field


class FactsError(Exception):
    """enrich-facts cannot run as asked; the message says what to change."""


@dataclass
class EnrichReport:
    source: str | None
    model: str | None  # '<provider>:<model id>' of the extractor, None when no prompt needs one
    prompts: list[str]
    documents_read: int = 0
    documents_current: int = 0  # nothing due: every run current (--stale-only), or none applies
    documents_changed: int = 0  # ingest replaced the text while its facts were extracted
    prompts_run: int = 0  # (document, prompt) pairs extracted, metadata included
    facts_stored: int = 0
    metadata_facts: int = 0
    dropped_ungrounded: int = 0
    dropped_not_claims: int = 0  # grounded "fact" spans that state nothing (garage.facts.claims)
    dropped_not_names: int = 0  # grounded entity spans that name nothing: a pronoun, a sentence
    dropped_ungrounded_attributes: int = 0  # grounded spans with an attribute the text lacks
    refused_egress: int = 0  # communications not sent to a non-loopback model host
    failed: int = 0
    requests: int = 0
    unparsed_replies: int = 0  # model replies that were not JSON: their text yielded nothing
    cut_replies: int = 0  # replies cut off at facts.max_tokens: what they completed was kept
    characters: int = 0  # of the documents read
    seconds: float = 0.0
    stopped: str | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def chars_per_second(self) -> float:
        return self.characters / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        line = (
            f"{self.documents_read} documents read, {self.prompts_run} prompt runs, "
            f"{self.facts_stored} facts stored ({self.metadata_facts} from metadata), "
            f"{self.dropped_ungrounded} dropped as ungrounded, "
            f"{self.dropped_not_claims} as stating nothing, "
            f"{self.dropped_not_names} as naming nothing, "
            f"{self.dropped_ungrounded_attributes} for an attribute not in the text, "
            f"{self.documents_current} current"
            f" in {self.seconds:.1f}s ({self.chars_per_second:.0f} chars/s)"
        )
        if self.refused_egress:
            line += (
                f"; {self.refused_egress} communications not sent to a model host that is not "
                "on this machine"
            )
        if self.cut_replies:
            line += (
                f"; {self.cut_replies} of {self.requests} model replies were cut off at "
                "facts.max_tokens (the extractions they completed were kept, the rest of their "
                "chunks unread: raise facts.max_tokens or lower facts.max_char_buffer)"
            )
        if self.unparsed_replies:
            line += (
                f"; {self.unparsed_replies} of {self.requests} model replies did not parse "
                "(their chunks yielded nothing)"
            )
        if self.failed:
            line += f"; {self.failed} failed"
        if self.stopped:
            line += f" (stopped: {self.stopped})"
        return line
