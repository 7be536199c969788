#!/usr/bin/env python3
"""The journal's fsync timeline from an execution trace of the daemon.

    curl -o trace.out 'http://HTTPD/debug/pprof/trace?seconds=0.5'  # -httpd-pprof
    go tool trace -d=parsed trace.out > trace.txt
    python3 scripts/fsynctimeline.py [-procs=P] trace.txt [N]

Finds the journal flusher goroutine (journal.flushLoop), takes its group
syncs (an fdatasync, or under -sync group an O_DSYNC write of the records,
journal/segment.go) and prints how many there were, how long they took,
the gap between one sync's end and the next one's start, the share of
the time the flusher spent syncing, and how many finishes each group
carried: the goroutines its end woke (connection handlers waiting in
Journal.Wait) and the replies the flusher then wrote itself (held
replies, under -sync group). With N, also the first N syncs: start (µs
from the first), duration and the finishes it carried.

Then where the connection handlers' time went (docs/persistence.md,
"Group commit, third pass"): each handler that waited for a finish
(journal.(*Journal).Wait) is followed from one such wait to the next,
and the share of that cycle spent waiting on the journal, on the network,
runnable without a processor, in system calls and running is printed;
each finish's journal wait is split into the rest of the sync in flight
when it began, its own sync and the delay from that sync's end to the
waiter being made runnable, followed by the wait for a processor. Last,
the share of the traced time in which some goroutine was runnable while
the flusher sat in its sync and every other processor was taken
(-procs P, default 2: GOMAXPROCS of the traced daemon).

The text format of `go tool trace -d` is a debugging aid of the Go
toolchain (checked with Go 1.26): this reads only StateTransition lines
and their stacks.
"""
import bisect
import re
import statistics as st
import sys

EVENT = re.compile(r'G=(\S+) StateTransition Time=(\d+) GoID=(\d+) (\w+)->(\w+) Reason="([^"]*)"')


def stack(lines, i):
    """The TransitionStack following event line i, as one string."""
    if i + 1 >= len(lines) or not lines[i + 1].startswith('TransitionStack'):
        return ''
    k, out = i + 2, []
    while k < len(lines) and lines[k].startswith('\t'):
        out.append(lines[k])
        k += 1
    return '\n'.join(out)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def summary(xs):
    return 'p50 %.0f mean %.0f p90 %.0f' % (st.median(xs), st.mean(xs), pct(xs, .9))


