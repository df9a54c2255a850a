"""The notebook face of the results store: a stored study as pandas DataFrames.

    from caplab import results
    r = results.load("latest")            # or a study id, or a study name; db="postgresql://…"
    r.cells.plot(x="workers", y="throughput")

The frames are built in `caplab.store.frames`; this module keeps the short import path.
"""

from caplab.store.frames import Results, flatten, load, read

__all__ = ["Results", "flatten", "load", "read"]
