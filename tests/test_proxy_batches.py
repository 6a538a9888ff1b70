"""The proxy's tape work threads (:class:`~streamtool.core.net.proxy.Batches`): every item run
once, in order, on the thread of its own, all that waits at once; after ``shutdown``, at once in
the caller."""

from __future__ import annotations

import threading

from streamtool.core.net.proxy import Batches


def test_every_item_runs_once_in_order_on_its_own_thread() -> None:
    batches: list[list[int]] = []
    threads: set[str] = set()
    gate = threading.Event()

    def run(items: list[int]) -> None:
        gate.wait(5)  # the first batch holds the thread: what comes meanwhile waits together
        threads.add(threading.current_thread().name)
        batches.append(items)

    work = Batches(run, "test-batches")
    for i in range(50):
        work.submit(i)
    gate.set()
    work.shutdown()
    assert [i for b in batches for i in b] == list(range(50))
    assert len(batches) < 50  # taken together, not one by one
    assert threads == {"test-batches"}


def test_writers_in_several_threads_lose_and_double_nothing() -> None:
    seen: list[int] = []
    work = Batches(seen.extend, "test-batches")

    def writer(k: int) -> None:
        for i in range(500):
            work.submit(k * 1000 + i)

    writers = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    work.shutdown()
    assert sorted(seen) == [k * 1000 + i for k in range(4) for i in range(500)]
    for k in range(4):  # each writer's items in the order it gave them
        mine = [v for v in seen if v // 1000 == k]
        assert mine == sorted(mine)


def test_a_failing_batch_does_not_stop_the_next() -> None:
    seen: list[int] = []
    first = threading.Event()

    def run(items: list[int]) -> None:
        if not first.is_set():
            first.set()
            raise OSError("the disk is full")
        seen.extend(items)

    work = Batches(run, "test-batches")
    work.submit(1)
    assert first.wait(5)
    work.submit(2)
    work.shutdown()
    assert seen == [2]


def test_after_shutdown_work_is_done_at_once_in_the_caller() -> None:
    where: list[str] = []
    work = Batches(lambda items: where.append(threading.current_thread().name), "test-batches")
    work.shutdown()
    work.shutdown()  # twice: nothing more to wait for
    work.submit(1)
    assert where == [threading.current_thread().name]
