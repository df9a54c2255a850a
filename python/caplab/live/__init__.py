"""The live view (``--web``): a local page that shows a study or a load as it runs, fed from the
run's own interval stream over server-sent events."""

from caplab.live.observer import LiveObserver, load_finished, load_started
from caplab.live.server import LiveServer

__all__ = ["LiveObserver", "LiveServer", "load_finished", "load_started"]
