"""The configured local chat model, for one answer at a time."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from garage.config import GarageConfig
from garage.inference import LocalChatModel


@contextmanager
def chat_model(config: GarageConfig) -> Iterator[LocalChatModel]:
    """The configured local chat model, its client closed afterwards."""
    model = LocalChatModel.from_config(config)
    try:
        yield model
    finally:
        model.client.close()
