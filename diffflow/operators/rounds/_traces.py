"""Reading traces inside the compiled round loop (private; used by ``_kernels``).

A loop's traces are read in place: a batch's arrays arrive as addresses (:func:`_view`), so
a run of rounds copies no history.  What the rounds add to a trace lives in the *overlay*:
rows ``[trace, round, diff, next, row...]`` chained by key hash from ``heads``
(:func:`_overlay_add`).  A key's updates up to a round are its batches' runs (binary
search, :func:`_key_range`) and its overlay chain: :func:`_gather` copies them,
:func:`_extremum` walks a lone min/max's values without copying, :func:`_consolidate` sums
equal rows.  Integers, arrays and numba's runtime only (see :mod:`diffflow.common.jit`).
"""
import numpy as np
from numba import carray, types
from numba.extending import intrinsic

from diffflow.common.jit import kernel

# columns of the work, overlay, schedule and exit buffers before the row
W_NODE, W_PORT, W_ROUND, W_DIFF, W_ROW = 0, 1, 2, 3, 4
O_TRACE, O_ROUND, O_DIFF, O_NEXT, O_ROW = 0, 1, 2, 3, 4
S_NODE, S_ROUND, S_ROW = 0, 1, 2
X_NODE, X_ROUND, X_DIFF, X_ROW = 0, 1, 2, 3

_BIG = np.iinfo(np.int64).max


@intrinsic
def _int64_pointer(typingctx, address):
    """The int64 pointer at ``address`` (an array's ``ctypes.data``)."""
    sig = types.CPointer(types.int64)(types.int64)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.int64)))
    return sig, codegen


@kernel
def _view(address, rows, width):
    """A C-contiguous ``(rows, width)`` int64 array at ``address`` (kept alive by the caller)."""
    return carray(_int64_pointer(address), (rows, width))


@kernel
def _vector(address, n):
    return carray(_int64_pointer(address), (n,))


@kernel
def _grown(buf, n):
    """``buf`` with room for row ``n`` (doubled when full)."""
    if n < buf.shape[0]:
        return buf
    bigger = np.zeros((2 * buf.shape[0], buf.shape[1]), np.int64)
    for i in range(n):
        for j in range(buf.shape[1]):
            bigger[i, j] = buf[i, j]
    return bigger


@kernel
def _hash(buf, i, start, k, salt):
    h = salt * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
    for j in range(start, start + k):
        h ^= buf[i, j]
        h *= 0xBF58476D1CE4E5B9
        h ^= (h >> 31) & 0x1FFFFFFFF
    return h


@kernel
def _batch(q, width, trace_batches, batch_rows, batch_times, batch_diffs, batch_len):
    """The rows, times and diffs of a trace's ``q``-th batch (an index into ``trace_batches``),
    read in place."""
    b = trace_batches[q]
    n = batch_len[b]
    return (_view(batch_rows[b], n, width), _view(batch_times[b], n, 2),
            _vector(batch_diffs[b], n))


