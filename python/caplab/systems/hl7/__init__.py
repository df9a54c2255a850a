"""hl7: an HL7 v2 interface engine shaped like Connexion (seed 002), for caplab's hl7 study.

    sender ─MLLP─▶ receiver ─▶ queue in a database ─▶ worker per channel ─▶ files / MLLP sink
                   (a listener   (SQLite WAL + FULL,    (claim, transform:
                    per channel)  or PostgreSQL)         python-hl7 → JSON, write)

- channels (``--channels 4``): channel n listens for MLLP on base port + n (2575…).
- receiver (receiver.py): reads each message's header, commits groups of messages to the queue
  and only then acknowledges each: AA (new or duplicate control id), AE (malformed: counted and
  kept in the rejected table).
- queue (queue.py): a ``messages`` table, each step a state change (queued → transforming →
  transformed → written), indexed by control id, patient id, received time and state.
- workers (worker.py): one process per channel; transform (transform.py) and write
  (writers.py: a file per message named by its control id, or MLLP to ``--sink``). Every
  acknowledged message is written exactly once, also across a killed worker or engine.
- supervisor (supervisor.py): starts and restarts them, serves ``/metrics`` (metrics.py).

``python -m caplab.systems.hl7 template --kind adt`` writes a request body for ``caplab load
tcp://127.0.0.1:2575 --framing mllp --template --body-file FILE``; see cli.py for every command and
settings.py for where the files go. ROLES names the engine's processes for caplab's role collector.
"""

from caplab.systems.hl7.api import RunningHl7, start
from caplab.systems.hl7.supervisor import ROLES

__all__ = ["ROLES", "RunningHl7", "start"]
