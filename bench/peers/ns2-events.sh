#!/bin/sh
# Count the events ns-2 scheduled in a run of bench/peers/ns2/dumbbell.tcl.
# ns-2 has no Tcl-visible event counter; Scheduler::uid_ (a static in
# common/scheduler.cc) is incremented once per Scheduler::schedule() call, so
# its value at exit() is the number of events scheduled (cancelled timer
# events included). Needs gdb and Debian's ns2-dbg (debug symbols).
# Not for timing: the run is under a debugger.
# Usage: bench/peers/ns2-events.sh N [SIMTIME_S]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
gdb -batch -ex 'break exit' -ex run -ex 'print Scheduler::uid_' \
    --args ns "$here/ns2/dumbbell.tcl" "$1" "${2:-60}" 2>&1 |
    grep -E '^ns2 flows=|^\$1 = ' | sed 's/^\$1 = /ns2_scheduled_events=/'
