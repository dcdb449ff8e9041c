"""The tables of ``diffflow profile``, as souffleprof shows a profile: computed from a profile
(:mod:`.profile_file`) as plain rows, then printed (:mod:`.profile_show`) or put in a page
(:mod:`.profile_html`).

A :class:`Table` has a title, headers, rows of strings and a note.  :func:`summary_tables`
gives the summary: the run, top rules by time, relations by size, recursive strata, the
compiled loops; :func:`rule_tables` and :func:`relation_tables` the detail of one rule or
relation per update step and round (souffleprof's ``rul`` and ``rel`` commands).

>>> from diffflow.datalog.cli.profile_file import new_profile
>>> p = new_profile("a.dl", 1, [{"step": 0, "wall_ns": 2000000, "sizes": {"r": 3}}],
...                 [{"id": 1, "location": "a.dl:3", "text": "r(x) :- e(x).", "relation": "r",
...                   "stratum": None}], [{"name": "r", "location": "a.dl:2", "stratum": None}],
...                 [[0, "rule", 1, -1, 1500000, 3, 3, 2]], [])
>>> top = summary_tables(p)[1]
>>> top.headers[:4], top.rows[0][:4]
(['#', 'time', '%', 'tuples'], ['R1', '1.50 ms', '100.0', '3'])
"""
from __future__ import annotations

from collections import defaultdict

from diffflow.dataflow.origin import one_line

RULE_TEXT = 60  # characters of a rule's text in the summary


class Table:
    """A titled table of strings (``align``: ``"l"`` or ``"r"`` per column)."""

    def __init__(self, title: str, headers: list, rows: list, align: str = "", note: str = ""):
        self.title, self.headers, self.rows, self.note = title, headers, rows, note
        self.align = align or "r" * len(headers)


def duration(ns) -> str:
    """Nanoseconds as a short reading: ``ns``, ``µs``, ``ms`` or ``s``.

    >>> duration(950), duration(1_500), duration(2_500_000), duration(3_210_000_000)
    ('950 ns', '1.50 µs', '2.50 ms', '3.21 s')
    """
    ns = int(ns)
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("µs", 10**3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.2f} {unit}"
    return f"{ns} ns"


def _count(n) -> str:
    return "-" if n is None else f"{int(n):,}"


class _Sums:
    """The activity rows of a profile summed per rule, relation, stratum and round."""

    def __init__(self, profile: dict):
        columns = profile["activity"]["columns"]
        at = {c: i for i, c in enumerate(columns)}
        self.time = defaultdict(int)
        self.tuples = defaultdict(int)
        self.rounds = defaultdict(set)    # (kind, key) -> {(step, round)}
        self.per_round = defaultdict(lambda: [0, 0, 0, 0])  # (kind, key, step, round) -> sums
        self.stratum_rounds = defaultdict(set)
        rules = {r["id"]: r for r in profile["rules"]}
        relations = {r["name"]: r for r in profile["relations"]}
        self.total = 0
        for row in profile["activity"]["rows"]:
            kind, key, step, rnd = row[at["kind"]], row[at["key"]], row[at["step"]], row[at["round"]]
            t = row[at["time_ns"]]
            self.total += t
            self.time[kind, key] += t
            self.tuples[kind, key] += row[at["tuples"]]
            sums = self.per_round[kind, key, step, rnd]
            for j, c in enumerate(("time_ns", "tuples", "rows_in", "calls")):
                sums[j] += row[at[c]]
            if rnd >= 0:
                self.rounds[kind, key].add((step, rnd))
                owner = rules.get(key) if kind == "rule" else relations.get(key)
                stratum = owner and owner.get("stratum")
                if stratum:
                    self.stratum_rounds[stratum].add((step, rnd))
        self.compiled = [dict(zip(profile["compiled"]["columns"], row))
                         for row in profile["compiled"]["rows"]]
        for run in self.compiled:
            self.total += run["time_ns"]
            for rnd in range(run["first_round"], run["last_round"] + 1):
                self.stratum_rounds[run["stratum"]].add((run["step"], rnd))


def _percent(part, total) -> str:
    return f"{100 * part / total:.1f}" if total else "-"


