"""A selective deploy: the new project as the deployed one plus only the changes the user chose.

``run --only SEL --exclude SEL`` picks among the changes between the two
projects (an object that is added, modified or deleted by its hash); SEL is
an object (``db.schema.name``), a schema (``db.schema``) or a cluster (one
name: the object's cluster on either side). The run then plans from the
deployed project to the *effective* new project: the new project with
every change that was not chosen put back as deployed (a modified object
as its deployed version, an added one left out, a deleted one kept).
Everything downstream is an ordinary run, so the plan equals a fresh deploy
of old + selected changes by construction, and the rules add whatever must
move with the chosen changes.

Two things can make a selection impossible, and both stop the run with exit
2 naming the two objects:

- here, before Spark: an object of the effective project depends on one the
  selection leaves out of it (a selected view reading an excluded new table;
  an excluded, so kept, view reading a table a selected change deletes);
- after the plan (``excluded_moved``): the rules would redeploy, drop or
  recreate an object whose change was excluded (it sits in a schema the
  selection swaps, say); the message names the selected change its decision
  comes from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError
from ..model import KEY
from ..typed_names import ambiguous, not_found, parts_of, suffix_matches
from .snapshot import Document


@dataclass(frozen=True)
class Change:
    key: tuple[str, str, str]
    change: str          # added | modified | deleted
    selected: bool
    because: str         # "--only public", "--exclude materialize.public.x", "not named by --only"

    def row(self) -> dict:
        return {**dict(zip(KEY, self.key)), "change": self.change, "selected": self.selected, "because": self.because}


@dataclass(frozen=True)
class Selection:
    """What ``--only`` and ``--exclude`` chose, and the project they make."""

    only: tuple[str, ...]
    exclude: tuple[str, ...]
    changes: tuple[Change, ...]
    new: Document = field(repr=False)   # the effective new project: the deployed one plus the selected changes

    @property
    def excluded(self) -> dict[tuple[str, str, str], Change]:
        return {c.key: c for c in self.changes if not c.selected}

    def text(self) -> str:
        return " ".join([*(f"--only {s}" for s in self.only), *(f"--exclude {s}" for s in self.exclude)])


def changes(old: Document, new: Document) -> dict[tuple, str]:
    """Key -> added | modified | deleted, by hash (as ``changeset.diff.changed_stmt`` computes it on Spark)."""
    old_hash = {tuple(o[:3]): o[4] for o in old.objects}
    new_hash = {tuple(o[:3]): o[4] for o in new.objects}
    found = {}
    for key in sorted(old_hash.keys() | new_hash.keys()):
        before, after = old_hash.get(key, _ABSENT), new_hash.get(key, _ABSENT)
        if before is _ABSENT and after is not None:
            found[key] = "added"
        elif after is _ABSENT and before is not None:
            found[key] = "deleted"
        elif before not in (_ABSENT, None) and after not in (_ABSENT, None) and before != after:
            found[key] = "modified"
    return found


_ABSENT = object()


def select(old: Document, new: Document, only: list[str], exclude: list[str], reads=None) -> Selection:
    """The selection's changes and effective project; ``reads(row)`` gives the relations an object's SQL reads
    (for objects that declare no dependencies). Raises InputError for a selector that names nothing, or for
    an effective project that is not whole."""
    diff = changes(old, new)
    clusters = _clusters(old, new)
    targets = {(flag, selector): _target(flag, selector, clusters)
               for flag, selectors in (("--only", only), ("--exclude", exclude)) for selector in selectors}
    chosen = []
    for key, change in diff.items():
        named = [s for s in only if _matches(targets["--only", s], key, clusters[key])]
        dropped = [s for s in exclude if _matches(targets["--exclude", s], key, clusters[key])]
        if dropped:
            chosen.append(Change(key, change, False, f"--exclude {dropped[0]}"))
        elif only and not named:
            chosen.append(Change(key, change, False, "not named by --only"))
        else:
            chosen.append(Change(key, change, True, f"--only {named[0]}" if named else "every change"))
    selection = Selection(tuple(only), tuple(exclude), tuple(chosen), _effective(old, new, chosen))
    _check_whole(selection, reads)
    return selection


def _clusters(old: Document, new: Document) -> dict[tuple, tuple[str, ...]]:
    """Every object of either project -> the clusters it (or an index of it) uses on either side."""
    found: dict[tuple, set] = {}
    for document in (old, new):
        for o in document.objects:
            found.setdefault(tuple(o[:3]), set()).update([o[5]] if o[5] else [])
        for i in document.indexes:
            found.setdefault(tuple(i[:3]), set()).update([i[4]] if i[4] else [])
    return {key: tuple(sorted(c)) for key, c in found.items()}


def _target(flag: str, selector: str, clusters: dict[tuple, tuple[str, ...]]) -> tuple[str, tuple]:
    """What a selector names: ``("object", key)``, ``("schema", (db, schema))`` or ``("cluster", (name,))``.
    A whole name first (a cluster's is one part, a schema's two, an object's three), else an unambiguous
    suffix of an object's or a schema's name (``customers``, ``public.customers``)."""
    parts = parts_of(selector)
    known = {"object": set(clusters), "schema": {key[:2] for key in clusters},
             "cluster": {(c,) for used in clusters.values() for c in used}}
    whole = {1: "cluster", 2: "schema", 3: "object"}.get(len(parts))
    if whole and parts in known[whole]:
        return whole, parts
    found = [(kind, name) for kind in ("object", "schema") for name in suffix_matches(parts, known[kind])]
    if len(found) == 1:
        return found[0]
    if found:
        raise InputError(f"{flag} {ambiguous(selector, [name for _, name in found], 'object or schema')}")
    everything = [name for names in known.values() for name in names]
    raise InputError(f"{flag} {not_found(selector, everything, 'object, schema or cluster', 'in either project')}")


def _matches(target: tuple[str, tuple], key: tuple, clusters: tuple[str, ...]) -> bool:
    kind, name = target
    if kind == "object":
        return name == key
    if kind == "schema":
        return name == key[:2]
    return name[0] in clusters


def _effective(old: Document, new: Document, chosen: list[Change]) -> Document:
    """The new project with every change not chosen put back as deployed (the old rows of that object)."""
    back = {c.key for c in chosen if not c.selected}
    mine = lambda rows, keep: [r for r in rows if (tuple(r[:3]) in back) != keep]  # noqa: E731
    restored = {tuple(o[:3]) for o in old.objects} & back
    objects = mine(new.objects, True) + [o for o in old.objects if tuple(o[:3]) in restored]
    return Document(f"{new.path} (selected changes only)", objects,
                    mine(new.dependencies, True) + [d for d in old.dependencies if tuple(d[:3]) in restored],
                    mine(new.indexes, True) + [i for i in old.indexes if tuple(i[:3]) in restored],
                    converted=new.converted, unit_tests=new.unit_tests, clusters=new.clusters)


def _check_whole(selection: Selection, reads) -> None:
    """No object of the effective project depends on an object the selection left out of it (exit 2)."""
    effective = selection.new
    present = {tuple(o[:3]) for o in effective.objects}
    changed = {c.key: c for c in selection.changes}
    declared: dict[tuple, list] = {}
    for d in effective.dependencies:
        declared.setdefault(tuple(d[:3]), []).append(tuple(d[3:6]))
    for row in effective.objects:
        key = tuple(row[:3])
        deps = declared.get(key)
        if deps is None and reads is not None and row[7] is not None and key in changed:
            deps = reads(row)
        for dep in deps or ():
            if dep in present or dep not in changed:
                continue  # there, or never part of a change (the usual missing-dependency check decides)
            missing, mine = changed[dep], changed.get(key)
            if missing.selected:  # a selected deletion under a kept object
                raise InputError(
                    f"selection: {_show(key)} ({_state(mine)}) reads {_show(dep)}, which the selected change "
                    f"{_show(dep)} ({missing.change}, {missing.because}) deletes; select {_show(key)} too, or "
                    f"exclude {_show(dep)}")
            raise InputError(
                f"selection: {_show(key)} ({_state(mine)}) reads {_show(dep)}, an excluded change ({missing.change}, "
                f"{missing.because}) that the deployed project does not have; select {_show(dep)} too, or "
                f"exclude {_show(key)}")


def _state(change: Change | None) -> str:
    if change is None:
        return "unchanged"
    return f"selected change: {change.change}" if change.selected else "excluded change, kept as deployed"


def _show(key) -> str:
    return ".".join(key)
