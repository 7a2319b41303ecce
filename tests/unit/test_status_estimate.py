"""The time left, as `garage status` and the Sources page say it, and the progress bars that
show a long run's rate and time left."""

from __future__ import annotations

import re
import time

import pytest

from garage.cli.common import ProgressBars
from garage.embed.runs import Rate
from garage.status import duration, estimate


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (0, "under a minute"),
        (59, "under a minute"),
        (90, "2 min"),
        (3599, "1 h"),
        (2 * 3600 + 10 * 60, "2 h 10 min"),
        (47 * 3600 + 59 * 60, "47 h 59 min"),
        (3 * 86400 + 4 * 3600, "3 days 4 h"),
        (5 * 86400, "5 days"),
    ],
)
def test_durations_are_said_as_close_as_an_estimate_deserves(seconds: float, said: str) -> None:
    assert duration(seconds) == said


def test_the_estimate_names_its_measured_rate_or_says_it_has_none() -> None:
    rate = Rate(chunks_per_second=11.8, runs=3, chunks=4720, seconds=400.0)
    assert estimate(92_040, rate) == (
        "about 2 h 10 min left at 11.8 chunks/s (measured over the last 3 runs)"
    )
    one = Rate(chunks_per_second=2.0, runs=1, chunks=10, seconds=5.0)
    assert estimate(240, one) == "about 2 min left at 2.0 chunks/s (measured over the last 1 run)"
    assert estimate(30, one) == (
        "under a minute left at 2.0 chunks/s (measured over the last 1 run)"
    )
    assert "rate unknown" in estimate(500, None) and "left at" not in estimate(500, None)
    assert estimate(0, rate) == estimate(0, None) == "nothing waiting"


def _shown(bars: ProgressBars, stage: str) -> str:
    return str(bars.bars[stage])


def test_a_bar_shows_its_rate_and_once_told_how_much_is_coming_the_time_left() -> None:
    bars = ProgressBars(" chunks", quiet=False)
    bars.quiet = False  # under pytest stderr is no terminal
    with bars:
        count = bars.of("embed")
        assert count is not None
        count(0, 100)
        for _ in range(2):
            time.sleep(0.1)
            count(10)
        line = _shown(bars, "embed")
        # 20 of 100, elapsed < time left, and a measured rate
        assert re.search(r"20/100 \[\d\d:\d\d<\d\d:\d\d, [\d.]+ chunks/s\]", line), line
        count(0, -60)  # fewer than expected after all
        count(20)
        assert "40/40" in _shown(bars, "embed")
        count(5)  # more than expected: the bar stays whole
        assert "45/45" in _shown(bars, "embed")
        bars("ingest notes", 3)
        time.sleep(0.1)
        bars("ingest notes", 3)
        # Nothing said about how many: a count and a rate, no time left.
        assert re.search(r"6 chunks \[\d\d:\d\d, [\d.]+ chunks/s\]", _shown(bars, "ingest notes"))


def test_no_bar_without_a_terminal() -> None:
    bars = ProgressBars(" chunks", quiet=True)
    assert bars.of("embed") is None
    bars("embed", 5, 10)
    assert bars.bars == {}
