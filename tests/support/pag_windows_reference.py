"""Construction A (SnailTrail 1 time windows) in plain Python, written from PAG.md §1.4 for the tests."""
from __future__ import annotations

from collections import defaultdict

MSG = ("DataMessage", "ControlMessage")


def build_windows(events: list[dict], W: int, theta: int) -> list[tuple]:
    """Edges ``(window, src_w, src_t, dst_w, dst_t, type, op, block)``."""
    windows = defaultdict(list)
    for ev in events:
        windows[ev["t"] // W].append(ev)
    out = []
    for k, evs in windows.items():
        lo, hi = k * W - 1, (k + 1) * W
        timelines = defaultdict(list)  # worker -> [(t, tie, kind, act, op)]
        sends = defaultdict(list)
        recvs = defaultdict(list)
        for ev in evs:
            if ev["act"] in MSG and ev["kind"] in ("Sent", "Received"):
                key = (ev["w"], ev["corr"]) if ev["kind"] == "Sent" else (ev["peer"], ev["corr"])
                (sends if ev["kind"] == "Sent" else recvs)[key].append(ev)
            if ev["kind"] in ("Start", "End") or (ev["act"] in MSG and ev["kind"] in ("Sent", "Received")):
                timelines[ev["w"]].append((ev["t"], ev["seq"], ev["kind"], ev["act"], ev["op"]))
        for key in set(sends) | set(recvs):
            s_list, r_list = sends.get(key, []), recvs.get(key, [])
            for s in s_list:
                if r_list:
                    for r in r_list:
                        out.append((k, s["w"], s["t"], r["w"], r["t"], s["act"], -1, False))
                elif s["peer"] >= 0:
                    out.append((k, s["w"], s["t"], s["peer"], hi, s["act"], -1, False))
                    timelines[s["peer"]].append((hi, float("inf") - 1, "Received", s["act"], -1))
            if not s_list:
                for r in r_list:
                    if r["peer"] < 0:
                        continue
                    out.append((k, r["peer"], lo, r["w"], r["t"], r["act"], -1, False))
                    timelines[r["peer"]].append((lo, float("-inf") + 1, "Sent", r["act"], -1))
        for w, recs in timelines.items():
            recs = [(lo, float("-inf"), "Bogus", None, -1)] + sorted(recs, key=lambda r: (r[0], r[1])) + \
                   [(hi, float("inf"), "Bogus", None, -1)]
            recs.sort(key=lambda r: (r[0], r[1]))
            items = []  # ["L", start, end, type, op] or ["M", t, kind]
            stack, last = [], None
            for t, _, kind, act, op in recs:
                if kind == "Start":
                    if stack:
                        items.append(["L", last, t, stack[-1][0], stack[-1][1]])
                    stack.append((act, op))
                    last = t
                elif kind == "End":
                    for j in range(len(stack) - 1, -1, -1):
                        if stack[j] == (act, op):
                            del stack[j:]
                            break
                    items.append(["L", last, t, act, op])
                    last = t
                else:
                    if stack:
                        items.append(["L", last, t, stack[-1][0], stack[-1][1]])
                    items.append(["M", t, kind])
                    last = t
            fillers = {}
            for i in range(1, len(items)):
                a, b = items[i - 1], items[i]
                a_end = a[2] if a[0] == "L" else a[1]
                b_start = b[1]
                gap = b_start - a_end
                if gap < theta:
                    if a[0] == "L" and b[0] == "L":
                        mid = a_end + gap // 2
                        a[2], b[1] = mid, mid
                    elif a[0] == "L":
                        a[2] = b[1]
                    elif b[0] == "L":
                        b[1] = a[1]
                    else:
                        kind = "Waiting" if a[2] == "Sent" and b[2] == "Received" else "Unknown"
                        fillers[i] = (a[1], b[1], kind)
                else:
                    waited = b[0] == "M" and b[2] == "Received" and (a[0] == "L" or a[2] == "Sent")
                    fillers[i] = (a_end, b_start, "Waiting" if waited else "Unknown")
            for i, item in enumerate(items):
                if i in fillers and fillers[i][1] > fillers[i][0]:
                    a, b, kind = fillers[i]
                    out.append((k, w, a, w, b, kind, -1, kind == "Waiting"))
                if item[0] == "L" and item[2] > item[1]:
                    out.append((k, w, item[1], w, item[2], item[3], item[4], item[3] == "Waiting"))
    return out
