"""Generated DDL: quoted identifiers and the statement templates of a dialect.

Every identifier is double-quoted with embedded quotes doubled, so a hostile
name such as ``x"; DROP TABLE t; --`` stays one identifier. Templates come
from ``conf/job.yaml`` (``plan.dialects``); their placeholders are filled
with quoted identifiers only.
"""

from __future__ import annotations

import re

from pyspark.sql import Column
from pyspark.sql import functions as F

from ..errors import InputError

KIND_KEYWORDS = {
    "view": "VIEW", "materialized-view": "MATERIALIZED VIEW", "sink": "SINK", "table": "TABLE",
    "source": "SOURCE", "table-from-source": "TABLE", "secret": "SECRET", "connection": "CONNECTION",
}


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quoted(column: Column | str) -> Column:
    """The Spark expression of ``quote``."""
    column = F.col(column) if isinstance(column, str) else column
    return F.concat(F.lit('"'), F.replace(column, F.lit('"'), F.lit('""')), F.lit('"'))


def qualified(*parts: Column | str) -> Column:
    return F.concat_ws(".", *(quoted(p) for p in parts))


def kind_keyword(kind: Column | str) -> Column:
    kind = F.col(kind) if isinstance(kind, str) else kind
    mapping = F.create_map(*(x for k, v in KIND_KEYWORDS.items() for x in (F.lit(k), F.lit(v))))
    return F.element_at(mapping, kind)


class Dialect:
    """Statement templates: ``dialect.render("drop_object", kind=..., object=...)`` with Columns."""

    PLACEHOLDERS = {
        "create_schema": {"schema"}, "create_cluster": {"cluster", "like"}, "swap_schema": {"schema", "staging"},
        "swap_cluster": {"cluster", "staging"}, "drop_schema": {"schema"}, "drop_cluster": {"cluster"},
        "drop_object": {"kind", "object"}, "create_index": {"index", "cluster", "object"},
        "apply_replacement": {"object"}, "repoint_sink": {"sink", "upstream"},
    }

    def __init__(self, name: str, templates: dict[str, str]):
        missing = [t for t in self.PLACEHOLDERS if t not in (templates or {})]
        if missing:
            raise InputError(f"dialect {name}: missing statement template(s) {', '.join(missing)}")
        for template, allowed in self.PLACEHOLDERS.items():
            used = set(re.findall(r"{([^{}]*)}", str(templates[template])))
            if used - allowed:
                raise InputError(f"dialect {name}: template {template} uses unknown placeholder(s) "
                                 f"{', '.join(sorted(used - allowed))} (allowed: {', '.join(sorted(allowed))})")
        self.name, self.templates = name, templates

    @classmethod
    def from_config(cls, config: dict) -> "Dialect":
        plan = config.get("plan") or {}
        name = plan.get("dialect", "materialize")
        dialects = plan.get("dialects") or {}
        if name not in dialects:
            raise InputError(f"plan.dialect {name!r} is not defined under plan.dialects (known: "
                             f"{', '.join(sorted(dialects)) or 'none'})")
        return cls(name, dialects[name])

    def render(self, template: str, **values: Column) -> Column:
        """The template with each ``{placeholder}`` replaced by a Column's value."""
        text = self.templates[template]
        parts: list[Column] = []
        while text:
            start = text.find("{")
            if start < 0:
                parts.append(F.lit(text))
                break
            end = text.index("}", start)
            if start:
                parts.append(F.lit(text[:start]))
            parts.append(values[text[start + 1:end]])
            text = text[end + 1:]
        return F.concat(*parts)
