"""Plain-Python references for the PAG tests, written from PAG.md and diffflow.pag's documented rules.

Nothing here is fast or clever on purpose: dictionaries, lists and loops, so
that the vectorised code in diffflow.pag is checked against something
obviously right.
"""
from __future__ import annotations

import random
from collections import Counter, defaultdict

SCHED, PROC, SPIN, WAIT, BUSY, UNKNOWN = "Scheduling", "Processing", "Spinning", "Waiting", "Busy", "Unknown"


def build_epochs(events: list[dict]) -> list[tuple]:
    """Edges ``(snap, sw, st, sk, dw, dt, dk, type, op, n, block)`` of construction B."""
    edges = []
    chains = defaultdict(list)
    for ev in events:
        chains[(ev["w"], ev["e"])].append(ev)
    for (w, e), chain in chains.items():
        chain.sort(key=lambda ev: ev["seq"])
        stack, received = [], False
        for i, ev in enumerate(chain):
            if i:
                prev = chain[i - 1]
                if not stack:
                    kind, op = (WAIT if ev["kind"] == "Received" else BUSY), -1
                else:
                    act, op = stack[-1]
                    if act == SCHED:
                        idle = ev["kind"] == "End" and ev["act"] == SCHED and ev["n"] <= 0 and ev["out"] <= 0
                        kind = SPIN if idle else PROC
                    elif act == WAIT:
                        kind = BUSY if received and ev["kind"] != "Received" else WAIT
                    else:
                        kind = act
                n = ev["n"] if ev["kind"] == "End" and ev["act"] == SCHED else -1
                edges.append((e, w, prev["t"], prev["seq"], w, ev["t"], ev["seq"], kind, op, n, kind == WAIT))
            if ev["kind"] == "Start":
                stack.append((ev["act"], ev["op"]))
                if ev["act"] == WAIT:
                    received = False
            elif ev["kind"] == "End":
                for j in range(len(stack) - 1, -1, -1):
                    if stack[j] == (ev["act"], ev["op"]):
                        del stack[j:]
                        break
            elif ev["kind"] == "Received":
                received = True
    for s in events:
        if s["kind"] != "Sent" or s["act"] not in ("DataMessage", "ControlMessage"):
            continue
        for r in events:
            if (r["kind"] == "Received" and r["act"] == s["act"] and r["e"] == s["e"] and r["peer"] == s["w"]
                    and r["corr"] == s["corr"] and r["ch"] == s["ch"] and r["w"] != s["w"]
                    and (s["peer"] < 0 or s["peer"] == r["w"])):
                edges.append((s["e"], s["w"], s["t"], s["seq"], r["w"], r["t"], r["seq"], s["act"], -1, s["n"], False))
    return edges


def pad(edges: list[tuple]) -> list[tuple]:
    """Per snapshot and worker: Unknown edges from (ts, w) to its first vertex and from its last to (te, w)."""
    out = list(edges)
    by_snap = defaultdict(set)
    for e in edges:
        by_snap[e[0]].add((e[1], e[2], e[3]))
        by_snap[e[0]].add((e[4], e[5], e[6]))
    for snap, vertices in by_snap.items():
        ts = min(t for _, t, _ in vertices)
        te = max(t for _, t, _ in vertices)
        for w in {w for w, _, _ in vertices}:
            mine = sorted((t, k) for ww, t, k in vertices if ww == w)
            out.append((snap, w, ts, -(2**63), w, mine[0][0], mine[0][1], UNKNOWN, -1, -1, False))
            out.append((snap, w, mine[-1][0], mine[-1][1], w, te, 2**63 - 1, UNKNOWN, -1, -1, False))
    return out


