"""Why is this object dirty: its derivation chain, read back from a run's tables.

Every derived tuple carries the rule that first derived it, the body fact
that caused it and the round. Following ``cause`` from table to table walks
back, one round at a time, to a seed: a changed statement or a forced
schema. Nothing is recomputed; ``run_relations`` says which table holds each
relation's tuples. Beside the chain, the object's surroundings (schema,
clusters, dependencies, clean or dirty), its operations in the plan, and the
plan's decisions about it: each a tuple of the strategy's rules
(``plan_decisions``), whose chain is walked the same way, through the dirty
sets, back to a seed ("why is X staged / swapped / dropped").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..errors import InputError
from ..model import KEY, NO_PLAN, SELECTED_CHANGES, UNITS, facts_table
from .fact_text import Fact, parse_fact, show_name
from ..typed_names import ambiguous, not_found, parts_of, suffix_matches
from .run_tables import RunTables

NOT_KEYS = {"run_id", "kind", "change", "tool_id", "rule", "cause", "round"}  # detail and provenance columns
DIRTY_TABLES = {"object": "dirty_stmts", "cluster": "dirty_clusters", "schema": "dirty_schemas"}
DECISIONS = "plan_decisions"
OBJECT_DECISIONS = "decisions"  # one row per object, schema and cluster
DECISION_KEYS = {3: ("database", "schema", "name"), 2: ("database", "schema"), 1: ("cluster",)}  # by parts


class BrokenChain(RuntimeError):
    """A cause that its table does not hold: the run's tables disagree (exit 1)."""


@dataclass
class Link:
    """One fact of the chain: derived (with rule, cause, round) or the seed it ends at."""

    fact: str
    relation: str
    table: str | None
    round: int | None = None
    rule: str | None = None
    cause: str | None = None
    seed: bool = False
    change: str | None = None   # of a changed statement
    written: bool = True        # False: a derived relation the run does not write; the chain stops here
    reason: str | None = None   # a plan decision's reason, as the plan row gives it


@dataclass
class Neighbour:
    """Something the target's dirtiness may come from, and its state."""

    role: str                   # itself | schema | cluster | index | depends on | used by | holds
    name: str
    state: str                  # dirty | clean | changed (how) | unchanged
    rule: str | None = None
    round: int | None = None
    note: str | None = None


@dataclass
class Explanation:
    run_id: str
    rules: str | None
    target: str                 # the fact text, e.g. DirtyStmt(db.s.x)
    kind: str                   # object | cluster | schema
    name: str
    dirty: bool
    change: str | None = None   # added | modified | deleted, for a changed statement
    chain: list[Link] = field(default_factory=list)
    surroundings: list[Neighbour] = field(default_factory=list)
    plan: list[dict] = field(default_factory=list)
    decisions: list[dict] = field(default_factory=list)  # the plan's decisions about it: relation, rule, reason
    decision_chain: list[Link] = field(default_factory=list)  # why the first of them holds
    decision: dict | None = None  # its row of the decisions table: decision, relation, rule, reason, steps
    selection: str | None = None  # a selective run's word on it: selected, excluded, or which change pulled it in
    strategy: str | None = None   # the run's plan strategy (none: it planned no DDL)
    # an object's units since the run this one started from: {"run": id, "old": change, "new": change}, a
    # change being added, deleted, edited or None (the same digest)
    since: dict | None = None

    def to_json(self) -> dict:
        return asdict(self)


