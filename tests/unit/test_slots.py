"""live.slots: one bound over separate processes (the rollout commands the engine runs), freed when a holder dies."""

import multiprocessing
import os
import signal
import time
import uuid

from live.slots import Slots


def hold(wave: str, limit: int, seconds: float, spans) -> None:
    slots = Slots(wave, limit)
    while (slot := slots.try_take()) is None:
        time.sleep(0.01)
    began = time.monotonic()
    time.sleep(seconds)
    spans.append((began, time.monotonic()))
    Slots.give_back(slot)


def most_at_once(spans) -> int:
    edges = sorted([(b, 1) for b, _ in spans] + [(e, -1) for _, e in spans])
    level = peak = 0
    for _, step in edges:
        level += step
        peak = max(peak, level)
    return peak


def test_at_most_limit_holders_across_processes():
    wave = f"test-{uuid.uuid4()}"
    with multiprocessing.Manager() as manager:
        spans = manager.list()
        workers = [multiprocessing.Process(target=hold, args=(wave, 2, 0.2, spans)) for _ in range(6)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(10)
        assert len(spans) == 6, "every worker got a slot in the end"
        assert most_at_once(list(spans)) == 2


def test_a_killed_holder_frees_its_slot():
    wave = f"test-{uuid.uuid4()}"
    with multiprocessing.Manager() as manager:
        holder = multiprocessing.Process(target=hold, args=(wave, 1, 60, manager.list()))
        holder.start()
        slots = Slots(wave, 1)
        deadline = time.monotonic() + 10
        while (slot := slots.try_take()) is not None and time.monotonic() < deadline:  # until the holder has it
            Slots.give_back(slot)
            time.sleep(0.01)
        assert slots.try_take() is None, "the holder's slot is taken"
        os.kill(holder.pid, signal.SIGKILL)
        holder.join(10)
        slot = slots.try_take()
        assert slot is not None, "a crashed command's slot is free for the resumed update"
        Slots.give_back(slot)