@kernel
def _lower_bound(rows, n, key, key_start, kk):
    """First row of ``rows[:n]`` (sorted) whose first ``kk`` columns are >= the key."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        less = False
        for j in range(kk):
            a, b = rows[mid, j], key[key_start + j]
            if a != b:
                less = a < b
                break
        if less:
            lo = mid + 1
        else:
            hi = mid
    return lo


@kernel
def _key_range(rows, n, key, key_start, kk):
    """``[lo, hi)``: the rows of ``rows[:n]`` (sorted) whose first ``kk`` columns equal the key."""
    lo = _lower_bound(rows, n, key, key_start, kk)
    hi = lo
    while hi < n:
        same = True
        for j in range(kk):
            if rows[hi, j] != key[key_start + j]:
                same = False
                break
        if not same:
            break
        hi += 1
    return lo, hi


@kernel
def _grown_vector(buf, n):
    """``buf`` (1-d) with room for item ``n`` (doubled when full)."""
    if n < buf.shape[0]:
        return buf
    bigger = np.zeros(2 * buf.shape[0], np.int64)
    bigger[:n] = buf[:n]
    return bigger


@kernel
def _chain(over, heads, trace, key, kk):
    """The newest overlay entry whose chain ``key[:kk]`` of ``trace`` hashes to (-1: none);
    walk on with ``O_NEXT`` and test each with :func:`_is_key`."""
    return heads[_hash(key.reshape(1, key.shape[0]), 0, 0, kk, trace) & (heads.shape[0] - 1)]


@kernel
def _is_key(over, e, trace, key, kk):
    """Whether overlay entry ``e`` is a (non-zero) update of ``trace`` at key ``key[:kk]``."""
    if over[e, O_TRACE] != trace or over[e, O_DIFF] == 0:
        return False
    for j in range(kk):
        if over[e, O_ROW + j] != key[j]:
            return False
    return True


@kernel
def _overlay_add(over, n_over, heads, trace_kk, trace, row, width, rnd, diff):
    """Add the update ``(row, rnd, diff)`` to the overlay of ``trace``; returns the overlay,
    its length and the heads (rehashed when the overlay outgrew them).  Chains hash the
    key (``trace_kk[trace]`` columns), so a trace's updates of one key share a chain.

    Only the chain's newest entry is checked for the same row and round (an update and its
    retraction in one round): a chain can hold a key's every row (a popular label), and
    looking further would make inserting cost what the chain holds.  Readers sum equal rows,
    and the driver consolidates what it seals."""
    kk = trace_kk[trace]
    mask = heads.shape[0] - 1
    h = _hash(row.reshape(1, row.shape[0]), 0, 0, kk, trace) & mask
    e = heads[h]
    if e >= 0 and over[e, O_TRACE] == trace and over[e, O_ROUND] == rnd:
        same = True
        for j in range(width):
            if over[e, O_ROW + j] != row[j]:
                same = False
                break
        if same:
            over[e, O_DIFF] += diff
            return over, n_over, heads
    over = _grown(over, n_over)
    over[n_over, O_TRACE] = trace
    over[n_over, O_ROUND] = rnd
    over[n_over, O_DIFF] = diff
    over[n_over, O_NEXT] = heads[h]
    for j in range(width):
        over[n_over, O_ROW + j] = row[j]
    heads[h] = n_over
    n_over += 1
    if n_over > heads.shape[0]:  # rehash into twice the heads
        heads = np.full(2 * heads.shape[0], -1, np.int64)
        mask = heads.shape[0] - 1
        for i in range(n_over):
            h = _hash(over, i, O_ROW, trace_kk[over[i, O_TRACE]], over[i, O_TRACE]) & mask
            over[i, O_NEXT] = heads[h]
            heads[h] = i
    return over, n_over, heads


@kernel
def _gather(t, key, kk, r, trace_width, trace_batches_ptr, trace_batches, batch_rows,
            batch_times, batch_diffs, batch_len, over, heads, vals, diffs, n):
    """Append to ``(vals, diffs)`` from row ``n`` on the updates of trace ``t`` whose key is
    ``key[:kk]`` at rounds ``<= r`` (whole rows); returns the buffers, their length, and the
    key's first round above ``r`` (or the int64 maximum)."""
    width = trace_width[t]
    nxt = _BIG
    for q in range(trace_batches_ptr[t], trace_batches_ptr[t + 1]):
        rows, times, ds = _batch(q, width, trace_batches, batch_rows, batch_times, batch_diffs, batch_len)
        lo, hi = _key_range(rows, rows.shape[0], key, 0, kk)
        for p in range(lo, hi):
            rr = times[p, 1]
            if rr > r:
                nxt = min(nxt, rr)
                continue
            vals, diffs = _grown(vals, n), _grown_vector(diffs, n)
            for j in range(width):
                vals[n, j] = rows[p, j]
            diffs[n] = ds[p]
            n += 1
    e = _chain(over, heads, t, key, kk)
    while e >= 0:
        if _is_key(over, e, t, key, kk):
            rr = over[e, O_ROUND]
            if rr > r:
                nxt = min(nxt, rr)
            else:
                vals, diffs = _grown(vals, n), _grown_vector(diffs, n)
                for j in range(width):
                    vals[n, j] = over[e, O_ROW + j]
                diffs[n] = over[e, O_DIFF]
                n += 1
        e = over[e, O_NEXT]
    return vals, diffs, n, nxt


