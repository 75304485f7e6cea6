"""sqlglot's Materialize dialect, extended with the statements a deploy needs.

sqlglot parses Materialize's plain views, but falls back to an opaque
``Command`` for the statements below. This dialect parses them into trees
whose names, references and clusters can be read and rewritten:

- ``CREATE [REPLACEMENT] MATERIALIZED VIEW name [FOR target] [(cols)]
  [IN CLUSTER c] [WITH (...)] AS query``: an ``exp.Create`` with the
  properties ``Replacement``, ``ReplacementFor`` and ``InCluster``;
- ``CREATE [DEFAULT] INDEX [name] [IN CLUSTER c] ON item [USING m] [(exprs)]``:
  ``Index``;
- ``CREATE CLUSTER [IF NOT EXISTS] name [(] options [)] [WITH (...)]``
  (an mz-deploy project's ``clusters/<name>.sql``): ``ClusterDefinition``,
  the name and the rest as written, with or without parentheses (comments
  left out);
- ``CREATE SINK | SOURCE | CONNECTION | SECRET [IF NOT EXISTS] name
  [IN CLUSTER c] ...`` and ``CREATE TABLE name FROM SOURCE src ...``:
  ``CatalogObject``. Their options (``INTO KAFKA ...``, ``FORMAT ...``) are
  kept as the original text; the items they name (``FROM item`` of a sink,
  ``FROM SOURCE src``, and every ``CONNECTION c``, ``SECRET s``,
  ``SSH TUNNEL c``, ``AWS PRIVATELINK c``) are parsed as tables, so they are
  references like any other.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.materialize import Materialize
from sqlglot.generators.materialize import MaterializeGenerator
from sqlglot.parsers.materialize import MaterializeParser
from sqlglot.tokens import TokenType

CATALOG_KINDS = ("SINK", "SOURCE", "CONNECTION", "SECRET")
# Words in a catalog object's options that are followed by the name of another item.
REFERENCE_WORDS = (("CONNECTION",), ("SECRET",), ("SSH", "TUNNEL"), ("AWS", "PRIVATELINK"))


class InCluster(exp.Property):
    """``IN CLUSTER c``: the cluster a statement runs on."""

    arg_types = {"this": True}


class Replacement(exp.Property):
    """``REPLACEMENT`` in ``CREATE REPLACEMENT MATERIALIZED VIEW``."""

    arg_types: dict = {}


class ReplacementFor(exp.Property):
    """``FOR target``: the production materialized view a replacement is for."""

    arg_types = {"this": True}


class WithOptions(exp.Property):
    """``WITH (...)`` of a materialized view (``RETAIN HISTORY FOR ...``, ``ASSERT NOT NULL ...``),
    kept as the original text."""

    arg_types = {"this": True}


class Index(exp.Expression):
    """``CREATE [DEFAULT] INDEX [name] [IN CLUSTER c] ON item [USING m] [(exprs)]``."""

    arg_types = {"this": False, "default": False, "cluster": False, "table": True, "using": False,
                 "expressions": False}


class CatalogObject(exp.Expression):
    """A sink, source, connection, secret or table from a source: name, cluster, the item it
    reads (``FROM``), and its options as original text with the items they name as tables."""

    arg_types = {"kind": True, "this": True, "exists": False, "cluster": False, "source": False,
                 "options": False}


class ClusterDefinition(exp.Expression):
    """``CREATE CLUSTER [IF NOT EXISTS] name ...``: its name, and everything after it as written (its options,
    in parentheses or not; ``REPLICAS (...)``; ``WITH (...)``), comments left out."""

    arg_types = {"this": True, "exists": False, "options": False}


class Parser(MaterializeParser):
    PROPERTY_PARSERS = {
        **MaterializeParser.PROPERTY_PARSERS,
        "IN": lambda self: self._parse_in_cluster_property(),
        "REPLACEMENT": lambda self: self.expression(Replacement()),
        "FOR": lambda self: self.expression(ReplacementFor(this=self._parse_table_parts(schema=True))),
        "WITH": lambda self: self._parse_with_options(),
    }

    def _parse_with_options(self) -> exp.Expr | None:
        if not self._match(TokenType.L_PAREN, advance=False):
            return MaterializeParser.PROPERTY_PARSERS["WITH"](self)
        start, depth = self._curr.start, 0
        while self._curr:
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(self._curr.token_type, 0)
            self._advance()
            if depth == 0:
                break
        return self.expression(WithOptions(this=exp.var(self.sql[start:self._prev.end + 1])))

    def _parse_in_cluster_property(self) -> InCluster | None:
        if self._match_text_seq("CLUSTER"):
            return self.expression(InCluster(this=self._parse_id_var(any_token=False)))
        self._retreat(self._index - 1)  # the IN of something else: not a property
        return None

    def _parse_in_cluster(self) -> exp.Expr | None:
        return self._parse_id_var(any_token=False) if self._match_text_seq("IN", "CLUSTER") else None

    def _parse_create(self):
        if self._match_text_seq("DEFAULT", "INDEX"):
            return self._parse_index_statement(default=True)
        if self._match(TokenType.INDEX):
            return self._parse_index_statement(default=False)
        for kind in CATALOG_KINDS:
            if self._match_text_seq(kind):
                return self._parse_catalog_object(kind)
        if self._curr and self._curr.text.upper() == "CLUSTER" and not (
                self._next and self._next.text.upper() == "REPLICA"):
            self._advance()
            return self._parse_cluster_definition()
        index = self._index
        if self._match(TokenType.TABLE):
            table = self._parse_table_parts(schema=True)
            if self._match_text_seq("FROM", "SOURCE"):
                return self._parse_catalog_object("TABLE", name=table)
            self._retreat(index)
        return super()._parse_create()

    def _parse_cluster_definition(self) -> ClusterDefinition:
        exists = self._parse_exists(not_=True)
        name = self._parse_id_var(any_token=False)
        pieces: list[str] = []
        while self._curr:  # the tokens as written, so comments fall away and quoted text stays exact
            text = self.sql[self._curr.start:self._curr.end + 1]
            tight = not pieces or pieces[-1].endswith("(") or text in (")", ",")
            pieces.append(text if tight else " " + text)
            self._advance()
        return self.expression(ClusterDefinition(this=name, exists=exists, options=exp.var("".join(pieces))))

    def _parse_index_statement(self, default: bool) -> Index:
        name = None
        if not (self._curr and self._curr.text.upper() in ("IN", "ON")):
            name = self._parse_id_var(any_token=False)
        cluster = self._parse_in_cluster()
        if not self._match(TokenType.ON):
            self.raise_error("Expected ON in CREATE INDEX")
        table = self._parse_table_parts(schema=True)
        using = self._parse_id_var(any_token=False) if self._match(TokenType.USING) else None
        expressions = self._parse_wrapped_csv(self._parse_assignment, optional=True)
        return self.expression(Index(this=name, default=default, cluster=cluster, table=table, using=using,
                                     expressions=expressions))

    def _parse_catalog_object(self, kind: str, name: exp.Expr | None = None) -> CatalogObject:
        exists = None
        source = None
        if name is None:
            exists = self._parse_exists(not_=True)
            name = self._parse_table_parts(schema=True)
        else:
            source = self._parse_table_parts(schema=True)  # CREATE TABLE t FROM SOURCE <source>
        cluster = self._parse_in_cluster()
        if kind == "SINK":
            if not self._match(TokenType.FROM):
                self.raise_error("Expected FROM in CREATE SINK")
            source = self._parse_table_parts(schema=True)
        return self.expression(CatalogObject(kind=kind, this=name, exists=exists, cluster=cluster, source=source,
                                             options=self._parse_options()))

    def _parse_options(self) -> list[exp.Expr]:
        """The rest of the statement: original text, with every referenced item parsed as a table."""
        parts: list[exp.Expr] = []
        start = self._curr.start if self._curr else None
        while self._curr:
            words = next((w for w in REFERENCE_WORDS if self._match_text_seq(*w)), None)
            if words is None:
                self._advance()
            elif self._curr and self._curr.token_type in (TokenType.VAR, TokenType.IDENTIFIER):
                parts.append(exp.var(self.sql[start:self._curr.start]))
                parts.append(self._parse_table_parts(schema=True))
                start = self._prev.end + 1
        if start is not None and start < len(self.sql):
            tail = self.sql[start:].rstrip().rstrip(";").rstrip()
            if tail:
                parts.append(exp.var(tail))
        return parts


def _in_cluster(self, expression: InCluster) -> str:
    return f"IN CLUSTER {self.sql(expression, 'this')}"


def _index(self, expression: Index) -> str:
    parts = ["CREATE", "DEFAULT INDEX" if expression.args.get("default") else "INDEX"]
    for key, prefix in (("this", ""), ("cluster", "IN CLUSTER "), ("table", "ON "), ("using", "USING ")):
        if expression.args.get(key):
            parts.append(prefix + self.sql(expression, key))
    if expression.expressions:
        parts.append(f"({self.expressions(expression, flat=True)})")
    return " ".join(parts)


def _catalog_object(self, expression: CatalogObject) -> str:
    kind = expression.args["kind"]
    parts = ["CREATE", kind]
    if expression.args.get("exists"):
        parts.append("IF NOT EXISTS")
    parts.append(self.sql(expression, "this"))
    if kind == "TABLE":
        parts.append("FROM SOURCE " + self.sql(expression, "source"))
    if expression.args.get("cluster"):
        parts.append("IN CLUSTER " + self.sql(expression, "cluster"))
    if kind == "SINK":
        parts.append("FROM " + self.sql(expression, "source"))
    options = "".join(self.sql(p) for p in expression.args.get("options") or [])
    return " ".join(parts) + (" " + options.lstrip() if options.strip() else "")


def _cluster_definition(self, expression: ClusterDefinition) -> str:
    exists = "IF NOT EXISTS " if expression.args.get("exists") else ""
    options = self.sql(expression, "options")
    return f"CREATE CLUSTER {exists}{self.sql(expression, 'this')}" + (f" {options}" if options else "")


class Generator(MaterializeGenerator):
    TRANSFORMS = {
        **MaterializeGenerator.TRANSFORMS,
        ClusterDefinition: _cluster_definition,
        InCluster: _in_cluster,
        Replacement: lambda self, e: "REPLACEMENT",
        ReplacementFor: lambda self, e: f"FOR {self.sql(e, 'this')}",
        WithOptions: lambda self, e: f"WITH {self.sql(e, 'this')}",
        Index: _index,
        CatalogObject: _catalog_object,
    }
    PROPERTIES_LOCATION = {
        **MaterializeGenerator.PROPERTIES_LOCATION,
        InCluster: exp.Properties.Location.POST_SCHEMA,
        Replacement: exp.Properties.Location.POST_CREATE,
        ReplacementFor: exp.Properties.Location.POST_SCHEMA,
        WithOptions: exp.Properties.Location.POST_SCHEMA,
    }


class MaterializeDeploy(Materialize):
    """Materialize, with the deploy statements above parsed instead of kept opaque."""

    Parser = Parser
    Generator = Generator
