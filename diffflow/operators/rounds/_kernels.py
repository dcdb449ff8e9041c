"""The compiled round loop (private; driven by :mod:`diffflow.runtime.compiled_rounds`).

:func:`run_rounds` runs a loop's rounds of one epoch for a lowered program
(:class:`diffflow.dataflow.rounds.LoopProgram`, tables laid out as :mod:`.codes` says): per
round, the loop's operators in construction order over that round's updates, with no Python
call per operator or per round.  Why the rounds of one epoch are a chain, and what a
reduction reads, is in ``docs/ARCHITECTURE.md``, "Compiled rounds"; how traces are read in
place and what the rounds add is kept, in :mod:`._traces`.

Kernels here use integers, arrays and numba's runtime only (see
:mod:`diffflow.common.jit`): no numpy function that needs numba's array library.
"""
import numpy as np

from diffflow.common.jit import kernel
from diffflow.operators.rounds._traces import (
    _BIG,
    O_DIFF,
    O_NEXT,
    O_ROUND,
    O_ROW,
    S_NODE,
    S_ROUND,
    S_ROW,
    W_DIFF,
    W_NODE,
    W_PORT,
    W_ROUND,
    W_ROW,
    X_DIFF,
    X_NODE,
    X_ROUND,
    X_ROW,
    _batch,
    _chain,
    _compacted,
    _consolidate,
    _emit,
    _extremum,
    _gather,
    _grown,
    _hash,
    _is_key,
    _key_range,
    _overlay_add,
    _schedule,
)
from diffflow.operators.rounds.codes import (
    AGG_COUNT,
    AGG_MIN,
    AGG_SUM,
    AGGREGATE,
    ARRANGE,
    CONCAT,
    DISTINCT,
    EXIT,
    FEEDBACK,
    FILTER,
    NEGATE,
    PAUSED,
    ROUND_LIMIT,
    SELECT,
    SETTLED,
    TOO_BIG,
    X_ABS,
    X_ADD,
    X_AND,
    X_COL,
    X_EQ,
    X_GE,
    X_GT,
    X_LE,
    X_LIT,
    X_LT,
    X_MAX,
    X_MUL,
    X_NE,
    X_NEG,
    X_NOT,
    X_OR,
    X_SUB,
    X_WRAP32,
    X_WRAPU32,
)


@kernel
def _evaluate(code, lo, hi, row, stack):
    """The value of the expression ``code[lo:hi]`` (postfix) on ``row``."""
    top = 0
    for p in range(lo, hi):
        op, arg = code[p, 0], code[p, 1]
        if op == X_COL:
            stack[top] = row[arg]
            top += 1
        elif op == X_LIT:
            stack[top] = arg
            top += 1
        elif op == X_NEG:
            stack[top - 1] = -stack[top - 1]
        elif op == X_ABS:
            stack[top - 1] = abs(stack[top - 1])
        elif op == X_NOT:
            stack[top - 1] = 1 if stack[top - 1] == 0 else 0
        elif op == X_WRAP32:
            v = (stack[top - 1] + 2147483648) % 4294967296
            if v < 0:
                v += 4294967296
            stack[top - 1] = v - 2147483648
        elif op == X_WRAPU32:
            v = stack[top - 1] % 4294967296
            if v < 0:
                v += 4294967296
            stack[top - 1] = v
        else:
            b = stack[top - 1]
            a = stack[top - 2]
            top -= 1
            if op == X_ADD:
                r = a + b
            elif op == X_SUB:
                r = a - b
            elif op == X_MUL:
                r = a * b
            elif op == X_EQ:
                r = 1 if a == b else 0
            elif op == X_NE:
                r = 1 if a != b else 0
            elif op == X_LT:
                r = 1 if a < b else 0
            elif op == X_LE:
                r = 1 if a <= b else 0
            elif op == X_GT:
                r = 1 if a > b else 0
            elif op == X_GE:
                r = 1 if a >= b else 0
            elif op == X_AND:
                r = 1 if (a != 0 and b != 0) else 0
            elif op == X_OR:
                r = 1 if (a != 0 or b != 0) else 0
            elif op == X_MAX:
                r = max(a, b)
            else:  # X_MIN
                r = min(a, b)
            stack[top - 1] = r
    return stack[0]