def explain(tables: RunTables, kind: str, parts: tuple[str, ...], outputs: dict[str, str] | None = None) -> Explanation:
    """The explanation of an object (``kind="object"``, parts db, schema, name), cluster or schema; ``parts``
    may be any unambiguous suffix of its name (``subject``)."""
    relations = _relation_tables(tables, outputs or {})
    table = DIRTY_TABLES[kind]
    relation = next((r for r, t in relations.items() if t == table), None)
    if relation is None:
        raise BrokenChain(f"no relation of run {tables.run_id} is written to {table}")
    parts = subject(tables, kind, show_name(parts))
    target = Fact(relation, _args(kind, parts))
    name = show_name(parts)
    links = chain(tables, relations, target)
    explanation = Explanation(run_id=tables.run_id, rules=tables.run.get("rules"), target=str(target), kind=kind,
                              name=name, dirty=bool(links), chain=links, strategy=tables.run.get("strategy"))
    if kind == "object":
        key = dict(zip(KEY, parts))
        changed = tables.rows(facts_table("ChangedStmt"), **key)
        explanation.change = changed[0]["change"] if changed else None
        explanation.since = _since(tables, key)
        index_rows = tables.rows(facts_table("IndexUsesCluster"), **key)
        explanation.surroundings = _object_surroundings(tables, key, index_rows)
        managed = facts_table("IsApplyManaged")
        if explanation.change and tables.has(managed) and tables.rows(managed, **key):  # mz-deploy's rules say why
            explanation.surroundings.insert(0, Neighbour(
                "itself", name, f"changed ({explanation.change})",
                note="apply-managed (a table, source, connection or secret): under mz-deploy's rules its change "
                     "seeds nothing; mz-deploy's apply creates and alters it"))
        indexes = sorted({r["index_name"] for r in index_rows})
        explanation.plan = sorted(
            _plan_rows(tables, object_type="object", **key)
            + _plan_rows(tables, object_type="index", database=parts[0], schema=parts[1], name=indexes),
            key=lambda op: op["seq"])  # the object's operations and its indexes'
    elif kind == "cluster":
        explanation.surroundings = _cluster_surroundings(tables, parts[0])
        explanation.plan = _plan_rows(tables, object_type="cluster", name=parts[0])
    else:
        explanation.surroundings = _schema_surroundings(tables, parts[0], parts[1])
        explanation.plan = _plan_rows(tables, object_type="schema", database=parts[0], schema=parts[1])
    explanation.decision = _decision(tables, kind, parts)
    decided = _decisions(tables, parts)
    explanation.decisions = [{k: row[k] for k in ("relation", "rule", "cause", "round", "reason")} for row in decided]
    if decided:
        first = Fact(decided[0]["relation"], _args(kind, parts))
        explanation.decision_chain = chain(tables, relations, first)
    if kind == "object":
        explanation.selection = _selection(tables, parts, explanation)
    return explanation


def _selection(tables: RunTables, parts: tuple[str, ...], e: Explanation) -> str | None:
    """In a selective run (``--only``/``--exclude``): whether the object's change was chosen, or, for an object
    the plan moves without a change of its own, the selected change its decision (or dirtiness) comes from."""
    if not tables.has(SELECTED_CHANGES):
        return None
    own = tables.rows(SELECTED_CHANGES, **dict(zip(KEY, parts)))
    if own:
        row = own[0]
        if row["selected"]:
            return f"a selected change ({row['change']}; {row['because']})"
        return f"an excluded change ({row['change']}; {row['because']}): left as deployed"
    moved = e.decision is not None and e.decision["decision"] != "kept"
    if not moved or not tables.read(SELECTED_CHANGES, columns=["name"]).num_rows:
        return None
    seed = next((link for link in reversed(e.decision_chain or e.chain) if link.seed), None)
    if seed is None or not seed.change:
        return f"not a change of its own: in the plan through {seed.fact}" if seed else None
    return f"not a change of its own: pulled in by the selected change {seed.fact.split('(', 1)[1][:-1]} " \
           f"({seed.change})"


def _decisions(tables: RunTables, parts: tuple[str, ...]) -> list[dict]:
    """The plan's decisions about an object (three parts), a schema (two) or a cluster (one), earliest first
    (those that give a reason before those that pass it on through their cause)."""
    if not tables.has(DECISIONS):
        return []  # a run written before the plan was rules
    keys = DECISION_KEYS[len(parts)]
    rows = [r for r in tables.rows(DECISIONS, **dict(zip(keys, parts)))
            if all(r[k] is None for k in ("database", "schema", "name", "cluster") if k not in keys)]
    return sorted(rows, key=lambda r: (r["reason"] is None, r["round"], r["relation"]))