def summary_tables(profile: dict, top: int = 20) -> list:
    """The summary: the run, top ``top`` rules by time, relations by size, recursive strata,
    compiled loops (see the module docstring)."""
    sums = _Sums(profile)
    steps = profile["steps"]
    wall = sum(s["wall_ns"] for s in steps)
    run = Table("Run", ["program", "steps", "wall time", "profiled time", "partitions"],
                [[str(profile.get("program")), str(len(steps)), duration(wall),
                  duration(sums.total), str(profile.get("partitions") or 1)]], align="lrrrr",
                note="profiled time: operator steps and compiled loops, summed over partitions")
    rules = sorted(profile["rules"], key=lambda r: -sums.time["rule", r["id"]])
    rows = []
    for r in rules[:top]:
        key = ("rule", r["id"])
        rounds = len(sums.rounds[key])
        rows.append([f"R{r['id']}", duration(sums.time[key]), _percent(sums.time[key], sums.total),
                     _count(sums.tuples[key]), str(rounds) if r.get("stratum") else "-",
                     r["location"], one_line(r["text"], RULE_TEXT)])
    shown = f"top {min(top, len(rules))} of {len(rules)} rules" if len(rules) > top else \
        f"{len(rules)} rules"
    top_rules = Table(f"Rules by time ({shown})",
                      ["#", "time", "%", "tuples", "rounds", "file:line", "rule"], rows,
                      align="rrrrrll",
                      note="tuples: rows a rule emitted towards its relation (derivations "
                           "before duplicates are removed, and retractions where a negation, "
                           "an aggregate or an update revises them); rounds: rounds of its "
                           "recursive stratum it worked in; `diffflow profile FILE --rule N` "
                           "for one rule")
    sizes = steps[-1]["sizes"] if steps else {}
    rule_time = defaultdict(int)
    for r in profile["rules"]:
        rule_time[r["relation"]] += sums.time["rule", r["id"]]
    relations = sorted(profile["relations"],
                       key=lambda r: (-(sizes.get(r["name"]) or -1),
                                      -sums.tuples["relation", r["name"]], r["name"]))
    derived = {r["relation"] for r in profile["rules"]}
    rel_rows = [[r["name"], _count(sizes.get(r["name"])),
                 _count(sums.tuples["relation", r["name"]]) if r["name"] in derived else "-",
                 duration(sums.time["relation", r["name"]] + rule_time[r["name"]]),
                 _percent(sums.time["relation", r["name"]] + rule_time[r["name"]], sums.total),
                 r.get("stratum") or "-", r["location"]] for r in relations]
    rel_table = Table("Relations by size", ["relation", "tuples", "new", "time", "%", "stratum",
                                            "file:line"], rel_rows, align="lrrrrll",
                      note="tuples: facts after the last step (- when the program does not "
                           "observe the relation: no .output or .printsize); new: facts its rules "
                           "added or removed over all steps (- for an input; rounds run "
                           "compiled are not counted); time: its rules and its own operators")
    tables = [run, top_rules, rel_table]
    strata = sorted({r["stratum"] for r in profile["rules"] + profile["relations"]
                     if r.get("stratum")} | {c["stratum"] for c in sums.compiled})
    if strata:
        srows = []
        for name in strata:
            per_step = defaultdict(int)
            for step, _ in sums.stratum_rounds[name]:
                per_step[step] += 1
            members = [r for r in profile["rules"] if r.get("stratum") == name]
            t = sum(sums.time["rule", r["id"]] for r in members) + sum(
                sums.time["relation", r["name"]] for r in profile["relations"]
                if r.get("stratum") == name)
            runs = [c for c in sums.compiled if c["stratum"] == name]
            t_compiled = sum(c["time_ns"] for c in runs)
            srows.append([name, ", ".join(f"{s}:{n}" for s, n in sorted(per_step.items())) or "-",
                          duration(t + t_compiled), str(len(members)),
                          f"{len(runs)} ({duration(t_compiled)})" if runs else "-"])
        tables.append(Table("Recursive strata", ["stratum", "rounds (step:rounds)", "time",
                                                 "rules", "compiled runs"], srows,
                            align="llrrl",
                            note="`diffflow profile FILE --relation R` for the rounds of one "
                                 "relation"))
    if sums.compiled:
        tables.append(_compiled_table(sums.compiled))
    return tables


def _compiled_table(runs, title="Compiled loops") -> Table:
    rows = [[str(c["step"]), c["stratum"], f"{c['first_round']}-{c['last_round']}",
             duration(c["time_ns"]), _count(c["work"]), _count(c["updates"])] for c in runs]
    return Table(title, ["step", "stratum", "rounds", "time", "work rows", "updates"], rows,
                 align="rlrrrr",
                 note="a loop whose small delta ran its rounds in one compiled kernel: timed per "
                      "run, not split among its rules (DIFFFLOW_COMPILED_ROUNDS=0 keeps every "
                      "loop on the general path, every round of every rule logged)")


