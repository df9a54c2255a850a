"""An independent reader for the engine's histograms: HdrHistogram V2 encoding (compressed, as
HdrHistogram log files hold it, or uncompressed; base64), written from the format description so
the tests do not trust the engine to read its own output. Values are microseconds."""

from __future__ import annotations

import base64
import math
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

V2_COOKIE_BASE = 0x1C849303
V2_COMPRESSED_COOKIE_BASE = 0x1C849304
HEADER = struct.Struct(">iiiiqqd")


@dataclass(frozen=True)
class Decoded:
    significant_digits: int
    lowest: int
    highest: int
    counts: dict[int, int]
    """Lowest equivalent value of each non-empty bucket → count."""

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def count_at_least(self, value: int) -> int:
        return sum(n for v, n in self.counts.items() if v >= value)

    def bucket_width(self, value: int) -> int:
        """The width of the bucket holding `value`: the precision the histogram keeps there."""
        sub_bucket_half = (1 << math.ceil(math.log2(2 * 10**self.significant_digits))) // 2
        magnitude = max(0, value.bit_length() - sub_bucket_half.bit_length())
        return 1 << magnitude


def _zigzag_leb128(payload: bytes) -> Iterator[int]:
    i = 0
    while i < len(payload):
        value, shift = 0, 0
        for k in range(9):
            b = payload[i]
            i += 1
            if k == 8:
                value |= b << 56
                break
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        yield (value >> 1) ^ -(value & 1)


def decode(encoded: str) -> Decoded:
    data = base64.b64decode(encoded)
    (cookie,) = struct.unpack_from(">i", data)
    if cookie & ~0xF0 == V2_COMPRESSED_COOKIE_BASE:
        (length,) = struct.unpack_from(">i", data, 4)
        data = zlib.decompress(data[8 : 8 + length])
    cookie, length, offset, digits, lowest, highest, ratio = HEADER.unpack_from(data)
    if cookie & ~0xF0 != V2_COOKIE_BASE:
        raise ValueError(f"not an uncompressed V2 histogram (cookie {cookie:#x})")
    if offset != 0 or ratio != 1.0:
        raise ValueError("normalising offsets and conversion ratios are not used by caplab")
    sub_bucket_half = (1 << math.ceil(math.log2(2 * 10**digits))) // 2
    half_magnitude = sub_bucket_half.bit_length() - 1
    unit_magnitude = lowest.bit_length() - 1
    counts: dict[int, int] = {}
    index = 0
    for n in _zigzag_leb128(data[HEADER.size : HEADER.size + length]):
        if n < 0:
            index += -n
            continue
        if n:
            bucket = (index >> half_magnitude) - 1
            sub = (index & (sub_bucket_half - 1)) + sub_bucket_half
            if bucket < 0:
                sub -= sub_bucket_half
                bucket = 0
            counts[sub << (bucket + unit_magnitude)] = n
        index += 1
    return Decoded(digits, lowest, highest, counts)