def handlers(lines, flusher, syncs, procs):
    """Where the handlers that waited for finishes spent their time."""
    events = []  # (time, goroutine, from, to, reason, line index, running G)
    for i, l in enumerate(lines):
        m = EVENT.search(l) if 'StateTransition' in l else None
        if m:
            running, t, g, a, b, r = m.groups()
            events.append((int(t), g, a, b, r, i, running))
    waits = {i for t, g, a, b, r, i, _ in events
             if a == 'Running' and b == 'Waiting' and r == 'select' and g != flusher
             and 'Journal).Wait @' in stack(lines, i)}
    waiters = {g for t, g, a, b, r, i, _ in events if i in waits}
    # Time in each state between a handler's transitions, within its
    # cycles (from its first finish wait on).
    share, last = {}, {}
    for t, g, a, b, r, i, _ in events:
        if g not in waiters:
            continue
        state = 'journal' if i in waits else ('network' if b == 'Waiting' and r == 'network'
                                             else 'waiting (other)' if b == 'Waiting' else b.lower())
        if g in last:
            t0, s0 = last[g]
            share[s0] = share.get(s0, 0) + t - t0
        if g in last or i in waits:
            last[g] = (t, state)
    starts = [s for s, _ in syncs]
    ends = [e for _, e in syncs]
    cycles, rest, own, woken, ready, open_ = [], [], [], [], [], {}
    prev = {}
    for t, g, a, b, r, i, _ in events:
        if i in waits:
            if g in prev:
                cycles.append((t - prev[g]) / 1e3)
            prev[g] = t
            open_[g] = {'w': t}
            continue
        w = open_.get(g)
        if w is None:
            continue
        if a == 'Waiting' and b == 'Runnable' and 'r' not in w:
            w['r'] = t
        elif a == 'Runnable' and b == 'Running' and 'r' in w:
            del open_[g]
            if w['w'] < starts[0] or w['r'] > ends[-1]:
                continue
            k = bisect.bisect_right(starts, w['w']) - 1  # sync started before the wait
            j = bisect.bisect_right(ends, w['r']) - 1    # last sync ended before the wake
            rest.append((ends[k] - w['w']) / 1e3 if k >= 0 and ends[k] > w['w'] else 0)
            own.append((ends[j] - starts[j]) / 1e3)
            woken.append((w['r'] - ends[j]) / 1e3)
            ready.append((t - w['r']) / 1e3)
    if not cycles or not own:
        return
    total = sum(share.values())
    mean = st.mean(cycles)
    print('handler cycle (one finish wait to the next) µs: %s' % summary(cycles))
    for k, v in sorted(share.items(), key=lambda kv: -kv[1]):
        print('  %-16s %3.0f%%  %4.0f µs per cycle' % (k, 100 * v / total, mean * v / total))
    print('a finish\'s journal wait µs: rest of the sync in flight %s; own sync %s; '
          'from its end to the waiter runnable %s; then runnable to running %s'
          % (summary(rest), summary(own), summary(woken), summary(ready)))
    # Runnable goroutines while the flusher's sync holds a processor and
    # the others are taken.
    count = {'Running': 0, 'Syscall': 0, 'Runnable': 0}
    state, prev_t, stranded, span = {}, None, 0, 0
    for t, g, a, b, r, i, _ in events:
        if prev_t is not None:
            span += t - prev_t
            if (count['Runnable'] > 0 and state.get(flusher) == 'Syscall'
                    and count['Running'] + count['Syscall'] >= procs):
                stranded += t - prev_t
        prev_t = t
        if a in count and count[a] > 0:
            count[a] -= 1
        if b in count:
            count[b] += 1
        state[g] = b
    print('goroutines runnable while the flusher\'s sync held a processor and the other %d were taken: '
          '%.0f%% of the traced time' % (procs - 1, 100 * stranded / span))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('-procs')]
    procs = int(next((a.split('=', 1)[1] for a in sys.argv[1:] if a.startswith('-procs=')), 2))
    lines = open(args[0]).read().split('\n')
    show = int(args[1]) if len(args) > 1 else 0
    trans = [(i, l) for i, l in enumerate(lines) if 'StateTransition' in l]
    flusher = None
    for i, l in trans:
        if 'Running->' in l and 'flushLoop' in stack(lines, i):
            flusher = re.search(r'GoID=(\d+)', l).group(1)
            break
    if flusher is None:
        sys.exit('no journal flusher goroutine in the trace')
    # A flusher syscall is a group sync if it is an fdatasync, or an
    # O_DSYNC record write (then fdatasyncs are rare preallocation steps).
    calls = []  # (event index, kind)
    for i, l in trans:
        if ('GoID=%s ' % flusher) in l and 'Running->Syscall' in l:
            s = stack(lines, i)
            if 'Fdatasync' in s:
                calls.append((i, 'fdatasync'))
            elif 'segmentFile).write @' in s:
                calls.append((i, 'write'))
    n_fd = sum(k == 'fdatasync' for _, k in calls)
    sync_kind = 'fdatasync' if n_fd * 2 > len(calls) - n_fd else 'write'
    sync_starts = {i for i, k in calls if k == sync_kind}
    # Under -sync group the flusher writes update_work_unit's replies
    # itself (held replies, cborrpc/held.go): its write system calls from
    # cborrpc.writeNow after a sync are the finishes that sync carried,
    # as the goroutines it wakes are for Wait callers.
    replies = {i for i, l in trans
               if ('GoID=%s ' % flusher) in l and 'Running->Syscall' in l
               and 'cborrpc.writeNow' in stack(lines, i)}
    syncs, woken, cur, start = [], [], None, None
    for i, l in trans:
        t = int(re.search(r'Time=(\d+)', l).group(1))
        running = re.match(r'M=\S+ P=\S+ G=(\S+) ', l)
        if i in sync_starts:
            start = t
            if cur is not None:
                woken.append(cur)
            cur = None
        elif start is not None and ('GoID=%s ' % flusher) in l and l.split('GoID=')[1].split()[1].startswith('Syscall->'):
            syncs.append((start, t))
            start, cur = None, 0
        elif cur is not None and running and running.group(1) == flusher and 'Waiting->Runnable' in l:
            cur += 1
        elif cur is not None and i in replies:
            cur += 1
    if len(syncs) < 2:
        sys.exit('fewer than two group syncs in the trace')
    span = (syncs[-1][1] - syncs[0][0]) / 1e9
    durs = [(e - s) / 1e3 for s, e in syncs]
    gaps = [(syncs[k + 1][0] - syncs[k][1]) / 1e3 for k in range(len(syncs) - 1)]
    print('group syncs (%s): %d in %.3f s = %.0f/s' % (sync_kind, len(syncs), span, len(syncs) / span))
    print('sync duration µs: p50 %.0f mean %.0f p90 %.0f' % (st.median(durs), st.mean(durs), pct(durs, .9)))
    print('gap from a sync\'s end to the next one\'s start µs: p50 %.0f mean %.0f p90 %.0f' % (st.median(gaps), st.mean(gaps), pct(gaps, .9)))
    print('flusher time spent syncing: %.0f%%' % (100 * sum(durs) / (span * 1e6)))
    if woken:
        print('goroutines woken and replies written per group (finishes per sync): mean %.2f p50 %d max %d' % (st.mean(woken), st.median(woken), max(woken)))
    for k, (s, e) in enumerate(syncs[:show]):
        w = woken[k] if k < len(woken) else ''
        print('%9.0f %6.0f %s' % ((s - syncs[0][0]) / 1e3, (e - s) / 1e3, w))
    handlers(lines, flusher, syncs, procs)


if __name__ == '__main__':
    main()