def _round_rows(sums, kind, key) -> list:
    rows = []
    for (k, kk, step, rnd), (t, tuples, rows_in, calls) in sorted(
            sums.per_round.items(), key=lambda item: (item[0][2], item[0][3])):
        if k == kind and kk == key:
            rows.append([str(step), "-" if rnd < 0 else str(rnd), duration(t), _count(tuples),
                         _count(rows_in), _count(calls)])
    return rows


def rule_tables(profile: dict, number: int) -> list:
    """One rule's detail: its text and place, then per step and round (souffleprof's
    ``rul``); a ``ValueError`` when the profile has no rule ``number``.

    >>> from diffflow.datalog.cli.profile_file import new_profile
    >>> p = new_profile("a.dl", 1, [], [{"id": 1, "location": "a.dl:3", "text": "r(x) :- r(x).",
    ...     "relation": "r", "stratum": "r"}], [], [[0, "rule", 1, 2, 5000, 4, 4, 1]], [])
    >>> rule_tables(p, 1)[1].rows
    [['0', '2', '5.00 µs', '4', '4', '1']]
    """
    rules = {r["id"]: r for r in profile["rules"]}
    if number not in rules:
        known = f"its rules are R1 to R{len(rules)}" if rules else "its program has no rules"
        raise ValueError(f"the profile has no rule R{number}; {known} (see `diffflow profile "
                         f"FILE`)")
    sums = _Sums(profile)
    r = rules[number]
    head = Table(f"Rule R{number}", ["file:line", "relation", "stratum", "time", "tuples", "rule"],
                 [[r["location"], r["relation"], r.get("stratum") or "-",
                   duration(sums.time["rule", number]), _count(sums.tuples["rule", number]),
                   r["text"]]], align="lllrrl")
    tables = [head, Table("Per step and round", ["step", "round", "time", "tuples", "rows in",
                                                 "calls"], _round_rows(sums, "rule", number),
                          note="round - : outside any loop")]
    runs = [c for c in sums.compiled if r.get("stratum") and c["stratum"] == r["stratum"]]
    if runs:
        tables.append(_compiled_table(runs, "Compiled runs of its stratum (not split per rule)"))
    return tables


def relation_tables(profile: dict, name: str) -> list:
    """One relation's detail: sizes per step, its own operators and rules per round
    (souffleprof's ``rel``); a ``ValueError`` for a relation the profile does not have.

    >>> from diffflow.datalog.cli.profile_file import new_profile
    >>> p = new_profile("a.dl", 1, [{"step": 0, "wall_ns": 9, "sizes": {"r": 2}}], [],
    ...                 [{"name": "r", "location": "a.dl:2", "stratum": None}], [], [])
    >>> relation_tables(p, "r")[1].rows
    [['0', '2', '9 ns']]
    >>> relation_tables(p, "s")
    Traceback (most recent call last):
    ...
    ValueError: the profile has no relation 's'; it has r
    """
    relations = {r["name"]: r for r in profile["relations"]}
    if name not in relations:
        raise ValueError(f"the profile has no relation {name!r}; it has "
                         f"{', '.join(sorted(relations)) or 'none'}")
    sums = _Sums(profile)
    r = relations[name]
    steps = [[str(s["step"]), _count(s["sizes"].get(name)), duration(s["wall_ns"])]
             for s in profile["steps"]]
    tables = [Table(f"Relation {name}", ["file:line", "stratum", "new", "own time"],
                    [[r["location"], r.get("stratum") or "-",
                      _count(sums.tuples["relation", name]),
                      duration(sums.time["relation", name])]], align="llrr"),
              Table("Size after each step", ["step", "tuples", "step wall time"], steps,
                    note="tuples are counted after the last step only"),
              Table("Its own operators per step and round (new: facts added or removed)",
                    ["step", "round", "time", "new", "rows in", "calls"],
                    _round_rows(sums, "relation", name))]
    for rule in profile["rules"]:
        if rule["relation"] == name:
            tables.append(Table(f"R{rule['id']} {rule['location']}: "
                                f"{one_line(rule['text'], RULE_TEXT)}",
                                ["step", "round", "time", "tuples", "rows in", "calls"],
                                _round_rows(sums, "rule", rule["id"])))
    runs = [c for c in sums.compiled if r.get("stratum") and c["stratum"] == r["stratum"]]
    if runs:
        tables.append(_compiled_table(runs, "Compiled runs of its stratum (not split per rule)"))
    return tables
