"""Drive wear of a configuration: each rated volume at the rate the configuration wrote it."""

from __future__ import annotations

from caplab.analysis.endurance import endurance
from caplab.report.model.types import CellResult, EnduranceRow


def endurance_rows(cell: CellResult | None) -> list[EnduranceRow]:
    """Each rated volume of ``cell`` at the rate the cell wrote it."""
    if cell is None:
        return []
    rows: list[EnduranceRow] = []
    for name, rating in cell["ratings"].items():
        use = cell["volumes"].get(name)
        written = use["write_mb_s"] if use else None
        if written is None:
            continue
        e = endurance(name, written, rating["size"], rating["dwpd"], rating["years"], rating["tbw"])
        rows.append(
            {
                "volume": e.volume,
                "write_mb_s": e.write_mb_s,
                "tb_per_day": e.tb_per_day,
                "rated_tbw": e.rated_tbw,
                "years": e.years,
            }
        )
    return rows
