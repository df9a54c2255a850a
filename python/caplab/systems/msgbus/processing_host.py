"""A processing host (BizTalk's host instance: "host" in the flags and roles, never the machine).
Claims published messages from every MessageBox, routes each by its subscription and runs the
subscriber: the send port maps the message and delivers it to the back-end sink; the orchestration
does its step and republishes the result. Then it completes the claims (the orchestration's
republish in the same store transaction as its complete).

Each host runs LOOPS_PER_STORE claim loops per store, each claiming its next batch while it maps
the current one, and one completer per store that completes the loops' batches together; so the
host keeps mapping while requests are in flight. All of a host's work runs on one thread: one host
process uses at most one core, and adding hosts is what spreads the processing tier, as adding
BizTalk servers does.

Deliveries carry the interchange id; the sink acknowledges each and counts it only the first time.
A host that dies leaves its claims to expire; another host claims and delivers them again (the sink
acknowledges the redelivery without counting it twice), so every acknowledged document reaches the
back end exactly once.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from caplab.systems.counterfile import open_slot
from caplab.systems.msgbus import child, maps
from caplab.systems.msgbus.counters import ProcessingHostCounter
from caplab.systems.msgbus.protocol import (
    Claimed,
    MessageBoxClient,
    MessageBoxError,
    Republished,
    TierConnection,
    Token,
    frame,
    read_frame,
)
from caplab.systems.msgbus.subscriptions import ORCHESTRATION, SEND_PORT, Subscription, from_rows

LOOPS_PER_STORE = 2
CLAIM_BATCH = 32
MAX_UNCOMPLETED = 4 * CLAIM_BATCH
CLAIM_WAIT_MS = 500
APPROVED_ORDER = "approved-order"

SEND_PORTS: dict[str, Callable[[str, int], str]] = {SEND_PORT: maps.send_port_map}
ORCHESTRATIONS: dict[str, Callable[[str], str]] = {ORCHESTRATION: maps.orchestrate}


class DeliveryFailed(RuntimeError):
    """The sink refused a delivery or went away."""


class SinkClient(TierConnection):
    """One connection to the back-end sink (the send port's transport)."""

    tier = "sink"
    failure = DeliveryFailed

    async def deliver(self, documents: list[tuple[int, str]]) -> None:
        """Sends the documents one frame each (written together) and waits for every ack."""
        self._writer.write(b"".join(frame(b"%d\n" % iid + text.encode()) for iid, text in documents))
        try:
            for _ in documents:
                reply = await read_frame(self._reader)
                if not reply.startswith(b"OK"):
                    raise DeliveryFailed(
                        f"the sink refused a delivery: {reply[:200].decode(errors='replace')}"
                    )
        except (OSError, asyncio.IncompleteReadError) as e:
            raise DeliveryFailed(f"lost the connection to the sink at {self.address}") from e

    def close(self) -> None:
        self._writer.close()


@dataclass
class Work:
    """What one claimed batch turned into."""

    deliveries: list[tuple[int, str]] = field(default_factory=list)
    done: list[Token] = field(default_factory=list)
    republish: list[Republished] = field(default_factory=list)


class ProcessingHost:
    """Routes claimed messages by subscription and runs their subscribers."""

    def __init__(self, subscriptions: dict[str, Subscription], counters: memoryview) -> None:
        for sub in subscriptions.values():
            known = SEND_PORTS if sub.kind == "send-port" else ORCHESTRATIONS
            if sub.subscriber not in known:
                raise ValueError(
                    f"subscription for {sub.message_type!r} names unknown {sub.kind} {sub.subscriber!r}"
                )
        self.subscriptions = subscriptions
        self.counters = counters

    def process(self, claimed: list[Claimed]) -> Work:
        work = Work()
        for message_id, token, interchange_id, message_type, body in claimed:
            sub = self.subscriptions.get(message_type)
            try:
                if sub is None:
                    raise ValueError(f"no subscription for message type {message_type!r}")
                if sub.kind == "orchestration":
                    successor = ORCHESTRATIONS[sub.subscriber](body)
                    work.republish.append((message_id, token, APPROVED_ORDER, successor))
                    continue
                outbound = SEND_PORTS[sub.subscriber](body, interchange_id)
            except maps.MAP_ERRORS as e:
                self.counters[ProcessingHostCounter.FAULTS] += 1
                outbound = maps.fault(body, interchange_id, e)
            work.deliveries.append((interchange_id, outbound))
            work.done.append((message_id, token))
        return work


class Completer:
    """Completes this host's claims on one store. Claim loops hand their batches over and go on
    claiming; the completer sends everything handed over since its last request in one complete
    request (one in flight), so the loops' completes share one store commit."""

    def __init__(self, store: MessageBoxClient, counters: memoryview) -> None:
        self.store = store
        self.counters = counters
        self.done: list[Token] = []
        self.republish: list[Republished] = []
        self.work = asyncio.Event()
        self.room = asyncio.Event()
        self.room.set()

    async def complete(self, done: list[Token], republish: list[Republished]) -> None:
        """Queues the completes; waits only while MAX_UNCOMPLETED are already queued."""
        await self.room.wait()
        self.done += done
        self.republish += republish
        self.work.set()
        if len(self.done) + len(self.republish) >= MAX_UNCOMPLETED:
            self.room.clear()

    async def run(self) -> None:
        while True:
            await self.work.wait()
            self.work.clear()
            done, republish = self.done, self.republish
            self.done, self.republish = [], []
            self.room.set()
            result = await self.store.call({"op": "complete", "done": done, "republish": republish})
            self.counters[ProcessingHostCounter.ORCHESTRATIONS] += len(republish)
            self.counters[ProcessingHostCounter.LOST_LEASES] += int(result.get("lost", 0))


async def claim_loop(
    host: ProcessingHost, store: MessageBoxClient, sink: SinkClient, completer: Completer
) -> None:
    """Claim → process → deliver → hand over to the completer, until cancelled. The next claim is
    sent before the current batch is processed, so its answer is there when the batch is done."""
    request = {"op": "claim", "max": CLAIM_BATCH, "wait_ms": CLAIM_WAIT_MS}
    next_claim = asyncio.ensure_future(store.call(request))
    while True:
        claimed: list[Claimed] = (await next_claim)["messages"]
        next_claim = asyncio.ensure_future(store.call(request))
        if not claimed:
            continue
        work = host.process(claimed)
        if work.deliveries:
            await sink.deliver(work.deliveries)
            host.counters[ProcessingHostCounter.SENT] += len(work.deliveries)
        await completer.complete(work.done, work.republish)


async def serve(args: argparse.Namespace) -> None:
    who = f"host {args.index}"
    stop = child.stop_event(args.parent_pid is not None)
    tasks: list[asyncio.Task[None]] = []
    try:
        addresses = args.stores.split(",")
        master = await MessageBoxClient.connect(addresses[0])
        host = ProcessingHost(
            from_rows((await master.call({"op": "subscriptions"}))["subscriptions"]),
            open_slot(args.counters, args.slot),
        )
        master.close()
        for address in addresses:
            completer = Completer(await MessageBoxClient.connect(address), host.counters)
            tasks.append(asyncio.create_task(completer.run()))
            for _ in range(LOOPS_PER_STORE):
                store, sink = await MessageBoxClient.connect(address), await SinkClient.connect(args.sink)
                tasks.append(asyncio.create_task(claim_loop(host, store, sink, completer)))
    except (MessageBoxError, DeliveryFailed, ValueError) as e:
        child.fail(who, str(e))
    child.announce(f"ready host {args.index}")
    stopping = asyncio.create_task(stop.wait())
    finished, _ = await asyncio.wait([stopping, *tasks], return_when=asyncio.FIRST_COMPLETED)
    for task in tasks:
        task.cancel()
    failed = [t for t in finished if t is not stopping and not t.cancelled() and t.exception() is not None]
    if failed:
        child.fail(who, str(failed[0].exception()))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m caplab.systems.msgbus.processing_host", description=__doc__)
    p.add_argument("--index", type=int, default=0)
    p.add_argument("--stores", required=True, help="store servers, HOST:PORT,… (the first is the master)")
    p.add_argument("--sink", required=True, help="the back-end sink, HOST:PORT")
    child.add_common_args(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    child.run_tier(parse_args(argv), serve)


if __name__ == "__main__":
    main()
