"""msgbus: a small but real messaging system shaped like BizTalk Server, for caplab's scale-out study.

    client ─▶ receive ─▶ MessageBox stores ─▶ hosts ─▶ sink
             (TCP u32,   (SQLite WAL, or     (route by       (back end,
              HTTP)       PostgreSQL; 1…M)    subscription)   exactly once)

- receive (``msgbus.receive``): accepts one well-formed XML document per u32 frame or HTTP POST,
  publishes it to store ``n mod M`` in a group commit and acknowledges it once it is durable, with
  the interchange id it assigned: TCP ``OK <id>`` / HTTP 202 ``{"id": <id>}``; refusals are TCP
  ``ERR <reason>`` / HTTP 400 (not well-formed UTF-8 XML) or 422 (no subscriber).
- messagebox (``msgbus.messagebox_server``): one MessageBox server process per MessageBox (a
  "store" in the flags: ``--stores``). Claims are leases that expire, so a host's death loses
  nothing. Store 0 (the master) also holds the subscriptions.
- processing (``msgbus.processing_host``): N processing hosts (``--hosts``; BizTalk's host
  instances), each claiming from every store and routing by message type (the root element).
  Messaging: ``<order>`` → the send port (validate, price, sign, deliver). Orchestration:
  ``<orchestrated-order>`` → the orchestration (validate, credit-check, sign), which republishes an
  ``<approved-order>`` in the same transaction as its complete → the send port. The orchestration
  flow costs about twice the host work and twice the store round trips.
- sink (``msgbus.sink``): the back end; acknowledges every delivery, counts each interchange id once.

Clients send MESSAGING_BODY or ORCHESTRATION_BODY (a 20-line purchase order, ``{seq}`` is the
engine's per-request number), e.g.
``caplab load tcp://127.0.0.1:7400 --framing u32 --body "$MESSAGING_BODY" --template --rate 500``.
The supervisor serves every tier's counters at ``GET /metrics`` (Prometheus text):
``msgbus_documents_received_total``, ``msgbus_documents_processed_total``, ``msgbus_queue_depth``…
Run ``python -m caplab.systems.msgbus --hosts 2 --stores 4`` or ``start(hosts=2, stores=4)``;
ROLES tells caplab's role collector which processes are which tier (roles ``receive``,
``processing``, ``messagebox``, ``sink``: not "host" nor "store", which name the machine and
caplab's results store).
"""

from caplab.systems.msgbus.api import RunningMsgbus, start
from caplab.systems.msgbus.documents import MESSAGING_BODY, ORCHESTRATION_BODY
from caplab.systems.msgbus.supervisor import ROLES, main

__all__ = ["MESSAGING_BODY", "ORCHESTRATION_BODY", "ROLES", "RunningMsgbus", "main", "start"]
