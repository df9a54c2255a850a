"""Where a problem is in a study file: each key path of the YAML mapped to its line, and the
error that names ``file:line: field``."""

from __future__ import annotations

from typing import Any

import yaml


class SpecError(Exception):
    """A problem in a study file, already formatted as ``file:line: field: message``."""


KeyPath = tuple[str | int, ...]


def line_map(
    node: yaml.Node, path: KeyPath = (), out: dict[KeyPath, int] | None = None
) -> dict[KeyPath, int]:
    """Maps each key path in the YAML document to the 1-based line where it appears."""
    out = {} if out is None else out
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            k = key.value
            out[(*path, k)] = key.start_mark.line + 1
            line_map(value, (*path, k), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            line_map(item, (*path, i), out)
    return out


def line_of(lines: dict[KeyPath, int], loc: KeyPath) -> int:
    while loc not in lines and loc:
        loc = loc[:-1]
    return lines.get(loc, 1)


def raw_at(data: Any, loc: KeyPath) -> Any:
    """The raw YAML value at a validation error's location, or None."""
    for part in loc:
        in_dict = isinstance(data, dict) and part in data
        in_list = isinstance(data, list) and isinstance(part, int) and part < len(data)
        if not (in_dict or in_list):
            return None
        data = data[part]
    return data
