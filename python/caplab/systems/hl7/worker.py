"""A channel's worker: claim queued messages, transform them, write them out, mark them written.

``python -m caplab.systems.hl7.worker --channel N`` (the supervisor starts one per channel; the
database URL comes in ``CAPLAB_HL7_DB``). A process per channel, because the transform is the
engine's CPU work and Python runs one thread's Python at a time: channels on processes of their own
use as many cores as there are channels, as the paper's channels use the server's cores.

It starts by resuming what a predecessor left (queue.py: ``transforming`` rows are queued again,
``transformed`` ones written), then loops: claim up to ``--batch`` rows (commit), transform them
(store the documents: commit), write them (writers.py), mark them written (commit). An idle channel
is polled every ``--poll`` seconds. SIGTERM finishes the batch in hand and exits 0.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from caplab.systems.child import bind_to_parent
from caplab.systems.hl7.child import add_common_args, fail, log
from caplab.systems.hl7.counters import Counters, Field
from caplab.systems.hl7.queue import URL_ENV, Queue, QueueUnavailable, Transformed, open_queue
from caplab.systems.hl7.transform import TransformFailed, transform
from caplab.systems.hl7.writers import FileWriter, MllpWriter, Writer


class Worker:
    def __init__(self, channel: int, q: Queue, writer: Writer, counters: Counters | None, batch: int) -> None:
        self.channel = channel
        self.queue = q
        self.writer = writer
        self.slot = counters.slot(channel) if counters is not None else None
        self.batch = batch
        self.stopping = False

    def _count(self, field: Field, n: int) -> None:
        if self.slot is not None and n:
            self.slot[field] += n

    def resume(self) -> None:
        """What a predecessor left: claimed rows are queued again, transformed ones written."""
        left = self.queue.resume(self.channel)
        if left:
            log(f"worker {self.channel}", f"resuming: writing {len(left)} messages transformed before")
        self._write(left)

    def step(self) -> int:
        """One batch; how many messages it claimed."""
        claimed = self.queue.claim(self.channel, self.batch, time.time())
        if not claimed:
            return 0
        done, failed = [], []
        for row in claimed:
            try:
                done.append(Transformed(row.id, row.control_id, transform(row.body)))
            except TransformFailed as e:
                failed.append((row.id, str(e)))
        self.queue.store_transformed(done, failed, time.time())
        self._count(Field.TRANSFORMED, len(done))
        self._count(Field.FAILED, len(failed))
        self._write(done)
        return len(claimed)

    def _write(self, documents: list[Transformed]) -> None:
        if not documents:
            return
        self.writer.write(documents)
        self.queue.mark_written([d.id for d in documents], time.time())
        self._count(Field.WRITTEN, len(documents))

    def run(self, poll_s: float) -> None:
        self.resume()
        while not self.stopping:
            if self.step() == 0:
                time.sleep(poll_s)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m caplab.systems.hl7.worker")
    p.add_argument("--channel", type=int, required=True)
    p.add_argument("--out-dir", type=Path, default=None, help="write files here (one per message)")
    p.add_argument("--sink", default=None, help="or send them over MLLP to HOST:PORT")
    p.add_argument("--batch", type=int, default=100, help="messages claimed at a time")
    p.add_argument("--poll", type=float, default=0.02, help="seconds between looks at an idle channel")
    add_common_args(p)
    a = p.parse_args(argv)
    bind_to_parent(a.parent_pid)
    who = f"worker {a.channel}"
    url = os.environ.get(URL_ENV)
    if not url:
        fail(who, f"no database: set {URL_ENV}")
    if (a.out_dir is None) == (a.sink is None):
        fail(who, "give --out-dir or --sink")
    try:
        q = open_queue(url)
    except QueueUnavailable as e:
        fail(who, str(e))
    writer: Writer = MllpWriter(a.sink) if a.sink else FileWriter(a.out_dir, a.channel)
    counters = Counters(Path(a.counters)) if a.counters else None
    worker = Worker(a.channel, q, writer, counters, a.batch)

    def stop(signum: int, frame: FrameType | None) -> None:
        worker.stopping = True

    signal.signal(signal.SIGTERM, stop)
    if a.parent_pid is None:
        signal.signal(signal.SIGINT, stop)
    print(f"ready channel {a.channel} {writer.description}", flush=True)
    worker.run(a.poll)
    writer.close()
    q.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