def _decision(tables: RunTables, kind: str, parts: tuple[str, ...]) -> dict | None:
    """The subject's one row of the ``decisions`` table (None for a run written before there was one)."""
    if not tables.has(OBJECT_DECISIONS):
        return None
    names = {"object": KEY, "schema": ("database", "schema"), "cluster": ("name",)}[kind]
    rows = tables.rows(OBJECT_DECISIONS, subject=kind, **dict(zip(names, parts)))
    return {k: rows[0][k] for k in ("decision", "relation", "rule", "reason", "steps")} if rows else None


WIDTH = {"object": len(KEY), "schema": 2, "cluster": 1}  # name parts of a whole name
WHERE = {"object": "in the old or the new project", "schema": "in the old or the new project",
         "cluster": "used by a statement or an index of the new project"}


def subject(tables: RunTables, kind: str, text: str) -> tuple[str, ...]:
    """The object, schema or cluster of the run that ``text`` names: its whole name or any unambiguous suffix
    (``customers``, ``public.customers``), as ``select`` prints names; InputError with the closest names
    when it names none."""
    parts = parts_of(text)
    if len(parts) > WIDTH[kind]:
        raise InputError(f"{text}: {'an' if kind == 'object' else 'a'} {kind} has at most {WIDTH[kind]} name "
                         f"parts ({'DATABASE.SCHEMA.NAME' if kind == 'object' else 'DATABASE.SCHEMA'})")
    found = suffix_matches(parts, _known(tables, kind, parts[-1]))
    if len(found) == 1:
        return found[0]
    if found:
        raise InputError(ambiguous(text, found, kind))
    raise InputError(not_found(text, _known(tables, kind), kind, f"{WHERE[kind]} (run {tables.run_id})"))


def _known(tables: RunTables, kind: str, last: str | None = None) -> list[tuple[str, ...]]:
    """The run's names of ``kind`` (whose last part is ``last``, when given): every object and schema of
    either project, every cluster of the new one."""
    if kind == "cluster":
        where = {"cluster": last} if last is not None else {}
        return sorted({(r["cluster"],) for r in tables.rows(facts_table("ClusterBoundary"), **where)})
    where = ({"name": last} if kind == "object" else {"schema": last}) if last is not None else {}
    columns = list(KEY) if kind == "object" else ["database", "schema"]
    rows = tables.read(facts_table("ObjectInSchema"), columns=columns, **where).to_pylist()
    return sorted({tuple(r[c] for c in columns) for r in rows})


