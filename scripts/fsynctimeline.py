#!/usr/bin/env python3
"""The journal's fsync timeline from an execution trace of the daemon.

    curl -o trace.out 'http://HTTPD/debug/pprof/trace?seconds=0.5'  # -httpd-pprof
    go tool trace -d=parsed trace.out > trace.txt
    python3 scripts/fsynctimeline.py trace.txt [N]

Finds the journal flusher goroutine (journal.flushLoop), takes its group
syncs (an fdatasync, or under -sync group an O_DSYNC write of the records,
journal/segment.go) and prints how many there were, how long they took,
the gap between one sync's end and the next one's start, the share of
the time the flusher spent syncing, and how many goroutines (waiting
connection handlers: the finishes the sync carried) each group's end
woke. With N, also the first N syncs: start (µs from the first), duration
and goroutines woken after it. The text format of `go tool trace -d` is a
debugging aid of the Go toolchain (checked with Go 1.26): this reads only
StateTransition lines and their stacks.
"""
import re
import statistics as st
import sys


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


def main():
    lines = open(sys.argv[1]).read().split('\n')
    show = int(sys.argv[2]) if len(sys.argv) > 2 else 0
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
        print('goroutines woken per group (finishes per sync): mean %.2f p50 %d max %d' % (st.mean(woken), st.median(woken), max(woken)))
    for k, (s, e) in enumerate(syncs[:show]):
        w = woken[k] if k < len(woken) else ''
        print('%9.0f %6.0f %s' % ((s - syncs[0][0]) / 1e3, (e - s) / 1e3, w))


if __name__ == '__main__':
    main()
