"""An embedding model as registered: its name, what it embeds, and the tables it owns.

A record of its own, below both the registry (which writes it) and ``tables.py`` (which makes
its tables), so neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass

# The pgvector operator whose ascending order is "nearest first" for each distance.
DISTANCE_OPERATOR = {"cosine": "<=>", "l2": "<->", "inner_product": "<#>"}


@dataclass(frozen=True)
class RegisteredModel:
    name: str
    slug: str
    provider: str
    host: str
    model_id: str
    dimensions: int
    modality: str  # 'text' | 'image'
    distance: str
    binary_quantization: bool
    is_default: bool
    # The embedding input's signature (garage/embed/inputs.py): "chunk" or "context:v1".
    input: str = "chunk"

    @property
    def table(self) -> str:
        return f"emb_{self.slug}"

    @property
    def fact_table(self) -> str:
        """Where this model keeps the vectors of potential facts' chunks, keyed on the fact.
        Cut to PostgreSQL's 63-character identifier limit, as the server would cut it."""
        return f"potential_fact_emb_{self.slug}"[:63]

    @property
    def distilled_table(self) -> str:
        """Where this model keeps the vectors of distilled facts (``fact_emb_<slug>``)."""
        return f"fact_emb_{self.slug}"[:63]

    @property
    def operator(self) -> str:
        return DISTANCE_OPERATOR[self.distance]
