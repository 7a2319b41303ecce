"""The ingest lookahead finishes items in the order they came and drops what is in flight."""

import threading

from garage.ingest.lookahead import lookahead


def test_items_come_back_in_submission_order_with_their_results():
    with lookahead() as ahead:
        taken = []
        for n in range(6):
            ahead.submit(n, lambda value: value * value, n)
            taken += [(item, future.result()) for item, future in ahead.ready(depth=2)]
        taken += [(item, future.result()) for item, future in ahead.ready(depth=0)]
    assert taken == [(n, n * n) for n in range(6)]


def test_at_most_depth_items_wait_in_flight():
    with lookahead() as ahead:
        for n in range(5):
            ahead.submit(n, lambda: None)
            list(ahead.ready(depth=2))
        assert ahead.discard() == 2


def test_discard_cancels_work_not_started():
    gate = threading.Event()
    ran = []
    with lookahead() as ahead:
        ahead.submit("first", gate.wait, 5)
        ahead.submit("second", ran.append, "second")
        assert ahead.discard() == 2
        gate.set()
    assert ran == []


def test_a_worker_error_is_raised_where_the_item_is_finished():
    def fail():
        raise ValueError("bad file")

    with lookahead() as ahead:
        ahead.submit("x", fail)
        [(item, future)] = list(ahead.ready(depth=0))
    assert item == "x"
    assert isinstance(future.exception(), ValueError)
