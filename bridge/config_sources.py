"""Where configuration values come from (file, ``ZK_BRIDGE__SECTION__KEY`` environment
variables, flags) and how an error is told to an operator: the key, the bad value (secrets
masked), what is allowed and where the value came from."""

from __future__ import annotations

import difflib
import json
from typing import Any, get_origin

from pydantic import BaseModel, SecretStr, ValidationError

ENV_PREFIX = "ZK_BRIDGE__"


class ConfigError(ValueError):
    """The configuration is invalid; the message lists every bad key."""


def field_of(model: type[BaseModel], section: str, key: str) -> Any:
    """The pydantic field ``section.key`` of ``model``, or None when there is no such field."""
    info = model.model_fields.get(section)
    if info is None or info.annotation is None:
        return None
    return info.annotation.model_fields.get(key)


Origins = dict[tuple[str, str], str]


def _is_list(model: type[BaseModel], section: str, key: str) -> bool:
    info = field_of(model, section, key)
    return info is not None and get_origin(info.annotation) is list


def env_overrides(
    model: type[BaseModel], environ: dict[str, str], origins: Origins
) -> dict[str, Any]:
    """``ZK_BRIDGE__SECTION__KEY=value`` pairs; list keys take a JSON list (``["a", "b"]``)."""
    out: dict[str, Any] = {}
    for name, value in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX):
            continue
        parts = name[len(ENV_PREFIX) :].lower().split("__")
        if len(parts) != 2 or not all(parts):
            raise ConfigError(
                f"environment variable {name}: expected {ENV_PREFIX}SECTION__KEY, "
                f"e.g. {ENV_PREFIX}ZOOKEEPER__CONNECT; sections: {', '.join(model.model_fields)}"
            )
        parsed: Any = value
        if _is_list(model, parts[0], parts[1]):
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ConfigError(
                    f"environment variable {name}: {parts[0]}.{parts[1]} is a list, expected "
                    f'JSON like ["a", "b"] ({exc})'
                ) from None
        out.setdefault(parts[0], {})[parts[1]] = parsed
        origins[(parts[0], parts[1])] = f"environment variable {name}"
    return out


def merge(base: dict[str, Any], extra: dict[str, Any], origins: Origins, origin: str) -> None:
    for section, values in extra.items():
        if isinstance(values, dict) and isinstance(base.get(section), dict):
            base[section] = {**base[section], **values}
        else:
            base[section] = values
        if isinstance(values, dict) and origin:
            origins.update({(section, key): origin for key in values})


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


def describe(err: ValidationError, source: str, origins: Origins, model: type[BaseModel]) -> str:
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
