"""FairLock: one at a time, first come first served, and no wait lasts forever."""

import threading
import time

import pytest

from pmapviz.core.base import queues


def hold(t: queues.FairLock):
    """Take a turn now; returns it (the caller releases)."""
    return t.acquire(timeout=1)


def wait_until(cond, limit=5.0):
    end = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < end, "condition never became true"
        time.sleep(0.01)


def test_free_turn_is_immediate_and_a_context_manager():
    t = queues.FairLock("benchmark", slice_s=0.01)
    assert t.held_for() is None
    calls = []
    with t.acquire(timeout=0, on_wait=lambda *a: calls.append(a)) as turn:
        assert isinstance(turn, queues.Turn)
        assert t.held_for() is not None and t.held_for() >= 0
    assert t.held_for() is None and calls == []
    with t:  # default timeout
        assert t.held_for() is not None
    assert t.held_for() is None


def test_timeout_gives_up_with_position_and_holder_age():
    t = queues.FairLock("benchmark", slice_s=0.02)
    holder = hold(t)
    seen = []
    start = time.monotonic()
    with pytest.raises(queues.WaitTimeout) as err:
        t.acquire(timeout=0.3, on_wait=lambda pos, waited, message: seen.append((pos, waited)))
    took = time.monotonic() - start
    assert 0.3 <= took < 0.6
    assert err.value.position == 1 and err.value.waited_s >= 0.3
    assert "number 1 in the queue" in str(err.value) and "benchmark" in str(err.value)
    assert "it has run for" in str(err.value)
    assert seen and all(pos == 1 for pos, _ in seen)
    assert [w for _, w in seen] == sorted(w for _, w in seen)
    assert t.waiting() == 0  # the ticket left the queue
    holder.release()
    with t.acquire(timeout=0):  # and the resource is free again
        pass


def test_should_stop_cancels_a_wait_within_a_slice():
    t = queues.FairLock("cluster", slice_s=0.02)
    holder = hold(t)
    stop = threading.Event()
    threading.Timer(0.1, stop.set).start()
    start = time.monotonic()
    with pytest.raises(queues.Cancelled, match="Stopped while waiting"):
        t.acquire(timeout=30, should_stop=stop.is_set)
    assert time.monotonic() - start < 0.5
    assert t.waiting() == 0
    holder.release()


def test_on_wait_raising_abandons_the_wait_cleanly():
    """A page's rerun (Stop clicked) raises from inside on_wait: the ticket must go."""
    t = queues.FairLock("benchmark", slice_s=0.01)
    holder = hold(t)

    def boom(pos, waited, message):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        t.acquire(timeout=5, on_wait=boom)
    assert t.waiting() == 0
    holder.release()
    t.acquire(timeout=0).release()


def test_fifo_order_and_positions_are_reported():
    t = queues.FairLock("benchmark", slice_s=0.01)
    first = hold(t)
    order, positions = [], {}
    lock = threading.Lock()

    def waiter(name):
        def on_wait(pos, waited, message):
            with lock:
                positions.setdefault(name, set()).add(pos)

        with t.acquire(timeout=10, on_wait=on_wait):
            order.append(name)
            time.sleep(0.02)

    threads = []
    for i, name in enumerate("abcd"):
        th = threading.Thread(target=waiter, args=(name,))
        th.start()
        threads.append(th)
        wait_until(lambda i=i: t.waiting() == i + 1)  # queued in this order
    wait_until(lambda: set(positions) == set("abcd"))
    assert {n: max(p) for n, p in positions.items()} == {"a": 1, "b": 2, "c": 3, "d": 4}
    first.release()
    for th in threads:
        th.join(10)
    assert order == list("abcd")
    assert min(positions["d"]) == 1  # it moved up as the others finished
    assert t.held_for() is None and t.waiting() == 0


def test_a_waiter_leaving_lets_the_next_one_move_up():
    t = queues.FairLock("benchmark", slice_s=0.01)
    first = hold(t)
    stop_a = threading.Event()
    got = []

    def a():
        with pytest.raises(queues.Cancelled):
            t.acquire(timeout=10, should_stop=stop_a.is_set)

    def b():
        seen = []
        with t.acquire(timeout=10, on_wait=lambda pos, w, message: seen.append(pos)):
            got.append(seen)

    ta = threading.Thread(target=a)
    ta.start()
    wait_until(lambda: t.waiting() == 1)
    tb = threading.Thread(target=b)
    tb.start()
    wait_until(lambda: t.waiting() == 2)
    time.sleep(0.05)
    stop_a.set()
    ta.join(5)
    time.sleep(0.05)
    first.release()
    tb.join(5)
    assert got and got[0][0] == 2 and got[0][-1] == 1


