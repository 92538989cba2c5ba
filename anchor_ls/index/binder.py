"""The fast binder: resolves call sites, bases and imports to repository entities.

An abstract interpreter over file summaries. Values are named types (anchor_ls.index.state):
  Module(relpath)             a module ('folder/' for a namespace package)
  Function(relpath, idx)      a function (scope idx of the file), unbound
  BoundMethod(relpath, idx)   a method bound to its receiver (first parameter taken)
  Class(relpath, idx)         a class
  Instance(relpath, idx)      an instance of a class
  SelfInstance(relpath, idx)  `self`: an instance of the class or of a subclass
  Super(relpath, idx)         `super()` inside class idx
  Generator(relpath, idx)     the generator a generator function returns
  Container(frozenset)        a container of values
  Dict(tuple)                 a dict with constant keys: ((key, frozenset), ...)
  DictMethod(dict, method)    `d.get`, `d.pop`, `d.setdefault`, `d.values` of such a dict
  External(dotted)            something outside the repository (stdlib, third party)
Names are looked up flow-sensitively within a scope (the latest binding that
dominates the use, plus the conditional ones after it) and by final state from
nested scopes. Arguments flow into parameters across calls, iterated to a
fixpoint, so callbacks and decorated functions resolve without guessing.

The binder is split along its seams (in the spirit of rust-analyzer's hir crates):
  bind/db.py           the state: program, argument facts, class tables, caches
  bind/definitions.py  what definitions say without evaluation (method kinds, ...)
  bind/values.py       operations on sets of values
  bind/lookup.py       scopes, names and which bindings reach a use
  bind/evaluate.py     expressions, calls' results, parameters, decorators
  bind/classes.py      bases, MROs, attributes, overrides, the class tables
  bind/sites.py        resolution of one file's call sites, bases and imports
  bind/flow.py         argument facts: recorded, compared, retracted
  bind/rounds.py       the rounds of resolution of a build and of an edit
This module puts them together: Binder is the state with the queries the modules
ask of it and the operations the index calls. It never reads files.
"""

from __future__ import annotations

from anchor_ls.index.bind import classes, evaluate, flow, sites
from anchor_ls.index.bind.db import BinderState


class Binder(BinderState):
    """A binder: the state (BinderState) with the modules' functions as its methods."""

    # The queries lower modules ask through the state (see BinderState).
    eval = evaluate.eval
    returns = evaluate.returns
    param_values = evaluate.param_values

    # What the index, the shares of a round and the tests call.
    yields = evaluate.yields
    mro = classes.mro
    subclasses = classes.subclasses
    refresh_classes = classes.refresh_classes
    resolve_file = sites.resolve_file
    passed_now = sites.passed_now
    set_contribution = flow.set_contribution
    forget_contribution = flow.forget_contribution
    results_changed = flow.results_changed
    results = flow.results
    retract = flow.retract
    renumber = flow.renumber
    passers = flow.passers
    scopes_reading = flow.scopes_reading
    scopes_reading_attributes = flow.scopes_reading_attributes
    passed_by_scope = flow.passed_by_scope
    scope_contributions = flow.scope_contributions
    restore_passed = flow.restore_passed
    knows_scopes = flow.knows_scopes
    passed = flow.passed
    adopt = flow.adopt
    warm = sites.warm
    want = sites.want
