"""Static checks of a rule program, and what evaluation needs from them.

Checks (each error names the file and line): relations are known and used
with one arity; base relations are not redefined; every head variable and
every variable of a negated atom is bound by a positive body atom; negation
is stratified (no relation negates one it depends on through recursion);
every variable has one domain (an object is never joined with a cluster).
The domains of derived relations are inferred from the base relations.
"""

from __future__ import annotations

from dataclasses import dataclass

from .syntax import Program, ProgramError, Rule, is_wildcard


@dataclass(frozen=True)
class CheckedProgram:
    program: Program
    base: dict[str, tuple[str, ...]]      # base relation -> column domains
    derived: dict[str, tuple[str, ...]]   # derived relation -> inferred column domains
    strata: tuple[tuple[str, ...], ...]   # derived relations, lowest stratum first

    @property
    def rules(self) -> tuple[Rule, ...]:
        return self.program.rules

    @property
    def path(self) -> str:
        return self.program.path

    def domains(self, relation: str) -> tuple[str, ...]:
        return self.base.get(relation) or self.derived[relation]

    def rules_of(self, stratum: tuple[str, ...]) -> list[tuple[int, Rule]]:
        return [(i, r) for i, r in enumerate(self.rules) if r.head.relation in stratum]

    def cause_index(self, rule: Rule) -> int:
        """The body atom recorded as the cause of a non-recursive rule.

        The first positive atom over a derived relation (``DirtyCluster(C)``
        rather than ``StmtUsesCluster(O, C)``), so that a chain of causes can
        be followed back to a seed; the first positive atom if all are base.
        """
        positive = [i for i, a in enumerate(rule.body) if not a.negated]
        return next((i for i in positive if rule.body[i].relation in self.derived), positive[0])

    def cause_atoms(self, rule: Rule) -> list[int]:
        """The body atoms a derivation of ``rule`` may record as its cause: each atom of the rule's own
        stratum (read as a round's new tuples), else the one ``cause_index`` picks."""
        stratum = next(s for s in self.strata if rule.head.relation in s)
        recursive = [i for i, a in enumerate(rule.body) if not a.negated and a.relation in stratum]
        return recursive or [self.cause_index(rule)]

    @property
    def inputs(self) -> tuple[str, ...]:
        """The base relations the program reads (its ``.input``)."""
        return tuple(dict.fromkeys(a.relation for r in self.rules for a in r.body if a.relation in self.base))

    @property
    def outputs(self) -> tuple[str, ...]:
        """The relations it derives (its ``.output``), in order of first definition."""
        return self.program.derived

    @property
    def max_arity(self) -> int:
        return max(len(d) for d in (*self.base.values(), *self.derived.values()))


def check_program(program: Program, base: dict[str, tuple[str, ...]]) -> CheckedProgram:
    path = program.path
    derived = program.derived
    arity: dict[str, tuple[int, int]] = {name: (len(d), 0) for name, d in base.items()}
    for rule in program.rules:
        if rule.head.relation in base:
            raise ProgramError(path, rule.line, f"{rule.head.relation} is a base relation and cannot be a rule head")
        for atom in (rule.head, *rule.body):
            if atom.relation not in base and atom.relation not in derived:
                known = ", ".join(sorted((*base, *derived)))
                raise ProgramError(path, rule.line, f"unknown relation {atom.relation} (known: {known})")
            expected = arity.setdefault(atom.relation, (atom.arity, rule.line))
            if expected[0] != atom.arity:
                where = f"line {expected[1]}" if expected[1] else "its declaration"
                raise ProgramError(path, rule.line, f"{atom.relation} has arity {expected[0]} ({where}), "
                                                    f"used here with {atom.arity}")
        _check_safety(path, rule)
    domains = _infer_domains(program, base)
    strata = _stratify(program, set(base))
    checked = CheckedProgram(program=program, base=dict(base), derived=domains, strata=strata)
    for rule in program.rules:
        _check_reason(checked, rule)
    _check_declarations(checked)
    return checked


def _check_declarations(checked: CheckedProgram) -> None:
    """A declared interface is the program's own: ``.input`` every base relation its rules read and no other,
    ``.output`` every relation its rules derive and no other."""
    program = checked.program
    for direction, found, what in (("input", checked.inputs, "reads"), ("output", checked.outputs, "derives")):
        declared = program.declared(direction)
        if declared is None:
            continue
        for relation in declared.relations:
            if relation not in found:
                role = "a relation its rules derive" if relation in checked.derived else (
                    "a base relation" if relation in checked.base else "no relation it knows")
                raise ProgramError(program.path, declared.line,
                                   f".{direction} {relation}: the program never {what.rstrip('s')}s it ({role})")
        for relation in found:
            if relation not in declared.relations:
                line = next(r.line for r in program.rules
                            if relation in (r.head.relation, *(a.relation for a in r.body)))
                raise ProgramError(program.path, line, f"the program {what} {relation}, which its .{direction} "
                                                       f"(line {declared.line}) does not declare")


