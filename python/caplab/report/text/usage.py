"""What a usage profile's users reached at capacity, in words: the actions per user-hour they got
against those the profile offered — a reply's time is added to each user's think time, so users
reach fewer actions than offered, the more so the slower the replies."""

from __future__ import annotations

from caplab import units as u
from caplab.report.model.types import PerUserRow


def reached_share(per_user: PerUserRow) -> float | None:
    """The share of the offered actions the users reached (None when the profile offered none)."""
    offered = per_user["offered_per_hour"]
    return per_user["achieved_per_hour"] / offered if offered > 0 else None


def per_user_note(rows: list[tuple[str, PerUserRow]]) -> str:
    """The note under the per-user table: what the figures are and the lowest share reached."""
    shares = [(label, s) for label, p in rows if (s := reached_share(p)) is not None]
    text = (
        "Actions per user-hour over the confirmation trials at capacity: what the usage profile offered "
        "and what the users reached (completed actions ÷ users). A reply's time adds to each user's "
        "think time, so users reach fewer actions than offered, the fewer the slower the replies."
    )
    if shares:
        label, low = min(shares, key=lambda x: x[1])
        text += f" The lowest share reached: {u.pct(low)} ({label})."
    return text
