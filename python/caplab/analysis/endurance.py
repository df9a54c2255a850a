"""How long a drive lasts at the rate it is written: the Connexion paper's "log ≈ 30 MB/s →
2.3 TB a day; a 10-DWPD drive lasts at least 5 years", from the write rate measured on the volume
at the recommended load and the class's rating (drive writes per day over its warranty years, or
terabytes written)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

SECONDS_PER_DAY = 86_400
TB = 1e12


@dataclass(frozen=True)
class Endurance:
    volume: str
    write_mb_s: float
    tb_per_day: float
    rated_tbw: float | None
    """Terabytes the device is rated to take: given, or DWPD × its size × 365 × its years."""
    years: float | None
    """How long it lasts at this rate (None: unrated, or nothing written)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def endurance(
    volume: str,
    write_mb_s: float,
    size_bytes: int,
    dwpd: float | None = None,
    rated_years: float | None = None,
    tbw: float | None = None,
) -> Endurance:
    """The volume's write rate as TB a day and the years its rating covers at that rate."""
    tb_per_day = write_mb_s * 1e6 * SECONDS_PER_DAY / TB
    rated = tbw
    if rated is None and dwpd is not None and rated_years is not None:
        rated = dwpd * (size_bytes / TB) * 365 * rated_years
    years = rated / (tb_per_day * 365) if rated is not None and tb_per_day > 0 else None
    return Endurance(volume, write_mb_s, tb_per_day, rated, years)


def endurance_line(e: Endurance) -> str:
    life = (
        f"; rated for {e.rated_tbw:,.0f} TB written, it lasts {e.years:,.1f} years"
        if e.years is not None
        else ""
    )
    return f"{e.volume}: {e.write_mb_s:,.1f} MB/s written → {e.tb_per_day:,.2f} TB a day{life}"
