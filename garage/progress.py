"""How a long run says how far it got, for whoever shows it (the CLI's progress bars).

A run counts what it finished and, as soon as it knows, how much it has to do: with both, a
bar shows a rate and the time left; with counts alone, only a rate.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def __call__(self, done: int, expected: int = 0) -> None:
        """``done`` more items finished; ``expected`` more items the run now knows it has to
        do (fewer, when negative)."""