def critical_paths(edges: list[tuple]) -> tuple[list[float], list[float], dict]:
    """Per edge: the number of transient critical paths through it and its CP; per snapshot: N.

    Enumerates every path (small graphs only): from vertices at the snapshot's
    first instant with no usable edge in, to vertices at its last instant with
    no usable edge out, over non-blocked edges.
    """
    through = [0] * len(edges)
    paths_per_snap = {}
    cp = [0.0] * len(edges)
    for snap in {e[0] for e in edges}:
        idx = [i for i, e in enumerate(edges) if e[0] == snap]
        vert = lambda e, end: (e[4], e[5], e[6]) if end else (e[1], e[2], e[3])  # noqa: E731
        times = [vert(edges[i], end)[1] for i in idx for end in (0, 1)]
        ts, te = min(times), max(times)
        usable = [i for i in idx if not edges[i][10]]
        out = defaultdict(list)
        has_in, has_out = set(), set()
        for i in usable:
            out[vert(edges[i], 0)].append(i)
            has_in.add(vert(edges[i], 1))
            has_out.add(vert(edges[i], 0))
        vertices = {vert(edges[i], end) for i in idx for end in (0, 1)}
        starts = [v for v in vertices if v[1] == ts and v not in has_in]
        ends = {v for v in vertices if v[1] == te and v not in has_out}
        count = 0

        def walk(v, trail):
            nonlocal count
            if v in ends:
                count += 1
                for i in trail:
                    through[i] += 1
            for i in out[v]:
                walk(vert(edges[i], 1), trail + [i])

        for v in starts:
            walk(v, [])
        paths_per_snap[snap] = count
        for i in idx:
            w = edges[i][5] - edges[i][2]
            cp[i] = through[i] * w / (count * (te - ts)) if count and te > ts else 0.0
    return [float(x) for x in through], cp, paths_per_snap


def random_events(rng: random.Random, workers=3, epochs=2, steps=6, messages=5) -> list[dict]:
    """Random raw events: operator steps, waits, data messages (some unmatched) and progress broadcasts.

    Timestamps increase along each worker's log and a message is received after
    it is sent, as on a real machine, so the PAG is acyclic.
    """
    events = []
    corr = 0

    def ev(w, e, t, kind, act, op=-1, ch=-1, c=-1, peer=-1, n=-1, out=-1):
        events.append(dict(w=w, e=e, t=t, kind=kind, act=act, op=op, ch=ch, corr=c, peer=peer, n=n, out=out))

    for e in range(1, epochs + 1):
        base = e * 10_000
        for w in range(workers):
            t = base + rng.randrange(50)
            for _ in range(rng.randrange(steps + 1)):
                t += rng.randrange(1, 40)
                if rng.random() < 0.2:
                    ev(w, e, t, "Start", WAIT)
                    t += rng.randrange(1, 40)
                    ev(w, e, t, "End", WAIT)
                    continue
                op = rng.randrange(4)
                ev(w, e, t, "Start", SCHED, op=op)
                if rng.random() < 0.3:  # a nested activity cuts the step
                    t += rng.randrange(1, 10)
                    ev(w, e, t, "Start", "Serialization", op=op)
                    t += rng.randrange(1, 10)
                    ev(w, e, t, "End", "Serialization", op=op)
                t += rng.randrange(0, 40)
                n, out = rng.choice([(0, 0), (0, 3), (5, 0), (7, 7)])
                ev(w, e, t, "End", SCHED, op=op, n=n, out=out)
        for _ in range(rng.randrange(messages + 1)):
            src, dst = rng.sample(range(workers), 2) if workers > 1 else (0, 0)
            if src == dst:
                continue
            corr += 1
            ts = base + rng.randrange(400)
            tr = ts + rng.randrange(1, 100)
            act = rng.choice(["DataMessage", "ControlMessage"])
            rows = rng.randrange(1, 50)
            ev(src, e, ts, "Sent", act, ch=rng.randrange(2), c=corr, peer=dst, n=rows)
            ch = events[-1]["ch"]
            if rng.random() < 0.8:  # some messages are never received
                if rng.random() < 0.5:
                    ev(dst, e, tr - 1, "Start", WAIT)
                    ev(dst, e, tr, "Received", act, ch=ch, c=corr, peer=src, n=rows)
                    ev(dst, e, tr + 1, "End", WAIT)
                else:
                    ev(dst, e, tr, "Received", act, ch=ch, c=corr, peer=src, n=rows)
        if workers > 1 and rng.random() < 0.5:  # a progress broadcast
            corr += 1
            src = rng.randrange(workers)
            ts = base + rng.randrange(400)
            ev(src, e, ts, "Sent", "ControlMessage", ch=9, c=corr)
            for dst in range(workers):
                if dst != src:
                    ev(dst, e, ts + rng.randrange(1, 60), "Received", "ControlMessage", ch=9, c=corr, peer=src)
    # logging order: by time on each worker (ties keep generation order)
    events.sort(key=lambda ev: (ev["w"], ev["t"]))
    seq = Counter()
    for ev_ in events:
        ev_["seq"] = seq[ev_["w"]]
        seq[ev_["w"]] += 1
    rng.shuffle(events)  # a trace interleaves workers arbitrarily
    return events