def _args(kind: str, parts: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    return (parts,) if kind == "object" else tuple((p,) for p in parts)


def _relation_tables(tables: RunTables, outputs: dict[str, str]) -> dict[str, str | None]:
    """Relation -> table, as the run recorded it; for runs that predate ``run_relations``, the configuration's."""
    recorded = tables.rows("run_relations") if tables.has("run_relations") else []
    if recorded:
        return {r["relation"]: r["table"] for r in recorded}
    from ..model import BY_NAME

    return {**{name: facts_table(name) for name in BY_NAME}, **outputs}


def chain(tables: RunTables, relations: dict[str, str | None], start: Fact) -> list[Link]:
    chain: list[Link] = []
    fact, seen = start, set()
    while True:
        table = relations.get(fact.relation)
        if table is None:
            if not chain:
                raise BrokenChain(f"{fact.relation} is not written by run {tables.run_id}")
            chain.append(Link(str(fact), fact.relation, None, written=False))
            return chain
        rows = _lookup(tables, table, fact.parts, fact.relation)
        if not rows:
            if chain:
                raise BrokenChain(f"{chain[-1].fact} was caused by {fact}, which {table} does not hold "
                                  f"for run {tables.run_id}")
            return []
        row = rows[0]
        if table.startswith("facts/"):  # a base fact: the seed
            chain.append(Link(str(fact), fact.relation, table, seed=True, change=row.get("change")))
            return chain
        chain.append(Link(str(fact), fact.relation, table, round=row["round"], rule=row["rule"], cause=row["cause"],
                          reason=row.get("reason")))
        seen.add(str(fact))
        fact = parse_fact(row["cause"])
        if str(fact) in seen:
            raise BrokenChain(f"the causes of {start} loop back to {fact} in run {tables.run_id}")


def _lookup(tables: RunTables, table: str, parts: tuple[str, ...], relation: str | None = None) -> list[dict]:
    """The rows of ``table`` whose key columns (all but detail and provenance) are ``parts``; in
    ``plan_decisions``, the rows of ``relation`` whose object, schema or cluster it is."""
    if table == DECISIONS:
        keys = DECISION_KEYS.get(len(parts))
        if keys is None:
            raise BrokenChain(f"{show_name(parts)} is not an object, schema or cluster of {table}")
        return tables.rows(table, relation=relation, **dict(zip(keys, parts)))
    keys = [c for c in tables.columns(table) if c not in NOT_KEYS]
    if len(keys) != len(parts):
        raise BrokenChain(f"{show_name(parts)} does not fit the key columns ({', '.join(keys)}) of {table}")
    return tables.rows(table, **dict(zip(keys, parts)))


SHOWN = 20  # neighbours listed per role; the rest are counted


def _object_surroundings(tables: RunTables, key: dict, index_rows: list[dict]) -> list[Neighbour]:
    found = [_dirty("schema", tables, "dirty_schemas", (key["database"], key["schema"]))]
    for row in tables.rows(facts_table("StmtUsesCluster"), **key):
        found.append(_dirty("cluster", tables, "dirty_clusters", (row["cluster"],)))
    for row in index_rows:
        found.append(_dirty("index", tables, "dirty_clusters", (row["cluster"],),
                            note=f"index {show_name((row['index_name'],))} on cluster {show_name((row['cluster'],))}"))
    dependencies = sorted(tuple(r[c] for c in ("dep_database", "dep_schema", "dep_name"))
                          for r in tables.rows(facts_table("DependsOn"), **key))
    dirty = _keyed(tables.rows("dirty_stmts", name=sorted({d[2] for d in dependencies})))
    replacements = _keyed(tables.rows(facts_table("IsReplacement"), name=sorted({d[2] for d in dependencies})))
    for dep in dependencies[:SHOWN]:
        row = dirty.get(dep)
        note = "replacement: its dependents are not dirtied through it" if dep in replacements else None
        found.append(_neighbour("depends on", dep, row, note))
    if len(dependencies) > SHOWN:
        found.append(Neighbour("depends on", f"{len(dependencies) - SHOWN} more", "not shown"))
    return found


def _cluster_surroundings(tables: RunTables, cluster: str) -> list[Neighbour]:
    users = [(tuple(r[k] for k in KEY), None)
             for r in tables.rows(facts_table("StmtUsesCluster"), cluster=cluster)]
    users += [(tuple(r[k] for k in KEY), r["index_name"])
              for r in tables.rows(facts_table("IndexUsesCluster"), cluster=cluster)]
    users.sort(key=lambda u: (u[0], u[1] or ""))
    changed = _keyed(tables.rows(facts_table("ChangedStmt"), name=sorted({u[0][2] for u in users})))
    sinks = _keyed(tables.rows(facts_table("IsSink"), name=sorted({u[0][2] for u in users})))
    found = []
    for parts, index in users[:SHOWN]:
        row = changed.get(parts)
        note = f"through its index {show_name((index,))}" if index else None
        if parts in sinks:
            note = "; ".join(filter(None, [note, "a sink: never dirties its cluster"]))
        found.append(Neighbour("used by", show_name(parts), f"changed ({row['change']})" if row else "unchanged",
                               note=note))
    if len(users) > SHOWN:
        found.append(Neighbour("used by", f"{len(users) - SHOWN} more", "not shown"))
    return found


def _schema_surroundings(tables: RunTables, database: str, schema: str) -> list[Neighbour]:
    members = sorted(tuple(r[k] for k in KEY)
                     for r in tables.rows(facts_table("ObjectInSchema"), database=database, schema=schema))
    dirty = _keyed(tables.rows("dirty_stmts", database=database, schema=schema))
    listed = sorted(members, key=lambda m: (m not in dirty, m))[:SHOWN]  # dirty ones first
    found = [_neighbour("holds", m, dirty.get(m)) for m in listed]
    if len(members) > SHOWN:
        found.append(Neighbour("holds", f"{len(members) - SHOWN} more", "not shown",
                               note=f"{len(dirty)} of {len(members)} objects dirty"))
    return found


def _dirty(role: str, tables: RunTables, table: str, parts: tuple[str, ...], note: str | None = None) -> Neighbour:
    rows = _lookup(tables, table, parts)
    return _neighbour(role, parts, rows[0] if rows else None, note)


def _neighbour(role: str, parts: tuple[str, ...], row: dict | None, note: str | None = None) -> Neighbour:
    if row is None:
        return Neighbour(role, show_name(parts), "clean", note=note)
    return Neighbour(role, show_name(parts), "dirty", rule=row["rule"], round=row["round"], note=note)


def _keyed(rows: list[dict]) -> dict[tuple[str, ...], dict]:
    return {tuple(r[k] for k in KEY): r for r in rows}


def _plan_rows(tables: RunTables, **where) -> list[dict]:
    if not tables.has("ddl_plan"):
        return []
    rows = tables.rows("ddl_plan", **where)
    return [{k: r.get(k) for k in ("phase", "step", "seq", "action", "statement", "destructive", "verbatim", "reason")}
            for r in sorted(rows, key=lambda r: r["seq"])]  # verbatim and reason: runs since plans met a database


def _since(tables: RunTables, key: dict) -> dict | None:
    """What changed in an object's units (each side's) since the run this one started from; None without one."""
    started_from = tables.run.get("started_from")
    if not started_from or not tables.has(UNITS):
        return None

    def digests(run: RunTables) -> dict[str, bytes]:
        return {r["side"]: r["content"] for r in run.rows(UNITS, **key)}

    now, then = digests(tables), digests(RunTables(tables.out, {"run_id": started_from}))
    changes = {side: (None if now.get(side) == then.get(side) else "added" if side not in then
                      else "deleted" if side not in now else "edited") for side in ("old", "new")}
    return {"run": started_from, "mode": tables.run.get("mode"), "units_changed": tables.run.get("units_changed"),
            **changes}


def _since_line(since: dict) -> str:
    changes = [f"{side} side {change}" for side in ("old", "new") if (change := since[side])]
    taken = ""
    if since.get("mode") == "incremental":  # only restated units, if any: their statements rendered again
        taken = ("; its answer taken from it, its restated statements rendered again" if since.get("units_changed")
                 else "; its answer taken from it: no unit changed")
    return (f"  since run {since['run']} (the run this one started from{taken}): "
            + (", ".join(changes) if changes else "unchanged"))


def format_text(e: Explanation) -> str:
    """The explanation as a few aligned lines for a terminal."""
    lines = [f"{e.kind} {e.name} is {'dirty' if e.dirty else 'not dirty'} in run {e.run_id} (rules: {e.rules})"]
    if e.decision:
        d = e.decision
        by = f"{d['relation']}, rule {d['rule']}" if d["relation"] else ""
        rows = f"plan rows {d['steps'].replace(',', ', ')}" if d["steps"] else ""
        detail = "; ".join(part for part in (by, rows, d["reason"]) if part)
        lines.append(f"  decision: {d['decision']}" + (f" ({detail})" if detail else ""))
    if e.selection:
        lines.append(f"  selection: {e.selection}")
    if e.dirty:
        lines += _chain_lines(e.chain)
    elif e.kind == "object":
        lines.append("  not changed" if e.change is None else f"  changed ({e.change})")
    if e.since:
        lines.append(_since_line(e.since))
    if e.surroundings:
        lines.append("around it:")
        width = max(len(n.role) for n in e.surroundings)
        for n in e.surroundings:
            how = f" by rule {n.rule}, round {n.round}" if n.rule else ""
            note = f"  ({n.note})" if n.note else ""
            lines.append(f"  {n.role:<{width}}  {n.name}: {n.state}{how}{note}")
    if e.plan:
        lines.append("in the plan:")
        for op in e.plan:
            mark = ("  [destructive]" if op["destructive"] else "") + ("  [verbatim]" if op.get("verbatim") else "")
            why = f"  (not dirty: {op['reason']})" if op.get("reason") not in (None, "dirty") else ""
            statement = op["statement"] or f"{op.get('action') or 'operation'} (no statement: the snapshot has no SQL)"
            lines.append(f"  {op['seq']:>4}  {op['phase']} step {op['step']}: {statement}{mark}{why}")
    elif e.strategy == NO_PLAN:
        lines.append("in the plan: the run planned no DDL (strategy none); `dirtiness select` lists what to build")
    elif e.dirty:
        lines.append("in the plan: no operation of its own")
    if e.decisions:
        lines.append("the plan's decisions:")
        for d in e.decisions:
            said = "; ".join(part for part in (d["reason"], meaning(d, e.decision)) if part)
            lines.append(f"  {d['relation']} (rule {d['rule']}, round {d['round']})" + (f": {said}" if said else ""))
        lines.append(f"why {e.decision_chain[0].fact}:" if e.decision_chain else "why: (not recorded)")
        lines += _chain_lines(e.decision_chain)
    return "\n".join(lines)


# What a tuple of the plan's rules means for the object it names (conf/rules/plan_*.dl), so that the decisions
# read as one story: a staged object's deployed copy is "Removed" too, by the swap that puts the new one in.
_MEANINGS = {
    "Redeployed": "to be created again",
    "Staged": "created again in a staging copy of its schema, which the swap puts in production",
    "ReplacedInPlace": "created as a replacement beside production and applied in place (it keeps its identity)",
    "CreatedInProduction": "created in production, outside the swapped schemas",
    "Gone": "the new project no longer has it: dropped",
    "DroppedInCleanup": "dropped by the cleanup, after the swap",
    "SinkRedeployed": "a sink: handled after the swap",
    "SinkRecreated": "dropped before the swap and created again after it",
    "SinkRepointed": "pointed at the new copies of what it reads after the swap (it keeps its identity)",
    "SinkDropped": "dropped before the swap",
    "Dropped": "dropped by the teardown",
    "Created": "created by the setup",
}


def meaning(decision: dict, final: dict | None) -> str | None:
    """What one of the plan's tuples about an object means, told against its final decision."""
    relation, cause = decision["relation"], decision.get("cause") or ""
    if relation == "Removed":
        staying = final is not None and final["decision"] not in ("dropped", "kept")
        if cause.startswith(("Swapped(", "DirtyCluster(")):
            what = "schema" if cause.startswith("Swapped(") else "cluster"
            inside = cause.split("(", 1)[1].rstrip(")").replace(", ", ".")
            leaves = f"the deployed copy leaves production with its {what} {inside}, which the swap takes out"
            return leaves + ("; the new copy takes its place" if staying else ", and is dropped with it")
        return "the deployed copy is dropped"
    if relation == "Dropped" and final is not None and final["decision"] == "dropped and created again":
        return "dropped by the teardown, then created again by the setup"
    return _MEANINGS.get(relation)


def _chain_lines(chain: list[Link]) -> list[str]:
    if not chain:
        return []
    width = max(len(link.fact) for link in chain)
    rule_width = max([len(link.rule or "") for link in chain] + [4])
    lines = [f"  {'round':<7} {'fact':<{width}}  {'rule':<{rule_width}}  cause"]
    for link in chain:
        round_ = f"plan {link.round}" if link.table == DECISIONS else str(link.round)  # the strategy's rules
        if link.seed:
            lines.append(f"  {'seed':<7} {link.fact:<{width}}  {link.change or 'base fact'}")
        elif not link.written:
            lines.append(f"  {'':<7} {link.fact:<{width}}  (not written by this run: add {link.relation} to "
                         f"`outputs` in the configuration to follow it further)")
        else:
            lines.append(f"  {round_:<7} {link.fact:<{width}}  {link.rule:<{rule_width}}  {link.cause}")
    return lines