@kernel
def _extremum(t, key, kk, r, is_min, trace_width, trace_batches_ptr, trace_batches,
              batch_rows, batch_times, batch_diffs, batch_len, over, heads, cursor, ends,
              ov_vals, ov_diffs):
    """A lone min (or max) of ``(key, value)`` rows of trace ``t`` at round ``r`` without
    copying the key's rows: the batches' runs of the key, sorted by value, are walked from
    the smallest (largest) value up (down) until one has a positive multiplicity.  Returns
    ``(found, value, the key's first round above r)`` and the scratch arrays (grown)."""
    width = trace_width[t]
    nxt = _BIG
    q0, q1 = trace_batches_ptr[t], trace_batches_ptr[t + 1]
    if cursor.shape[0] < q1 - q0:
        cursor = np.zeros(2 * (q1 - q0), np.int64)
        ends = np.zeros(2 * (q1 - q0), np.int64)
    for q in range(q0, q1):
        rows, times, _ = _batch(q, width, trace_batches, batch_rows, batch_times, batch_diffs, batch_len)
        lo, hi = _key_range(rows, rows.shape[0], key, 0, kk)
        for p in range(lo, hi):  # (one pass over the key's rounds: where to look next)
            if times[p, 1] > r and times[p, 1] < nxt:
                nxt = times[p, 1]
        cursor[q - q0] = lo if is_min else hi - 1
        ends[q - q0] = hi if is_min else lo - 1
    n_ov = 0
    e = _chain(over, heads, t, key, kk)
    while e >= 0:
        if _is_key(over, e, t, key, kk):
            rr = over[e, O_ROUND]
            if rr > r:
                nxt = min(nxt, rr)
            else:
                ov_vals, ov_diffs = _grown_vector(ov_vals, n_ov), _grown_vector(ov_diffs, n_ov)
                ov_vals[n_ov] = over[e, O_ROW + kk]
                ov_diffs[n_ov] = over[e, O_DIFF]
                n_ov += 1
        e = over[e, O_NEXT]
    step = 1 if is_min else -1
    while True:
        # the next value in walking order, over every batch's run and the overlay
        have = False
        v = 0
        for q in range(q0, q1):
            c = cursor[q - q0]
            if c != ends[q - q0]:
                x = _batch(q, width, trace_batches, batch_rows, batch_times, batch_diffs, batch_len)[0][c, kk]
                if not have or (x < v if is_min else x > v):
                    v, have = x, True
        for o in range(n_ov):
            x = ov_vals[o]
            if ov_diffs[o] != 0 and (not have or (x < v if is_min else x > v)):
                v, have = x, True
        if not have:
            return False, 0, nxt, cursor, ends, ov_vals, ov_diffs
        total = 0
        for q in range(q0, q1):
            rows, times, diffs = _batch(q, width, trace_batches, batch_rows, batch_times, batch_diffs, batch_len)
            c = cursor[q - q0]
            while c != ends[q - q0] and rows[c, kk] == v:
                if times[c, 1] <= r:
                    total += diffs[c]
                c += step
            cursor[q - q0] = c
        for o in range(n_ov):
            if ov_diffs[o] != 0 and ov_vals[o] == v:
                total += ov_diffs[o]
                ov_diffs[o] = 0  # (consumed)
        if total > 0:
            return True, v, nxt, cursor, ends, ov_vals, ov_diffs


@kernel
def _consolidate(vals, diffs, n, width, table):
    """Sum the diffs of equal rows of ``vals[:n]`` into their first copy; moves the distinct
    rows to the front and returns how many there are (``table``: a scratch hash table, at
    least ``2 n`` slots, a power of two, every slot -1; left so)."""
    mask = table.shape[0] - 1
    m = 0
    for i in range(n):
        h = _hash(vals, i, 0, width, 7) & mask
        found = -1
        while table[h] >= 0:
            o = table[h]
            same = True
            for j in range(width):
                if vals[o, j] != vals[i, j]:
                    same = False
                    break
            if same:
                found = o
                break
            h = (h + 1) & mask
        if found >= 0:
            diffs[found] += diffs[i]
            continue
        if m != i:
            for j in range(width):
                vals[m, j] = vals[i, j]
            diffs[m] = diffs[i]
        # (rows are re-hashed from their new place: the table holds positions)
        table[h] = m
        m += 1
    for i in range(m):  # clear the slots used
        h = _hash(vals, i, 0, width, 7) & mask
        while table[h] >= 0:
            table[h] = -1
            h = (h + 1) & mask
    return m


@kernel
def _compacted(buf, n, node_column):
    """Move the rows whose node is not -1 to the front; their count."""
    k = 0
    for i in range(n):
        if buf[i, node_column] >= 0:
            if k != i:
                for j in range(buf.shape[1]):
                    buf[k, j] = buf[i, j]
            k += 1
    return k


@kernel
def _emit(work, n_work, consumers_ptr, consumers, node, rnd, diff, values, width):
    """Queue ``(values[:width], rnd, diff)`` for every consumer of ``node``."""
    for c in range(consumers_ptr[node], consumers_ptr[node + 1]):
        work = _grown(work, n_work)
        work[n_work, W_NODE] = consumers[c, 0]
        work[n_work, W_PORT] = consumers[c, 1]
        work[n_work, W_ROUND] = rnd
        work[n_work, W_DIFF] = diff
        for j in range(width):
            work[n_work, W_ROW + j] = values[j]
        n_work += 1
    return work, n_work


@kernel
def _schedule(schedule, n_schedule, node, rnd, key, kk):
    """Have reduction ``node`` look at ``key[:kk]`` at round ``rnd``."""
    schedule = _grown(schedule, n_schedule)
    schedule[n_schedule, S_NODE] = node
    schedule[n_schedule, S_ROUND] = rnd
    for j in range(kk):
        schedule[n_schedule, S_ROW + j] = key[j]
    return schedule, n_schedule + 1