def _check_reason(checked: CheckedProgram, rule: Rule) -> None:
    """A reason names only variables its cause binds: the reason is written from the cause alone."""
    for var in rule.reason_variables:
        for at in checked.cause_atoms(rule):
            if var not in rule.body[at].variables():
                raise ProgramError(checked.path, rule.line, f"the reason of {rule.label} names {{{var}}}, which its "
                                                            f"cause {rule.body[at]} does not bind")


def _check_safety(path: str, rule: Rule) -> None:
    if not rule.positive:
        raise ProgramError(path, rule.line, "a rule needs at least one positive body atom")
    bound = set().union(*(a.variables() for a in rule.positive))
    for arg in rule.head.args:
        if is_wildcard(arg):
            raise ProgramError(path, rule.line, f"the head {rule.head} may not contain _")
        if arg not in bound:
            raise ProgramError(path, rule.line, f"unsafe rule: head variable {arg} is not bound by a positive body atom")
    for atom in rule.negative:
        for var in sorted(atom.variables() - bound):
            raise ProgramError(path, rule.line, f"unsafe rule: variable {var} of {atom} is not bound by a positive body atom")


def _infer_domains(program: Program, base: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    known: dict[str, list[str | None]] = {r: [None] * len(a.args) for r, a in
                                           ((r.head.relation, r.head) for r in program.rules)}
    changed = True
    while changed:
        changed = False
        for rule in program.rules:
            var_domain = _variable_domains(program.path, rule, base, known)
            for position, var in enumerate(rule.head.args):
                domain = var_domain.get(var)
                current = known[rule.head.relation][position]
                if domain is None:
                    continue
                if current is None:
                    known[rule.head.relation][position] = domain
                    changed = True
                elif current != domain:
                    raise ProgramError(program.path, rule.line,
                                       f"{rule.head.relation} column {position + 1} is a {current} elsewhere, "
                                       f"a {domain} here")
    for rule in program.rules:  # final pass: also checks negated atoms against complete domains
        _variable_domains(program.path, rule, base, known)
    result = {}
    for relation, columns in known.items():
        if None in columns:
            raise ProgramError(program.path, 0, f"cannot infer what column {columns.index(None) + 1} of "
                                                f"{relation} holds: no rule grounds it in a base relation")
        result[relation] = tuple(columns)
    return result


def _variable_domains(path: str, rule: Rule, base, known) -> dict[str, str]:
    found: dict[str, str] = {}
    for atom in rule.body:
        columns = base.get(atom.relation) or known.get(atom.relation)
        for var, domain in zip(atom.args, columns):
            if domain is None:
                continue
            if found.setdefault(var, domain) != domain:
                shown = "_" if is_wildcard(var) else var
                raise ProgramError(path, rule.line, f"variable {shown} is a {found[var]} and a {domain} in {atom}")
    return found


def _stratify(program: Program, base: set[str]) -> tuple[tuple[str, ...], ...]:
    """Order derived relations into strata; reject negation through recursion."""
    derived = program.derived
    edges = {r: set() for r in derived}
    for rule in program.rules:
        edges[rule.head.relation].update(a.relation for a in rule.body if a.relation not in base)
    component = _components(derived, edges)
    for rule in program.rules:
        for atom in rule.negative:
            if atom.relation not in base and component[atom.relation] == component[rule.head.relation]:
                raise ProgramError(program.path, rule.line,
                                   f"negation through recursion: {rule.head.relation} depends on "
                                   f"{atom.relation} recursively, so NOT {atom.relation} is not allowed here")
    level = {r: 0 for r in derived}
    for _ in range(len(derived) + 1):  # longest-path levels over a DAG of components
        for rule in program.rules:
            for atom in rule.body:
                if atom.relation in base:
                    continue
                need = level[atom.relation] + (1 if atom.negated else 0)
                if level[rule.head.relation] < need:
                    level[rule.head.relation] = need
    return tuple(tuple(r for r in derived if level[r] == k) for k in sorted(set(level.values())))


def _components(nodes: tuple[str, ...], edges: dict[str, set[str]]) -> dict[str, int]:
    """Strongly connected components (Tarjan), as node -> component number."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    component: dict[str, int] = {}

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            number = len(set(component.values()))
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component[member] = number
                if member == node:
                    break

    for node in nodes:
        if node not in index:
            visit(node)
    return component

