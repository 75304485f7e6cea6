"""A database dialect: what the database can do, and the templates of the DDL the planner generates.

Defined in ``conf/job.yaml`` under ``plan.dialects``; ``plan.dialect`` picks
one. Templates are filled with double-quoted identifiers only (and ``{kind}``
with a fixed keyword such as ``MATERIALIZED VIEW``, ``{key}`` with an index's
key expressions as its snapshot gives them), on Spark.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F

from ..errors import InputError
from ..wording import noun_for
from ..inputs.references import SqlSettings
from ..model import KINDS
from ..sql.statement import DIALECTS

PLACEHOLDERS = {
    "create_schema": {"schema"}, "swap_schema": {"schema", "staging", "parking"}, "drop_schema": {"schema"},
    "drop_empty_schema": {"schema"},
    "drop_object": {"kind", "object"},
    "create_cluster": {"cluster", "like"}, "swap_cluster": {"cluster", "staging"}, "drop_cluster": {"cluster"},
    "create_index": {"index", "cluster", "object"}, "create_index_on": {"index", "cluster", "object", "key"},
    "apply_replacement": {"object", "replacement"}, "repoint_sink": {"sink", "upstream"},
}
ALWAYS = ("create_schema", "swap_schema", "drop_schema", "drop_empty_schema", "drop_object")
WITH_CLUSTERS = ("create_cluster", "swap_cluster", "drop_cluster", "create_index")
CAPABILITIES = {"parser", "clusters", "in_place_replacement", "transactional_ddl", "qualify_schemas", "kinds",
                "max_identifier_length", "system_schemas"}


@dataclass(frozen=True)
class Dialect:
    name: str
    templates: dict[str, str]
    parser: str = "materialize"          # the sqlglot dialect statements are parsed and written in
    clusters: bool = True                # has clusters: staged and swapped like schemas
    in_place_replacement: bool = True    # APPLY REPLACEMENT keeps a materialized view's identity
    transactional_ddl: bool = False      # DDL runs inside transactions (apply: a swap step is one)
    qualify_schemas: bool = True         # a schema name carries its database: "db"."schema"
    kinds: tuple[str, ...] = KINDS       # the kinds of objects the database has
    max_identifier_length: int | None = None  # longer generated names are refused, not truncated
    system_schemas: tuple[str, ...] = ()  # the database's catalogs: read, never depended on

    @classmethod
    def from_config(cls, config: dict) -> "Dialect":
        plan = config.get("plan") or {}
        name = plan.get("dialect", "materialize")
        dialects = plan.get("dialects") or {}
        if name not in dialects:
            raise InputError(f"plan.dialect {name!r} is not defined under plan.dialects (known: "
                             f"{', '.join(sorted(dialects)) or 'none'})")
        return cls.parse(name, dialects[name] or {})

    @classmethod
    def parse(cls, name: str, settings: dict) -> "Dialect":
        where = f"plan.dialects.{name}"
        options = {k: v for k, v in settings.items() if k in CAPABILITIES}
        templates = {k: v for k, v in settings.items() if k not in CAPABILITIES}
        unknown = sorted(set(templates) - set(PLACEHOLDERS))
        if unknown:
            raise InputError(f"{where}: unknown {noun_for(len(unknown), 'setting')} {', '.join(unknown)}")
        if options.get("parser", "materialize") not in DIALECTS:
            raise InputError(f"{where}.parser: expected one of {', '.join(DIALECTS)}, not {options['parser']!r}")
        kinds = options.get("kinds", "all")
        options["kinds"] = KINDS if kinds == "all" else tuple(kinds or ())
        if set(options["kinds"]) - set(KINDS):
            raise InputError(f"{where}.kinds: unknown {noun_for(len(set(options['kinds']) - set(KINDS)), 'kind')} "
                             f"{', '.join(sorted(set(options['kinds']) - set(KINDS)))}")
        schemas = options.get("system_schemas") or ()
        if not isinstance(schemas, (list, tuple)) or not all(isinstance(v, str) and v for v in schemas):
            raise InputError(f"{where}.system_schemas: expected a list of schema names")
        options["system_schemas"] = tuple(schemas)
        dialect = cls(name=name, templates=templates, **options)
        needed = [*ALWAYS, *(WITH_CLUSTERS if dialect.clusters else ()),
                  *(("apply_replacement",) if dialect.in_place_replacement else ()),
                  *(("repoint_sink",) if "sink" in dialect.kinds else ())]
        missing = [t for t in needed if not templates.get(t)]
        if missing:
            raise InputError(f"{where}: missing statement {noun_for(len(missing), 'template')} {', '.join(missing)}")
        for template, text in templates.items():
            used = set(re.findall(r"{([^{}]*)}", str(text)))
            if used - PLACEHOLDERS[template]:
                raise InputError(f"{where}: template {template} uses unknown "
                                 f"{noun_for(len(used - PLACEHOLDERS[template]), 'placeholder')} "
                                 f"{', '.join(sorted(used - PLACEHOLDERS[template]))} "
                                 f"(allowed: {', '.join(sorted(PLACEHOLDERS[template]))})")
        return dialect

    def sql_settings(self, config: dict) -> SqlSettings:
        """How the job reads SQL in this dialect (``sql`` section of the configuration)."""
        sql = config.get("sql") or {}
        mismatch = sql.get("dependency_mismatch", "error")
        if mismatch not in ("error", "warn"):
            raise InputError(f"sql.dependency_mismatch: expected error or warn, not {mismatch!r}")
        verbatim = tuple(sql.get("verbatim_kinds") or ())
        if set(verbatim) - set(KINDS):
            raise InputError(f"sql.verbatim_kinds: unknown {noun_for(len(set(verbatim) - set(KINDS)), 'kind')} "
                             f"{', '.join(sorted(set(verbatim) - set(KINDS)))}")
        return SqlSettings(dialect=self.parser, verbatim_kinds=verbatim, mismatch=mismatch,
                           kinds=None if set(self.kinds) == set(KINDS) else self.kinds,
                           clusters=self.clusters, indexes=self.clusters, system_schemas=self.system_schemas)

    def index_statement(self, **values: Column) -> Column:
        """What creates an index (of a frame with a ``key`` column): ``create_index_on`` with its key where
        it has one and the dialect that template, else ``create_index`` (a default index)."""
        default = self.render("create_index", **values)
        if not self.templates.get("create_index_on"):
            return default
        keyed = self.render("create_index_on", key=F.col("key"), **values)
        return F.when(F.col("key").isNotNull(), keyed).otherwise(default)

    def render(self, template: str, **values: Column) -> Column:
        """The template with each ``{placeholder}`` replaced by a Column's value."""
        parts: list[Column] = []
        for literal, field, _, _ in string.Formatter().parse(self.templates[template]):
            if literal:
                parts.append(F.lit(literal))
            if field is not None:
                parts.append(values[field])
        return F.concat(*parts)