@kernel
def _aggregated(vals, diffs, n, aggs, first, count, kk, desired):
    """``desired[kk:kk + count]`` from a key's consolidated rows ``vals[:n]`` (what
    ``AggregateReducer`` computes); returns whether the key is present (a row of positive
    multiplicity) and whether a row has a negative one."""
    present, negative = False, False
    for p in range(n):
        if diffs[p] > 0:
            present = True
        elif diffs[p] < 0:
            negative = True
    for a in range(count):
        how, column = aggs[first + a, 0], aggs[first + a, 1]
        if how == AGG_COUNT:
            v = 0
            for p in range(n):
                v += diffs[p]
        elif how == AGG_SUM:
            v = 0
            for p in range(n):
                v += vals[p, column] * diffs[p]
        elif how == AGG_MIN:
            v = _BIG
            for p in range(n):
                if diffs[p] > 0 and vals[p, column] < v:
                    v = vals[p, column]
        else:  # AGG_MAX
            v = -_BIG - 1
            for p in range(n):
                if diffs[p] > 0 and vals[p, column] > v:
                    v = vals[p, column]
        desired[kk + a] = v
    return present, negative


@kernel
def run_rounds(nodes, consumers_ptr, consumers, readers_ptr, readers, orders, sources, code,
               code_ptr, trace_kk, trace_width, trace_batches_ptr, trace_batches,
               batch_rows, batch_times, batch_diffs, batch_len, aggs, work, n_work,
               schedule, n_schedule, first_round, limit, heads_size, budget):
    """Run rounds from ``first_round`` until nothing is left (SETTLED), the work waiting
    at a round's end exceeds ``limit`` rows (TOO_BIG), a feedback would pass its round
    limit (ROUND_LIMIT) or the rounds have handled about ``budget`` rows of work (PAUSED:
    a round counts as one row plus the rows it leaves waiting, so a long loop returns
    to Python often enough for Ctrl-C).

    Returns ``(reason, last complete round, work, n_work, schedule, n_schedule, overlay,
    n_overlay, exits, n_exits, negative)``: what waits (work and schedule rows, rounds
    above the last complete one), the overlay (updates added to each trace), the updates
    that left the loop, and per node whether a distinct or aggregate met a negative
    multiplicity.
    """
    n_nodes = nodes.shape[0]
    rw = work.shape[1] - W_ROW
    over = np.zeros((64, O_ROW + rw), np.int64)
    n_over = 0
    heads = np.full(heads_size, -1, np.int64)
    exits = np.zeros((16, X_ROW + rw), np.int64)
    n_exits = 0
    negative = np.zeros(n_nodes, np.int64)
    stack = np.zeros(64, np.int64)
    row = np.zeros(rw, np.int64)
    out = np.zeros(rw, np.int64)
    seen = np.full(16, -1, np.int64)  # a distinct's keys this round (hash set of S rows)
    # an aggregate's scratch: a key's input and output rows, and a hash table over them
    in_vals = np.zeros((16, rw), np.int64)
    in_diffs = np.zeros(16, np.int64)
    out_vals = np.zeros((16, rw), np.int64)
    out_diffs = np.zeros(16, np.int64)
    table = np.full(64, -1, np.int64)
    desired = np.zeros(rw, np.int64)
    cursor = np.zeros(16, np.int64)  # a lone min/max's walk: per batch, where it is
    ends = np.zeros(16, np.int64)
    ov_vals = np.zeros(16, np.int64)
    ov_diffs = np.zeros(16, np.int64)
    r = first_round
    done = -1
    reason = SETTLED
    spent = 0
    while True:
        stop_limit = False
        for i in range(n_nodes):
            op = nodes[i, 0]
            if op == DISTINCT or op == AGGREGATE:
                # every key scheduled at this round, once: total in, total out, correct
                kk = nodes[i, 5]
                m = 0
                for s in range(n_schedule):
                    if schedule[s, S_NODE] == i and schedule[s, S_ROUND] == r:
                        m += 1
                if m == 0:
                    continue
                size = 16
                while size < 2 * m:
                    size *= 2
                if seen.shape[0] < size:
                    seen = np.full(size, -1, np.int64)
                mask = seen.shape[0] - 1
                for s in range(n_schedule):
                    if schedule[s, S_NODE] != i or schedule[s, S_ROUND] != r:
                        continue
                    schedule[s, S_NODE] = -1
                    h = _hash(schedule, s, S_ROW, kk, i) & mask
                    dup = False
                    while seen[h] >= 0:
                        o = seen[h]
                        same = True
                        for j in range(kk):
                            if schedule[o, S_ROW + j] != schedule[s, S_ROW + j]:
                                same = False
                                break
                        if same:
                            dup = True
                            break
                        h = (h + 1) & mask
                    if dup:
                        continue
                    seen[h] = s
                    for j in range(kk):
                        row[j] = schedule[s, S_ROW + j]
                    t_in, t_out = nodes[i, 3], nodes[i, 4]
                    if op == AGGREGATE:
                        # the key's desired row (desired[:w_out]; none unless present), and
                        # its output rows up to this round, consolidated
                        w_out = nodes[i, 2]
                        first_agg, n_aggs = nodes[i, 6], nodes[i, 7]
                        lone = n_aggs == 1 and nodes[i, 1] == kk + 1 and \
                            aggs[first_agg, 0] >= AGG_MIN and aggs[first_agg, 1] == kk
                        n_in = 0
                        if lone:  # a min/max of (key, value) rows: walk the values, copy nothing
                            present, v, nxt, cursor, ends, ov_vals, ov_diffs = _extremum(
                                t_in, row, kk, r, aggs[first_agg, 0] == AGG_MIN, trace_width,
                                trace_batches_ptr, trace_batches, batch_rows, batch_times,
                                batch_diffs, batch_len, over, heads, cursor, ends, ov_vals,
                                ov_diffs)
                        else:
                            in_vals, in_diffs, n_in, nxt = _gather(
                                t_in, row, kk, r, trace_width, trace_batches_ptr, trace_batches,
                                batch_rows, batch_times, batch_diffs, batch_len, over, heads,
                                in_vals, in_diffs, 0)
                        out_vals, out_diffs, n_out, nxt_out = _gather(
                            t_out, row, kk, r, trace_width, trace_batches_ptr, trace_batches,
                            batch_rows, batch_times, batch_diffs, batch_len, over, heads,
                            out_vals, out_diffs, 0)
                        nxt = min(nxt, nxt_out)
                        size = table.shape[0]
                        while size < 2 * max(n_in, n_out):
                            size *= 2
                        if size > table.shape[0]:
                            table = np.full(size, -1, np.int64)
                        n_out = _consolidate(out_vals, out_diffs, n_out, w_out, table)
                        for j in range(kk):
                            desired[j] = row[j]
                        if lone:
                            desired[kk] = v
                        else:
                            n_in = _consolidate(in_vals, in_diffs, n_in, nodes[i, 1], table)
                            present, neg = _aggregated(in_vals, in_diffs, n_in, aggs, first_agg,
                                                       n_aggs, kk, desired)
                            if neg:
                                negative[i] = 1
                    if op == AGGREGATE:  # the corrections: desired - output, row by row
                        found = False
                        for p in range(n_out + 1):
                            if p < n_out:
                                if out_diffs[p] == 0:
                                    continue
                                same = present
                                if same:
                                    for j in range(w_out):
                                        if out_vals[p, j] != desired[j]:
                                            same = False
                                            break
                                change = 1 - out_diffs[p] if same else -out_diffs[p]
                                found |= same
                                for j in range(w_out):
                                    out[j] = out_vals[p, j]
                            else:
                                if found or not present:
                                    continue
                                change = 1
                                for j in range(w_out):
                                    out[j] = desired[j]
                            if change == 0:
                                continue
                            over, n_over, heads = _overlay_add(over, n_over, heads, trace_kk,
                                                               t_out, out, w_out, r, change)
                            work, n_work = _emit(work, n_work, consumers_ptr, consumers, i, r,
                                                  change, out, w_out)
                        if nxt != _BIG:
                            schedule, n_schedule = _schedule(schedule, n_schedule, i, nxt, row,
                                                                 kk)
                        continue
                    total_in, total_out, nxt = 0, 0, _BIG
                    for side in range(2):
                        t = t_in if side == 0 else t_out
                        for q in range(trace_batches_ptr[t], trace_batches_ptr[t + 1]):
                            rows, times, diffs = _batch(q, trace_width[t], trace_batches,
                                                        batch_rows, batch_times, batch_diffs,
                                                        batch_len)
                            lo, hi = _key_range(rows, rows.shape[0], row, 0, kk)
                            for p in range(lo, hi):
                                rr = times[p, 1]
                                if rr <= r:
                                    if side == 0:
                                        total_in += diffs[p]
                                    else:
                                        total_out += diffs[p]
                                elif rr < nxt:
                                    nxt = rr
                        e = _chain(over, heads, t, row, kk)
                        while e >= 0:
                            if _is_key(over, e, t, row, kk):
                                rr = over[e, O_ROUND]
                                if rr <= r:
                                    if side == 0:
                                        total_in += over[e, O_DIFF]
                                    else:
                                        total_out += over[e, O_DIFF]
                                elif rr < nxt:
                                    nxt = rr
                            e = over[e, O_NEXT]
                    if total_in < 0:
                        negative[i] = 1
                    change = (1 if total_in > 0 else 0) - total_out
                    if change != 0:
                        over, n_over, heads = _overlay_add(over, n_over, heads, trace_kk,
                                                           t_out, row, kk, r, change)
                        work, n_work = _emit(work, n_work, consumers_ptr, consumers, i, r,
                                              change, row, kk)
                    if nxt != _BIG:  # the key's next round with history: look again there
                        schedule, n_schedule = _schedule(schedule, n_schedule, i, nxt, row,
                                                             kk)
                for s in range(seen.shape[0]):
                    seen[s] = -1
                continue
            # the updates waiting at node i at this round, in arrival order
            for w in range(n_work):
                if work[w, W_NODE] != i or work[w, W_ROUND] != r:
                    continue
                work[w, W_NODE] = -1
                diff = work[w, W_DIFF]
                port = work[w, W_PORT]
                in_width = nodes[i, 1]
                for j in range(in_width):
                    row[j] = work[w, W_ROW + j]
                rnd = r
                width = nodes[i, 2]
                if op == CONCAT:
                    for j in range(width):
                        out[j] = row[j]
                elif op == NEGATE:
                    diff = -diff
                    for j in range(width):
                        out[j] = row[j]
                elif op == SELECT:
                    first = nodes[i, 3]
                    for j in range(width):
                        out[j] = _evaluate(code, code_ptr[first + j], code_ptr[first + j + 1],
                                           row, stack)
                elif op == FILTER:
                    first = nodes[i, 3]
                    if _evaluate(code, code_ptr[first], code_ptr[first + 1], row, stack) == 0:
                        continue
                    for j in range(width):
                        out[j] = row[j]
                elif op == FEEDBACK:
                    limit_round = nodes[i, 3]
                    if limit_round >= 0 and r + 1 > limit_round:
                        work[w, W_NODE] = i  # left for the engine's feedback, which cuts it
                        stop_limit = True
                        continue
                    rnd = r + 1
                    for j in range(width):
                        out[j] = row[j]
                elif op == EXIT:
                    exits = _grown(exits, n_exits)
                    exits[n_exits, X_NODE] = i
                    exits[n_exits, X_ROUND] = r
                    exits[n_exits, X_DIFF] = diff
                    for j in range(in_width):
                        exits[n_exits, X_ROW + j] = row[j]
                    n_exits += 1
                    continue
                elif op == ARRANGE:
                    if port == 0:  # (port 1: rows already in the arranged order)
                        first = nodes[i, 5]
                        for j in range(width):
                            out[j] = row[orders[first + j]]
                        for j in range(width):
                            row[j] = out[j]
                    if diff == 0:
                        continue
                    t = nodes[i, 3]
                    kk = nodes[i, 4]
                    for q in range(readers_ptr[i], readers_ptr[i + 1]):
                        reader, side = readers[q, 0], readers[q, 1]
                        if side == 2:  # a distinct: look at the key at this round
                            schedule, n_schedule = _schedule(schedule, n_schedule, reader, r, row,
                                                                 nodes[reader, 5])
                            continue
                        # a join: this update against the other side's trace, as it is now
                        other = nodes[reader, 4] if side == 0 else nodes[reader, 3]
                        t_other = nodes[other, 3]
                        jk = nodes[reader, 5]
                        src = nodes[reader, 6]
                        lw = nodes[reader, 7]
                        out_w = nodes[reader, 2]
                        ow = trace_width[t_other]
                        for q2 in range(trace_batches_ptr[t_other], trace_batches_ptr[t_other + 1]):
                            rows, times, diffs = _batch(q2, ow, trace_batches, batch_rows,
                                                        batch_times, batch_diffs, batch_len)
                            lo, hi = _key_range(rows, rows.shape[0], row, 0, jk)
                            for p in range(lo, hi):
                                for j in range(out_w):
                                    s = sources[src + j]
                                    if side == 0:
                                        out[j] = row[s] if s < lw else rows[p, s - lw]
                                    else:
                                        out[j] = rows[p, s] if s < lw else row[s - lw]
                                work, n_work = _emit(work, n_work, consumers_ptr, consumers,
                                                     reader, max(r, times[p, 1]),
                                                     diff * diffs[p], out, out_w)
                        e = _chain(over, heads, t_other, row, jk)
                        while e >= 0:
                            if _is_key(over, e, t_other, row, jk):
                                for j in range(out_w):
                                    s = sources[src + j]
                                    if side == 0:
                                        out[j] = row[s] if s < lw else over[e, O_ROW + s - lw]
                                    else:
                                        out[j] = over[e, O_ROW + s] if s < lw else row[s - lw]
                                work, n_work = _emit(work, n_work, consumers_ptr, consumers,
                                                     reader, max(r, over[e, O_ROUND]),
                                                     diff * over[e, O_DIFF], out, out_w)
                            e = over[e, O_NEXT]
                    over, n_over, heads = _overlay_add(over, n_over, heads, trace_kk, t, row,
                                                       width, r, diff)
                    continue
                else:  # (ENTER, JOIN: never queued here)
                    continue
                work, n_work = _emit(work, n_work, consumers_ptr, consumers, i, rnd,
                                      diff, out, width)
        # the round is complete: drop what was handled, find the next round
        n_work = _compacted(work, n_work, W_NODE)
        n_schedule = _compacted(schedule, n_schedule, S_NODE)
        done = r
        if stop_limit:
            reason = ROUND_LIMIT
            break
        if n_work == 0 and n_schedule == 0:
            reason = SETTLED
            break
        if n_work + n_schedule > limit:
            reason = TOO_BIG
            break
        spent += 1 + n_work + n_schedule
        if spent >= budget:
            reason = PAUSED
            break
        nxt = _BIG
        for w in range(n_work):
            nxt = min(nxt, work[w, W_ROUND])
        for s in range(n_schedule):
            nxt = min(nxt, schedule[s, S_ROUND])
        r = nxt
    return (reason, done, work, n_work, schedule, n_schedule, over, n_over, exits, n_exits,
            negative)
