"""How a configuration error is told to an operator: the key, the bad value (secrets
masked), what is allowed and where the value came from (file, environment or flag)."""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import BaseModel, SecretStr, ValidationError


def field_of(model: type[BaseModel], section: str, key: str) -> Any:
    """The pydantic field ``section.key`` of ``model``, or None when there is no such field."""
    info = model.model_fields.get(section)
    if info is None or info.annotation is None:
        return None
    return info.annotation.model_fields.get(key)


def _shown(key: str, value: Any) -> str:
    """The bad value as the operator wrote it, with secrets masked."""
    if "password" in key or isinstance(value, SecretStr):
        return "**********"
    if isinstance(value, dict):  # a whole section: its keys only, values may be secrets
        return "{" + ", ".join(f"{k} = ..." for k in value) + "}"
    return repr(value)


def _bounds(model: type[BaseModel], section: str, field: str) -> str:
    """``1 <= x <= 600`` from the field's constraints, or ''."""
    info = field_of(model, section, field)
    if info is None:
        return ""
    low = high = ""
    for c in info.metadata:
        if getattr(c, "ge", None) is not None:
            low = f"{c.ge} <= "
        if getattr(c, "gt", None) is not None:
            low = f"{c.gt} < "
        if getattr(c, "le", None) is not None:
            high = f" <= {c.le}"
        if getattr(c, "lt", None) is not None:
            high = f" < {c.lt}"
    return f"{low}{field}{high}" if low or high else ""


def describe(
    err: ValidationError, source: str, origins: dict[tuple[str, str], str], model: type[BaseModel]
) -> str:
    """One line per error: the key, what is wrong, what is allowed, and where it came from."""
    lines = [f"invalid configuration ({source}):"]
    for e in err.errors():
        loc = [str(p) for p in e["loc"]]
        if not loc:  # a rule across sections: its message names the keys
            lines.append("  " + e["msg"].removeprefix("Value error, "))
            continue
        key = ".".join(loc)
        where = next(
            (o for (sec, k), o in origins.items() if [sec, k][: len(loc)] == loc[:2]), None
        )
        origin = f"; from {where}" if where else ""
        if e["type"] == "extra_forbidden":
            section = model.model_fields[loc[0]].annotation if len(loc) > 1 else model
            allowed = list(section.model_fields) if section is not None else []
            near = difflib.get_close_matches(loc[-1], allowed, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            what = "section" if len(loc) == 1 else "key"
            lines.append(f"  {key}: unknown {what}{hint}{origin}; allowed: {', '.join(allowed)}")
            continue
        msg = e["msg"].removeprefix("Value error, ").replace(" or None", " or unset")
        if e["type"] in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
            bounds = _bounds(model, loc[0], loc[1]) if len(loc) > 1 else ""
            msg = f"out of range; allowed: {bounds}" if bounds else msg
        lines.append(f"  {key}: {msg} (got {_shown(key, e.get('input'))}{origin})")
    return "\n".join(lines)