def test_mutual_exclusion_under_contention():
    t = queues.FairLock("benchmark", slice_s=0.005)
    inside, worst, errors = [0], [0], []
    guard = threading.Lock()

    def worker():
        try:
            for _ in range(10):
                with t.acquire(timeout=20):
                    with guard:
                        inside[0] += 1
                        worst[0] = max(worst[0], inside[0])
                    time.sleep(0.001)
                    with guard:
                        inside[0] -= 1
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    assert not errors and worst[0] == 1 and t.waiting() == 0


def test_release_is_idempotent_and_messages_name_the_holder_age():
    t = queues.FairLock("benchmark")
    turn = hold(t)
    time.sleep(0.05)
    msg = t.wait_message(3, 7.0)
    assert "you are number 3 in the queue (2 ahead of you)" in msg
    assert "; it has run for 0." in msg and "waited 7.0 s" in msg
    turn.release()
    turn.release()
    assert t.held_for() is None
    assert "it has run" not in t.wait_message(1)


@pytest.mark.parametrize("bad", [float("inf"), float("nan"), -1, "5", None])
def test_timeout_must_be_finite(bad):
    with pytest.raises(ValueError, match="finite"):
        queues.FairLock("x").acquire(timeout=bad)


def test_resources_are_process_wide_singletons():
    assert queues.resource("benchmark") is queues.resource("benchmark")
    assert queues.resource("benchmark") is not queues.resource("cluster")


# ---------------------------------------------------------------- a shared capacity (Pool)
def _mb(amount):
    return "+".join(f"{a}MB" for a in amount)


def test_pool_shares_its_capacity_and_says_who_holds_it():
    pool = queues.Pool("memory", (100,), _mb, slice_s=0.01)
    a = pool.acquire((60,), "the 10M example", timeout=0)
    b = pool.acquire((40,), "a sweep", timeout=0)  # fits beside a
    assert pool.free() == (0,) and [h[0] for h in pool.held()] == ["the 10M example", "a sweep"]
    seen = []
    with pytest.raises(queues.WaitTimeout, match="needs 30MB, and other sessions held the rest"):
        pool.acquire(
            (30,),
            "a live run",
            timeout=0.1,
            on_wait=lambda pos, waited, message: seen.append((pos, message)),
        )
    assert seen and seen[0][0] == 1
    message = seen[0][1]
    assert "needs 30MB" in message and "0MB of 100MB is free" in message
    assert "the 10M example (60MB" in message and "a sweep (40MB" in message
    a.release()
    with pool.acquire((30,), "a live run", timeout=0):
        assert pool.free() == (30,)
    b.release()
    assert pool.free() == (100,) and pool.held() == []


def test_pool_serves_in_order_so_a_big_action_is_not_starved():
    pool = queues.Pool("memory", (100,), _mb, slice_s=0.01)
    small = pool.acquire((50,), "first", timeout=0)
    order, started = [], threading.Event()

    def big():
        started.set()
        with pool.acquire((80,), "big", timeout=5):
            order.append("big")

    t = threading.Thread(target=big)
    t.start()
    started.wait()
    wait_until(lambda: pool.waiting() == 1)
    # 50 are free: a 10 would fit, but it is behind the big one, so it waits its turn
    with pytest.raises(queues.WaitTimeout, match="number 2 in the queue"):
        pool.acquire((10,), "small", timeout=0.1)
    small.release()
    t.join(5)
    assert order == ["big"] and pool.free() == (100,)


def test_pool_refuses_at_once_what_could_never_fit_and_checks_every_kind():
    pool = queues.Pool("memory", (100, 10), _mb, slice_s=0.01)
    with pytest.raises(queues.NeverFits, match="needs 1MB\\+11MB; all of memory is 100MB\\+10MB"):
        pool.acquire((1, 11), "a run", timeout=5)
    with pool.acquire((90, 2), "a", timeout=0), pytest.raises(queues.WaitTimeout):
        pool.acquire((5, 9), "b", timeout=0.05)  # host fits, device does not
    assert pool.waiting() == 0


def test_pool_wait_stops_on_request():
    pool = queues.Pool("memory", (10,), _mb, slice_s=0.01)
    with pool.acquire((10,), "a", timeout=0), pytest.raises(queues.Cancelled):
        pool.acquire((1,), "b", timeout=5, should_stop=lambda: True)
    assert pool.waiting() == 0
