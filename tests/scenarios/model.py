"""The fault matrix's model: what each cell must do, as a typed table.

A cell is (mode, policy, fault, op, signal, caller region); its outcome is
the result the process must see, the time bounds, the resets and the
export, and the reason, one rule per case.  tests/scenarios/matrix writes
a scenario file per cell from it and tests/scenarios/merge reads its
dimensions; MATRIX.md explains the dimensions and every class of cells
whose outcome had to be reasoned out.  This module only computes: it
reads and writes nothing.

Where the op waits when the signal comes (Where):
  REQUEST    an interruptible FUSE request whose task waits for a reply or
             a connection, in the mount's wait mode (killable, intr:
             interruptible, nointr: uninterruptible); the request's region
             is killable (killable, soft, softerr), uninterruptible
             (nointr) or none (intr).  O_DIRECT reads, create, remove,
             rename, readdir, a COMMIT, a write() whose connection is down.
  WBWAIT     an fsync, or the FUSE_FLUSH of a buffered write's close()
             (its write() calls returned once their records left), waiting
             for the file's write-behind jobs in writeback.c's
             wait_writes(): an INTERRUPTIBLE per-call condition wait
             (mutex_lock_interruptible style) inside the request's region.
  SEND       a write() whose WRITE record is partly sent and stuck
             (xprt.c send_record: a nested killable region over an
             INTERRUPTIBLE socket wait) - the seed's scenario.
  READAHEAD  a buffered read: the READs are readahead requests, which get
             no FUSE_INTERRUPT; the reader waits killably on the page lock
             in the kernel, whatever the daemon does.
  NONE       the fault never holds the op past the signal (it completes
             before 300 ms): the signal finds the workload over.
How long the op is held (Hold): LONG (past the soft major timeout, until
the fault ends), SHORT (one retransmission timeout, 0.5 s), DELAY (each
reply 0.8 s late), NONE.
"""

import dataclasses
import enum
from typing import Iterator, NamedTuple, Optional


class Mode(enum.Enum):
    HARD_KILLABLE = "hard-killable"
    HARD_INTR = "hard-intr"
    HARD_NOINTR = "hard-nointr"
    SOFT = "soft"
    SOFTERR = "softerr"


class Policy(enum.Enum):
    REGION = "region"
    PERCALL = "percall"
    # Only where region and percall expect different outcomes (differs()).
    SIGMASK = "sigmask"
    # percall with send=killable: the per-call fix.
    PERCALL_SEND_KILLABLE = "percall-send-killable"


class Fault(enum.Enum):
    STALL = "stall"
    DELAY = "delay"
    DROP_REPLY = "drop-reply"
    DUP_REPLY = "dup-reply"
    RESET = "reset"
    BLACKHOLE = "blackhole"
    PARTITION_DROP = "partition-drop"
    PARTITION_REJECT = "partition-reject"
    RESTART = "restart"
    CORRUPT = "corrupt"
    # A lock waiter's own: no fault; every LOCK reply late; the reply of
    # the LOCK sent when the holder lets go, lost.
    WAIT = "wait"
    GRANT_DELAY = "grant-delay"
    GRANT_DROP = "grant-drop"


class Op(enum.Enum):
    READ_DIRECT = "read-direct"
    READ_BUFFERED = "read-buffered"
    WRITE = "write"
    CREATE = "create"
    REMOVE = "remove"
    RENAME = "rename"
    READDIR = "readdir"
    FSYNC = "fsync"
    LOCK = "lock"


class Signal(enum.Enum):
    NONE = "none"
    SIGINT_HANDLER = "sigint-handler"
    SIGINT_DEFAULT = "sigint-default"
    SIGKILL = "sigkill"
    SIGALRM_RESTART = "sigalrm-restart"
    STORM = "storm"


class Caller(enum.Enum):
    NONE = "none"
    KILLABLE = "killable"
    UNINTERRUPTIBLE = "uninterruptible"


class Where(enum.Enum):
    REQUEST = "request"
    WBWAIT = "wbwait"
    SEND = "send"
    READAHEAD = "readahead"
    NONE = "none"


class Hold(enum.Enum):
    LONG = "long"
    SHORT = "short"
    DELAY = "delay"
    NONE = "none"


class Kind(enum.Enum):
    """What a signal is to the op."""
    NONE = "none"
    FATAL = "fatal"
    HANDLED = "handled"


class Resets(enum.Enum):
    """What the cell asserts of the connection's resets."""
    UNCHECKED = ""
    ZERO = "resets=0"
    SOME = "resets>=1"


# The dimensions, in the order the cells are listed.
MODES = list(Mode)
POLICIES = [Policy.REGION, Policy.PERCALL]
FAULTS = [f for f in Fault
          if f not in (Fault.WAIT, Fault.GRANT_DELAY, Fault.GRANT_DROP)]
OPS = [o for o in Op if o is not Op.LOCK]
SIGNALS = list(Signal)
# A lock waiter's own faults and signals (see lock_outcome()).  No storm:
# an intr mount's LOCK call waits interruptibly, and a storm with
# SA_RESTART would cut and restart it forever (Linux's lock calls wait
# killably).
LOCK_FAULTS = [Fault.WAIT, Fault.GRANT_DELAY, Fault.GRANT_DROP]
LOCK_SIGNALS = [s for s in Signal if s is not Signal.STORM]
# Caller regions (see caller_outcome()), on the cells where a signal meets
# a synchronous FUSE wait that a region decides: an O_DIRECT read, a
# write's send or close()'s flush, fsync, create, remove, rename.  Not a
# buffered read: its READs are readahead requests, which get no
# FUSE_INTERRUPT, so no region can hold back what never comes.  Not with
# no signal, nor under the faults that hold nothing (the signal comes at
# 3 s, after the op): there a region has nothing to hold back, and the
# cell would be the one without it.  readdir and lock waits are decided
# by regions too, but are left out to bound the product: readdir's
# READDIRPLUS waits as an O_DIRECT READ does, and a lock waiter has its
# own faults and model (MATRIX.md).
CALLERS = [Caller.KILLABLE, Caller.UNINTERRUPTIBLE]
CALLER_OPS = [Op.READ_DIRECT, Op.WRITE, Op.FSYNC, Op.CREATE, Op.REMOVE,
              Op.RENAME]
CALLER_FAULTS = [Fault.STALL, Fault.DELAY, Fault.DROP_REPLY, Fault.BLACKHOLE,
                 Fault.PARTITION_DROP, Fault.PARTITION_REJECT, Fault.RESTART]
CALLER_SIGNALS = [s for s in Signal if s is not Signal.NONE]


class Cell(NamedTuple):
    mode: Mode
    policy: Policy
    fault: Fault
    op: Op
    signal: Signal
    caller: Caller = Caller.NONE

    @property
    def name(self) -> str:
        """MODE.POLICY/FAULT/OP/SIGNAL, then /caller-KIND with a region."""
        n = (f"{self.mode.value}.{self.policy.value}/{self.fault.value}/"
             f"{self.op.value}/{self.signal.value}")
        if self.caller is not Caller.NONE:
            n += f"/caller-{self.caller.value}"
        return n

    @classmethod
    def parse(cls, name: str) -> "Cell":
        """The cell a name names; ValueError if it names none."""
        parts = name.split("/")
        if len(parts) not in (4, 5) or "." not in parts[0]:
            raise ValueError(name)
        mode, policy = parts[0].split(".", 1)
        caller = Caller.NONE
        if len(parts) == 5:
            if not parts[4].startswith("caller-"):
                raise ValueError(name)
            caller = Caller(parts[4][len("caller-"):])
            if caller is Caller.NONE:
                raise ValueError(name)
        return cls(Mode(mode), Policy(policy), Fault(parts[1]), Op(parts[2]),
                   Signal(parts[3]), caller)


def fmt_ms(ms: int) -> str:
    """A duration as the scenario language writes it: 15s, 1800ms."""
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


@dataclasses.dataclass(frozen=True)
class Bounds:
    """A time range in milliseconds; None where it is open."""
    lo: Optional[int] = None
    hi: Optional[int] = None

    def words(self, what: str) -> list:
        w = []
        if self.lo is not None:
            w.append(f"{what}>={fmt_ms(self.lo)}")
        if self.hi is not None:
            w.append(f"{what}<={fmt_ms(self.hi)}")
        return w

    def open_below(self) -> "Bounds":
        return Bounds(None, self.hi)


NO_BOUNDS = Bounds()


@dataclasses.dataclass
class Outcome:
    """What a cell must do.  result: the outcomes allowed, in the runner's
    words (ok, killed, an errno); latency: from the signal to the
    process's end; elapsed: from time 0."""
    result: tuple = ()
    latency: Bounds = NO_BOUNDS
    elapsed: Bounds = NO_BOUNDS
    resets: Resets = Resets.UNCHECKED
    # True: the failed call's effect is known to be on the export.
    export_new: bool = False
    why: str = ""
    # Where the op waits when the signal comes, and how long it is held.
    where: Where = Where.NONE
    hold: Hold = Hold.NONE

    def expect(self) -> str:
        """The scenario's expect line's words."""
        w = ["result=" + "|".join(self.result)]
        w += self.latency.words("latency") + self.elapsed.words("elapsed")
        if self.resets is not Resets.UNCHECKED:
            w.append(self.resets.value)
        if self.export_new:
            w.append("export=new")
        return " ".join(w)

    def decides(self) -> tuple:
        """What differs() compares: the result and the time bounds."""
        return (self.result, self.latency, self.elapsed)


# --- the rules -------------------------------------------------------------
#
# Every mount is timeo=5,retrans=1: a call is sent again after 0.5 s, and a
# soft call fails at its major timeout, 0.5 + 0.5 = 1.0 s after it began
# (Linux's timing: the waits are cut at the major timeout; a hard call
# starts over then, so it is sent every 0.5 s while nothing answers).

def where_of(fault: Fault, op: Op) -> Where:
    if fault in (Fault.DUP_REPLY, Fault.RESET, Fault.CORRUPT):
        return Where.NONE
    if op is Op.READ_BUFFERED:
        return Where.READAHEAD
    if op is Op.WRITE:
        # The call direction is stuck (stall dir=call), or nothing is
        # acknowledged (partition drop: no ACK, so the send buffer never
        # grows past its first few KiB): the record send blocks.
        if fault in (Fault.STALL, Fault.PARTITION_DROP):
            return Where.SEND
        # The connection is reset at once (RST): the write() itself waits
        # to reconnect, in the wait mode.
        if fault is Fault.PARTITION_REJECT:
            return Where.REQUEST
        # The records leave; replies are late or lost (restart: the
        # server dies at 200 ms, after they left): close() waits in
        # FUSE_FLUSH, which runs as fsync does (wb_sync: wait_writes, then
        # COMMIT), and - measured - does get an INTERRUPT: the kernel's
        # forced request skips only the killable wait, not the first
        # interruptible one (request_wait_answer).
        return Where.WBWAIT
    if op is Op.FSYNC:
        # The WRITE left (1 MiB fits in the socket buffers, measured under
        # partition drop too), its reply is held: fsync waits for the job.
        if fault in (Fault.STALL, Fault.DELAY, Fault.BLACKHOLE,
                     Fault.PARTITION_DROP):
            return Where.WBWAIT
        # The COMMIT's reply is the one lost or mangled; the connection is
        # reset at once: the write() waits to reconnect.
        return Where.REQUEST
    return Where.REQUEST


def hold_of(fault: Fault) -> Hold:
    if fault in (Fault.STALL, Fault.BLACKHOLE, Fault.PARTITION_DROP,
                 Fault.PARTITION_REJECT, Fault.RESTART):
        return Hold.LONG
    if fault is Fault.DROP_REPLY:
        return Hold.SHORT
    if fault is Fault.DELAY:
        return Hold.DELAY
    return Hold.NONE


def kind_of(sig: Signal) -> Kind:
    if sig is Signal.NONE:
        return Kind.NONE
    if sig in (Signal.SIGINT_DEFAULT, Signal.SIGKILL):
        return Kind.FATAL
    return Kind.HANDLED


def resends(fault: Fault) -> bool:
    """Whether the fault has the op's call sent again while the signal is
    pending: after its timeout (nothing answers, or the reply is late or
    lost) or on a new connection (a partition).  Class 7a: under percall
    that send's INTERRUPTIBLE wait may meet the interrupt.  Not restart,
    whose replay has its own class (4)."""
    return fault in (Fault.BLACKHOLE, Fault.STALL, Fault.DELAY,
                     Fault.DROP_REPLY, Fault.PARTITION_DROP,
                     Fault.PARTITION_REJECT)


def soft_error(mode: Mode) -> Optional[str]:
    return {Mode.SOFT: "EIO", Mode.SOFTERR: "ETIMEDOUT"}.get(mode)


def late_kill(hold: Hold) -> Bounds:
    """A fatal signal held until the call ends: when that is."""
    return {Hold.LONG: Bounds(1200, 15000), Hold.SHORT: Bounds(50, 6000),
            Hold.DELAY: Bounds(200, 10000)}.get(hold, Bounds(None, 6000))


def base_why(hold: Hold, serr: Optional[str]) -> str:
    if hold is Hold.LONG:
        if serr:
            return (f"the call fails with {serr} at its major timeout "
                    "(0.5+0.5 s), before the fault ends")
        return ("a hard mount retries until the fault ends, then the call "
                "completes")
    if hold is Hold.SHORT:
        return ("the lost reply is made up by a retransmission at timeo "
                "(0.5 s), same XID")
    if hold is Hold.DELAY:
        return "each reply is 0.8 s late, within every mode's budget"
    return "nothing holds the call"


def outcome(cell: Cell) -> Outcome:
    """The outcome the code says the cell must have."""
    if cell.caller is not Caller.NONE:
        return caller_outcome(cell)
    if cell.op is Op.LOCK:
        return lock_outcome(cell)
    if cell.policy is Policy.PERCALL_SEND_KILLABLE:
        return send_killable_outcome(cell)
    return policy_outcome(cell)


def caller_outcome(cell: Cell) -> Outcome:
    """A caller region: the process declared one (region KIND) around its
    own requests, and each of its requests runs inside it, outside the
    mount's own region (fusefs/workers.c job_run).  Under region and
    sigmask the task's region stack is enforced, so a request's effective
    mode is the strictest of the stack:
      killable         an intr mount (its own region: none) runs as a
                       killable one; every other mode is at least that;
      uninterruptible  a hard mount runs as a nointr one: even a fatal
                       signal waits for the call to end (a dying caller's
                       flush is not cut short either: interrupt.c
                       caller_holds_fatal); a soft mount's call still
                       fails at its major timeout, so a handled signal
                       changes nothing (as on soft alone), and a fatal one
                       kills the process once the call ended, by its
                       answer or by that timeout.
    Under percall and the per-call fix (percall-send-killable) the stack
    is recorded, not enforced: the outcome is the cell's without it."""
    mode, policy, caller = cell.mode, cell.policy, cell.caller
    p, c = policy.value, caller.value
    if policy in (Policy.PERCALL, Policy.PERCALL_SEND_KILLABLE):
        o = outcome(cell._replace(caller=Caller.NONE))
        o.why = (f"{p} records the caller's {c} region and enforces none of "
                 f"it, so the outcome is the one without it: {o.why}")
        return o
    eff = mode
    if caller is Caller.KILLABLE and mode is Mode.HARD_INTR:
        eff = Mode.HARD_KILLABLE
        why = ("the caller's killable region encloses the request, where an "
               f"intr mount puts none of its own: {p} enforces it, so the "
               "request runs as on hard,killable")
    elif caller is Caller.UNINTERRUPTIBLE and mode in (Mode.HARD_KILLABLE,
                                                       Mode.HARD_INTR):
        eff = Mode.HARD_NOINTR
        why = (f"the caller's uninterruptible region encloses the mount's "
               f"own ({mode.value}): {p} enforces the strictest of the "
               "stack, so the request runs as on hard,nointr")
    elif caller is Caller.UNINTERRUPTIBLE and mode in (Mode.SOFT,
                                                       Mode.SOFTERR):
        why = ("the caller's uninterruptible region encloses the soft "
               f"mount's killable one: {p} enforces the strictest of the "
               "stack, but a soft call still fails at its major timeout")
    else:
        why = (f"the caller's {c} region encloses the mount's own "
               f"({mode.value}), which is at least as strict: nothing "
               "changes")
    o = policy_outcome(cell._replace(mode=eff, caller=Caller.NONE))
    if (caller is Caller.UNINTERRUPTIBLE and eff is not mode
            and kind_of(cell.signal) is Kind.FATAL):
        # The caller's region holds a fatal signal no longer than
        # caller_hold_max= (default: the major timeout, 1.0 s here), then
        # it is delivered as under killable; the exit's flush may be held
        # as long again.
        o.latency = Bounds(min(o.latency.lo or 0, 900) or None, 4000)
        o.why = (f"{why}; {o.why}; but the caller's region holds the fatal "
                 "signal no longer than caller_hold_max= (by default the "
                 "major timeout, 1.0 s): the process dies by then")
        return o
    if (caller is Caller.UNINTERRUPTIBLE and mode in (Mode.SOFT, Mode.SOFTERR)
            and kind_of(cell.signal) is Kind.FATAL):
        # Held until the call ends: the reply after a short hold or a
        # delay, the major timeout (1.0 s from the call's start, 0.7 s
        # after the signal) after a long one; the exit's flush, not cut
        # short, waits for the write-behind jobs' own timeouts.
        o.result, o.elapsed, o.export_new = ("killed",), NO_BOUNDS, False
        if o.hold is Hold.LONG:
            o.latency = Bounds(500, 15000)
        else:
            o.latency = late_kill(o.hold)
        # The held call is sent again until it ends: a restart's
        # reconnection is made while it waits.
        if cell.fault is Fault.RESTART:
            o.resets = Resets.SOME
        o.why = (f"{why}; the fatal signal waits for the call to end, at its "
                 "answer or its major timeout (EIO), and the process dies "
                 "then; the exit's flush is not cut short either")
        return o
    o.why = f"{why}; {o.why}"
    return o


def send_killable_outcome(cell: Cell) -> Outcome:
    """percall with send=killable, the per-call fix: the send's own waits
    (the send lock, room in the socket) are killable, every other wait
    keeps its per-call mode.  So a handled signal no longer ends a stuck
    record send or a retransmission's send (region's outcome there), while
    fsync's INTERRUPTIBLE wait for write-behind still leaks EINTR
    (percall's)."""
    fault, op, sig = cell.fault, cell.op, cell.signal
    kind = kind_of(sig)
    where = where_of(fault, op)
    # A storm on a write or fsync that is not stuck in its send also
    # reaches the wait for write-behind that follows (class 9): percall's.
    storm_on_write = sig is Signal.STORM and op in (Op.WRITE, Op.FSYNC)
    if kind is Kind.HANDLED and (
            where is Where.SEND or
            (where is Where.REQUEST and resends(fault) and
             not storm_on_write)):
        o = policy_outcome(cell._replace(policy=Policy.REGION))
        rest = o.why.removeprefix("region/sigmask: ")
        o.why = ("send=killable: the send's waits are killable, so the "
                 f"handled signal does not end it, as under region; {rest}")
        if sig is Signal.STORM and where is Where.SEND and o.result == ("ok",):
            # Measured: EINTR from close() after 2.16 s.
            o.result, o.elapsed = ("ok", "EINTR"), NO_BOUNDS
            o.why += ("; but the storm outlasts the write, and close()'s "
                      "flush waits for the last WRITEs' replies in an "
                      "INTERRUPTIBLE wait that send=killable does not "
                      "cover: EINTR from close() if a signal lands there")
        return o
    o = policy_outcome(cell._replace(policy=Policy.PERCALL))
    if where is Where.WBWAIT and kind is Kind.HANDLED:
        o.why = f"send=killable fixes the send only: {o.why}"
    return o


def policy_outcome(cell: Cell) -> Outcome:
    """A cell without a caller region, under region, sigmask or percall."""
    mode, fault, op = cell.mode, cell.fault, cell.op
    where, hold = where_of(fault, op), hold_of(fault)
    serr = soft_error(mode)
    o = Outcome(where=where, hold=hold)

    # What the op does with no signal (or a signal that changes nothing).
    if hold is Hold.LONG:
        if serr:
            # soft/softerr: the call fails at its major timeout, 1.0 s
            # (twice that for a buffered read, which retries with a
            # synchronous READ); the fault outlasts it.
            base = serr
            base_el = Bounds(900, 6000 if where is Where.READAHEAD else 5000)
        else:
            base = "ok"
            if fault is Fault.RESTART:
                # Down from 200 ms for 2 s plus the server's start.
                base_el = Bounds(2000, 15000)
            elif fault in (Fault.PARTITION_DROP, Fault.PARTITION_REJECT):
                # Reconnection is paced by the connect backoff (at most
                # 2 s) and attempts bounded to 2 s.
                base_el = Bounds(1800, 15000)
            else:
                base_el = Bounds(1800, 12000)
    elif hold is Hold.SHORT:
        # The reply is lost (or its header mangled): the call is sent
        # again at timeo (0.5 s) with the same XID and answered, by the
        # duplicate request cache for non-idempotent calls.
        base, base_el = "ok", Bounds(400, 6000)
    elif hold is Hold.DELAY:
        # 0.8 s per reply is within a soft call's 1.0 s budget.
        base, base_el = "ok", Bounds(700, 10000)
    else:
        base, base_el = "ok", Bounds(None, 6000)

    # Faults that hold nothing: whatever the signal, it comes after the
    # workload is over.
    if where is Where.NONE:
        o.result, o.elapsed = (base,), base_el
        o.why = ("the fault costs no wait (a duplicate reply is dropped as "
                 "an unknown XID; a reset mid-reply is followed by an "
                 "immediate reconnection from the same port, which netfault "
                 "keeps upstream, and a retransmission the server's "
                 "duplicate request cache answers: REMOVE and RENAME are not "
                 "run twice, CREATE is EXCLUSIVE), so the op is over before "
                 f"the signal, sent at {fmt_ms(SIG_AT_AFTER_MS)} for these "
                 "cells")
        o.resets = Resets.SOME if fault is Fault.RESET else Resets.ZERO
        if fault is Fault.CORRUPT:
            # Measured, then read in xprt_recv.c: the rule's first draw
            # (seed 0) flips byte 18 of the 24-byte reply header, the
            # verifier's length, so the header does not decode; a reply
            # that does not decode fails its own call at once with EPROTO
            # (documented there), which FUSE gets as EIO (workers.c) - on
            # hard mounts too, where Linux would retry a garbage reply
            # twice (tk_garb_retry).  Only a buffered read survives: the
            # failed readahead READ is asked again by the kernel's
            # synchronous read_folio, and nth=1 spares that one.
            o.result = ("ok",) if op is Op.READ_BUFFERED else ("EIO",)
            o.why = ("the first reply of the op's procedure has its verifier "
                     "length flipped (seed 0 draws header byte 18): it does "
                     "not decode, and intrfs fails that call at once with "
                     "EPROTO, EIO to the caller, on every mount (a buffered "
                     "read is retried by the kernel's read_folio and "
                     "succeeds); the signal comes after the workload is over")
        return o

    kind = kind_of(cell.signal)
    if kind is Kind.NONE:
        o.result, o.elapsed = (base,), base_el
        o.why = "no signal: " + base_why(hold, serr)
    elif kind is Kind.FATAL:
        fatal_outcome(cell, o)
    else:
        handled_outcome(cell, o, base, base_el)

    # Resets, where certain.
    if fault is Fault.RESTART:
        # Each is a disconnection followed by a reconnection to netfault
        # while the op still needs the server: certain when the process's
        # answer comes from the server that came back (ok, or the errno
        # it gave) or waited for it (a late kill).  A process ended by
        # the signal 100 ms after the restart leaves an abandoned call,
        # which needs no connection, or write-behind that reconnects when
        # its retransmission timer says so: whether that was before the
        # count is taken, as the fault ends, is timing (measured: resets
        # 0 in 3 of the 510 such cells of the whole matrix, 1 to 3 in
        # the others).
        ends_at_signal = (bool({"killed", "EINTR"} & set(o.result)) and
                          o.latency.lo is None)
        if not ends_at_signal:
            o.resets = Resets.SOME
    elif fault in (Fault.PARTITION_REJECT, Fault.PARTITION_DROP):
        if o.result == ("ok",) and not serr:
            o.resets = Resets.SOME
    elif fault in (Fault.DELAY, Fault.DROP_REPLY):
        # Retransmissions on the same connection; a delayed, blackholed or
        # stalled stream is acknowledged (or its window closed) so it is
        # no dead path.  Not when a partial record was cut (a fatal
        # signal, or percall piercing the send), which resets the
        # connection.  (Not asserted under stall and blackhole: a stalled
        # create was measured with one reconnection.)
        if where is not Where.SEND:
            o.resets = Resets.ZERO
        elif o.result == ("ok",) and cell.policy is not Policy.PERCALL:
            o.resets = Resets.ZERO
    # The lost duplicate request cache: the replayed REMOVE/RENAME meets a
    # server that no longer has the name.
    if fault is Fault.RESTART and o.result == ("ok",):
        if op is Op.REMOVE:
            o.result, o.export_new = ("ENOENT",), True
            o.why += ("; the REMOVE ran, its reply was dropped, the server "
                      "restarted without its DRC: the retransmitted REMOVE "
                      "gets NFS3ERR_NOENT and intrfs reports it as it is "
                      "(ENOENT, the Linux client's behaviour), though the "
                      "file is gone")
        elif op is Op.RENAME:
            o.result, o.export_new = ("ENOENT",), True
            o.why += ("; the RENAME ran, its reply was dropped, the restarted "
                      "server has no DRC: the retransmission finds no source "
                      "name, NFS3ERR_NOENT, reported as ENOENT; the export "
                      "holds the renamed file")
        elif op is Op.CREATE:
            o.why += ("; the CREATE is EXCLUSIVE with a verifier, so its "
                      "replay on a server without DRC finds the file with "
                      "the same verifier and succeeds")
        elif op in (Op.WRITE, Op.FSYNC):
            o.why += ("; the restart changed the write verifier: the COMMIT "
                      "sees it and the data is resent FILE_SYNC, so the "
                      "bytes are on the export")
    return o


def fatal_outcome(cell: Cell, o: Outcome) -> None:
    """A fatal signal: SIGKILL, or SIGINT with its default action."""
    mode, policy, where = cell.mode, cell.policy, o.where
    o.result = ("killed",)
    if where is Where.READAHEAD:
        o.latency = Bounds(None, 1000)
        o.why = ("a buffered reader waits killably on the page lock in the "
                 "kernel (readahead has no FUSE_INTERRUPT and needs no "
                 "answer): a fatal signal ends it at once on every mount, "
                 "nointr too")
        return
    # request, wbwait, send: an INTERRUPT comes, the watcher reads SigPnd
    # and raises a fatal interrupt.
    if mode is Mode.HARD_NOINTR:
        if policy is Policy.PERCALL and where in (Where.WBWAIT, Where.SEND):
            o.latency = Bounds(None, 1000)
            o.why = ("percall does not enforce the uninterruptible region: "
                     f"the per-call INTERRUPTIBLE wait ({where.value}) ends "
                     "on the interrupt and the process dies at once")
            if where is Where.SEND:
                o.why += (" (the partly sent record is abandoned and the "
                          "connection reset)")
        elif (policy is Policy.PERCALL and where is Where.REQUEST and
              resends(cell.fault)):
            # Class 7a with a fatal signal (measured: killed at 0.50 s).
            o.latency = Bounds(None, 15000)
            o.why = ("nointr, percall: the reply wait is uninterruptible, but "
                     "the call is sent again every 0.5 s and percall lets the "
                     "retransmission's INTERRUPTIBLE send wait decide: if it "
                     "has to wait, the fatal interrupt ends it and the "
                     "process dies then; if not, when the call completes "
                     "after the fault")
        else:
            o.latency = late_kill(o.hold)
            o.why = ("nointr: the request's uninterruptible region (or its "
                     "uninterruptible reply wait) holds even a fatal "
                     "interrupt; the kernel waits for the daemon's answer, "
                     "so the process dies once the call completes after the "
                     "fault")
        return
    o.latency = Bounds(None, 1000)
    if where is Where.SEND:
        o.why = ("a fatal interrupt may cut a partly sent record (killable "
                 "nested region): the connection is reset and the process "
                 "dies at once")
    else:
        o.why = ("killable, intr, soft and softerr let a fatal interrupt "
                 "through: the daemon answers EINTR, and the process dies "
                 "of the signal at once")


def handled_outcome(cell: Cell, o: Outcome, base: str,
                    base_el: Bounds) -> None:
    """A signal with a handler: SIGINT handler, SIGALRM SA_RESTART, a
    SIGURG storm."""
    mode, policy, fault, sig = cell.mode, cell.policy, cell.fault, cell.signal
    where, hold = o.where, o.hold
    op_is_write = cell.op in (Op.WRITE, Op.FSYNC)
    serr = base if base != "ok" else None
    if where is Where.READAHEAD:
        o.result, o.elapsed = (base,), base_el
        o.why = ("readahead requests get no FUSE_INTERRUPT: a handled signal "
                 f"does nothing, even on intr ({base_why(hold, serr)})")
        return
    if mode is Mode.HARD_INTR:
        if (where is Where.SEND and policy is not Policy.PERCALL and
                fault is Fault.PARTITION_DROP):
            o.result, o.latency = ("EINTR",), Bounds(None, 15000)
            o.why = ("intr, region, partition drop: the record is partly "
                     "sent, so the interrupt is deferred by the nested "
                     "killable region; but the receiver finds the path dead "
                     "after 1 s (nothing acknowledged) and drops the "
                     "connection, the send ends, and the call waits to "
                     "reconnect in an interruptible wait, where the deferred "
                     "interrupt is delivered: EINTR (measured); the process "
                     "ends after close(), which waits for the earlier WRITEs "
                     "until the partition heals")
            return
        if where is Where.SEND and policy is not Policy.PERCALL:
            # The reasoned case: see MATRIX.md.
            if sig is Signal.STORM:
                o.result = ("ok", "EINTR")
                o.why = ("intr, region: the stuck write()'s record is partly "
                         "sent, inside the nested killable region, so its "
                         "interrupt is held until the record is out (after "
                         "the fault) and the write is answered as sent; but "
                         "the storm goes on while the remaining WRITEs go "
                         "out, and a signal that catches one of them before "
                         "its first byte ends it with EINTR: which happens "
                         "first is timing")
            else:
                o.result, o.elapsed = ("ok",), base_el
                o.why = ("intr, region: the stuck write()'s record is partly "
                         "sent, inside the nested killable region, so the "
                         "INTERRUPT is deferred; once the fault ends the "
                         "record goes out whole and the write is answered as "
                         "sent (write-behind) before any interruptible "
                         "point, which flushes the deferred interrupt; the "
                         "next writes meet no signal")
            return
        o.result, o.latency = ("EINTR",), Bounds(None, 1000)
        # write, fsync: the process ends after close(), which waits for the
        # WRITEs that went before (FUSE_FLUSH has no INTERRUPT).
        if where in (Where.SEND, Where.WBWAIT) or op_is_write:
            o.latency = Bounds(None, 15000)
        o.why = ("intr: no region around the request, the wait is "
                 "interruptible: the INTERRUPT ends it and the daemon "
                 "answers EINTR (FUSE cannot restart a call, so SA_RESTART "
                 "changes nothing)")
        return
    # killable, nointr, soft, softerr.
    if policy is Policy.PERCALL and where in (Where.SEND, Where.WBWAIT):
        # The runner times the process's end, after its close(), and
        # close() waits for the WRITEs that went before (no INTERRUPT):
        # the EINTR is prompt, the end is not.
        o.result, o.latency = ("EINTR",), Bounds(None, 15000)
        if where is Where.SEND:
            o.why = ("percall: the record send waits INTERRUPTIBLE (the "
                     "sendmsg() of the seed) and the region around it is not "
                     "enforced: the partly sent record is abandoned, the "
                     "connection reset, and the hard mount leaks EINTR - the "
                     "seed's bug")
        else:
            o.why = ("percall: fsync (or close()'s FUSE_FLUSH, which runs the "
                     "same wb_sync) waits for the write-behind jobs with an "
                     "INTERRUPTIBLE condition wait (like "
                     "mutex_lock_interruptible) and the request's region is "
                     "not enforced: EINTR leaks out of a mount that should "
                     "not be interrupted")
        return
    if (policy is Policy.PERCALL and sig is Signal.STORM and
            hold is Hold.LONG and not serr and where is Where.REQUEST and
            op_is_write and fault is Fault.PARTITION_REJECT):
        # Measured (partition reject), then reasoned: the write() waits to
        # reconnect in the killable wait mode, so the first signals do
        # nothing; but the storm goes on, and the next request - the
        # fsync, or close()'s flush - gets its own INTERRUPT if one comes
        # while it waits for the write-behind job in an INTERRUPTIBLE
        # wait, which percall lets through.  That wait lasts as long as
        # the last WRITEs' replies take, a few ms against the storm's
        # 5 ms: measured EINTR in 6 of 12 such cells of a matrix run, ok
        # in the others (the write's own replies already in).
        o.result, o.latency = ("EINTR", "ok"), Bounds(None, 15000)
        o.why = ("percall, storm: the write() itself waits to reconnect in "
                 "the killable wait mode and is not interrupted, but the "
                 "storm outlasts it and interrupts the fsync (or close()'s "
                 "flush) that follows if a signal comes while it waits "
                 "INTERRUPTIBLE for the write-behind job: EINTR leaks, or "
                 "the replies were in first and the flush does not wait")
        return
    if (policy is Policy.PERCALL and where is Where.REQUEST and
            resends(fault)):
        # Measured both ways: ok (or EIO at 1.0 s on soft) in most runs,
        # EINTR at 1.50 s on hard,killable and at 0.50 s on soft under
        # loaded runs.  Nothing answers, so the call is sent again at
        # 0.5 s (and every 0.5 s after) with the handled signal still
        # pending.  percall lets the retransmission's INTERRUPTIBLE send
        # wait decide: when the send does not have to wait (the usual
        # case) the call goes on, to completion after the fault or to the
        # soft timeout; when it does (the send lock, a full socket buffer
        # on a loaded machine), the pending interrupt ends it and EINTR
        # leaks, the seed's bug at a retransmission.  Region and sigmask
        # hold it back either way.
        o.result, o.elapsed = (base, "EINTR"), base_el.open_below()
        if serr:
            o.why = ("percall: the soft call is sent again at 0.5 s with the "
                     "handled signal pending; the retransmission's send "
                     "waits INTERRUPTIBLE only if it has to wait at all, so "
                     f"the outcome is {serr} at the major timeout (it did "
                     "not) or EINTR at a retransmission (it did: the seed's "
                     "bug at a retransmission), as the scheduler decides")
        else:
            o.why = ("percall: the hard mount sends the call again every "
                     "0.5 s with the handled signal pending; the "
                     "retransmission's send waits INTERRUPTIBLE only if it "
                     "has to wait at all, so the outcome is ok (it did not) "
                     "or EINTR (it did: the seed's bug at a "
                     "retransmission), as the scheduler decides")
        return
    o.result, o.elapsed = (base,), base_el
    if where is Where.SEND:
        why = ("region/sigmask: the partly sent record's killable region "
               "(inside the request's region) holds the handled signal back; "
               "the write completes once the fault ends")
    elif where is Where.WBWAIT:
        why = ("region/sigmask: the request's region (fsync, or close()'s "
               "FUSE_FLUSH) makes the INTERRUPTIBLE wait for the write-behind "
               "jobs killable (or uninterruptible), so the handled signal is "
               "deferred")
    else:
        why = ("a handled signal is a normal interrupt; the request's "
               "killable (or uninterruptible) region and the reply wait's "
               "own mode hold it back")
    o.why = f"{why}; {base_why(hold, serr)}"


def lock_outcome(cell: Cell) -> Outcome:
    """A waiter for another process's lock (F_SETLKW; the holder lets go
    at 1 s).  It sleeps in locks.c's wait for the grant: an INTERRUPTIBLE
    wait, as Linux's nlmclnt_wait(), inside the request's region (killable
    on killable, soft and softerr mounts, uninterruptible on nointr, none
    on intr).  A signal that ends the wait is answered EINTR only once the
    waiter's CANCEL (or the UNLOCK of what it may have been granted) is
    through, and the lock is never the waiter's after: the runner checks,
    once the call returned, that another process can take it, or that it
    cannot when the call succeeded.  FUSE makes the EINTR of a lock
    request ERESTARTSYS: with SA_RESTART the wait starts again.  Under
    grant-delay the signal finds the waiter in its first LOCK call's reply
    wait, in the mount's wait mode (interruptible on intr); the interrupt
    is sticky, so under percall the wait for the grant that follows
    delivers it.  grant-drop loses a reply the client gets again by
    retransmitting at timeo (0.5 s): the lock is the owner's already."""
    mode, policy, fault, sig = cell.mode, cell.policy, cell.fault, cell.signal
    kind = kind_of(sig)
    o = Outcome(where=Where.REQUEST, hold=Hold.NONE)
    p = policy.value
    # What the request's region holds back from the INTERRUPTIBLE wait:
    # nothing, a normal interrupt (killable), or every one (nointr).
    if policy in (Policy.PERCALL, Policy.PERCALL_SEND_KILLABLE):
        held = Kind.NONE
    elif mode is Mode.HARD_INTR:
        held = Kind.NONE
    elif mode is Mode.HARD_NOINTR:
        held = Kind.FATAL
    else:
        held = Kind.HANDLED
    granted = Bounds(900, 6000)
    if kind is Kind.NONE:
        o.result, o.elapsed = ("ok",), granted
        o.why = ("no signal: the waiter is granted the lock once the holder "
                 "lets go at 1 s (the LOCK is sent again every 0.5 s: no "
                 "callback can come while the server's lock manager holds "
                 "nlockmgr on this host)")
    elif kind is Kind.FATAL:
        o.result = ("killed",)
        o.latency = Bounds(None, 1000)
        o.why = ("a fatal interrupt ends the wait whatever region encloses "
                 "it (nointr's too): a lock wait is not I/O in flight, "
                 "nothing is half done when it ends; its CANCEL is sent "
                 "first, and the kernel waits for the answer; the process "
                 "dies, holding nothing")
    elif held is not Kind.NONE:
        o.result, o.elapsed = ("ok",), granted
        o.why = (f"{p}, {mode.value}: the request's region holds the handled "
                 "signal back from the INTERRUPTIBLE wait for the grant; the "
                 "waiter is granted the lock at 1 s")
    elif sig is Signal.SIGALRM_RESTART:
        o.result, o.elapsed = ("ok",), granted
        o.why = ("nothing holds the signal back: the wait ends, the CANCEL "
                 "goes, EINTR is answered, and FUSE's ERESTARTSYS makes the "
                 "SA_RESTART caller send F_SETLKW again, granted at 1 s")
    else:
        o.result, o.latency = ("EINTR",), Bounds(None, 1200)
        if mode is Mode.HARD_INTR:
            o.why = ("intr: no region around the request: the INTERRUPTIBLE "
                     "wait ends, the waiter's CANCEL is sent, EINTR "
                     "answered; the lock is never the waiter's after")
        else:
            o.why = (f"{p}: the region is not enforced, the INTERRUPTIBLE "
                     "wait for the grant decides (Linux's nlmclnt_wait() is "
                     "interruptible in every mount mode): EINTR after the "
                     "CANCEL; the lock is never the waiter's after")
    if fault is Fault.GRANT_DELAY:
        if o.result == ("ok",):
            o.elapsed = Bounds(900, 8000)
        # Measured: EINTR 1.0 s after the signal (the first reply, then
        # the CANCEL and UNLOCK behind netfault's late replies).
        if o.result == ("EINTR",):
            o.latency = Bounds(None, 2500)
        # nointr's region holds even a fatal signal while the LOCK is on
        # the wire: it ends the wait that follows, once the late reply is
        # in (measured: 1.0 s after the signal).
        if o.result == ("killed",) and held is Kind.FATAL:
            o.latency = Bounds(None, 2500)
        o.why += ("; every LOCK reply is 0.8 s late, so the signal finds the "
                  "waiter in its first LOCK's reply wait (the mount's wait "
                  "mode; interruptible on intr, where a LOCK cut mid-way is "
                  "cancelled and unlocked), and a grant comes up to 0.8 s "
                  "later")
    elif fault is Fault.GRANT_DROP:
        if o.result == ("ok",):
            o.elapsed = Bounds(900, 8000)
        o.why += ("; the reply of the LOCK sent about when the holder lets "
                  "go is lost, and its retransmission at timeo (0.5 s) is "
                  "answered GRANTED: the lock is the owner's already")
    o.resets = Resets.ZERO
    return o


# --- the cells ---------------------------------------------------------------

def differs(cell: Cell) -> bool:
    """Whether percall and region expect different things here: only then
    are a sigmask and a per-call fix cell made (MATRIX.md)."""
    a = outcome(cell._replace(policy=Policy.REGION)).decides()
    b = outcome(cell._replace(policy=Policy.PERCALL)).decides()
    return a != b


def _with_columns(cell: Cell) -> Iterator[Cell]:
    for p in POLICIES:
        yield cell._replace(policy=p)
    if differs(cell):
        yield cell._replace(policy=Policy.SIGMASK)
        yield cell._replace(policy=Policy.PERCALL_SEND_KILLABLE)


def all_cells() -> Iterator[Cell]:
    """Every cell, in the matrix's order."""
    for mode in MODES:
        for fault in FAULTS:
            for op in OPS:
                for sig in SIGNALS:
                    yield from _with_columns(
                        Cell(mode, Policy.REGION, fault, op, sig))
        for fault in LOCK_FAULTS:
            for sig in LOCK_SIGNALS:
                yield from _with_columns(
                    Cell(mode, Policy.REGION, fault, Op.LOCK, sig))
    # The caller-region cells, on the ops, faults and signals where a
    # region can decide something (CALLERS).
    for caller in CALLERS:
        for mode in MODES:
            for fault in CALLER_FAULTS:
                for op in CALLER_OPS:
                    for sig in CALLER_SIGNALS:
                        yield from _with_columns(
                            Cell(mode, Policy.REGION, fault, op, sig, caller))


def is_cell(cell: Cell) -> bool:
    """Whether a parsed cell is one of the matrix's dimensions' values
    (a lock fault only with the op lock and the other way round, a caller
    region only where the caller dimension is)."""
    if (cell.op is Op.LOCK) != (cell.fault in LOCK_FAULTS):
        return False
    if cell.op is Op.LOCK and cell.signal not in LOCK_SIGNALS:
        return False
    return True


# The CI subset: fixed and named, so a failure names the same cell each run.
CI_FIXED = """
hard-killable.region/delay/read-buffered/none
hard-killable.region/drop-reply/remove/none
hard-killable.region/dup-reply/rename/none
hard-killable.region/reset/write/none
hard-killable.region/blackhole/create/none
hard-killable.percall/partition-drop/fsync/sigint-handler
soft.region/partition-reject/read-direct/none
hard-killable.region/restart/remove/none
hard-killable.region/corrupt/readdir/none
hard-nointr.region/stall/write/sigkill
hard-intr.region/stall/read-buffered/sigint-handler
hard-killable.region/stall/readdir/sigkill
"""
CI_LOCKS = """
hard-killable.sigmask/wait/lock/sigint-handler
hard-killable.region/wait/lock/none
hard-killable.region/wait/lock/sigkill
hard-nointr.region/wait/lock/sigkill
hard-killable.percall/wait/lock/sigalrm-restart
hard-intr.region/grant-delay/lock/sigint-handler
hard-killable.percall/grant-delay/lock/sigint-handler
hard-killable.region/grant-drop/lock/none
soft.percall/grant-drop/lock/sigint-default
"""
# Caller regions: a killable one on intr and an uninterruptible one on
# hard and soft mounts, under region and sigmask, where the outcome is not
# the one without the region (13 cells: a handled signal held back, a
# fatal one held until the call ends); under percall, where it is
# (recorded only: 3); and a soft call that still times out inside an
# uninterruptible region (1).  A daemon without caller regions fails each
# (ENOTTY from region).
CI_CALLERS = """
hard-intr.region/stall/read-direct/sigint-handler/caller-killable
hard-intr.sigmask/stall/read-direct/sigint-handler/caller-killable
hard-intr.percall/stall/read-direct/sigint-handler/caller-killable
hard-intr.region/stall/fsync/sigalrm-restart/caller-killable
hard-intr.region/partition-drop/write/sigint-handler/caller-killable
hard-intr.sigmask/delay/rename/sigint-handler/caller-killable
hard-intr.region/drop-reply/create/storm/caller-killable
hard-killable.region/stall/read-direct/sigkill/caller-uninterruptible
hard-killable.sigmask/stall/read-direct/sigkill/caller-uninterruptible
hard-killable.percall/stall/read-direct/sigkill/caller-uninterruptible
hard-intr.region/stall/write/sigkill/caller-uninterruptible
hard-killable.region/stall/fsync/sigint-default/caller-uninterruptible
hard-intr.region/blackhole/remove/sigint-handler/caller-uninterruptible
soft.region/stall/create/sigkill/caller-uninterruptible
softerr.sigmask/blackhole/rename/sigint-default/caller-uninterruptible
hard-killable.percall/stall/fsync/sigint-handler/caller-uninterruptible
softerr.region/stall/read-direct/sigint-handler/caller-uninterruptible
"""


def ci_cells() -> Iterator[Cell]:
    def named(text):
        return (Cell.parse(n) for n in text.split())
    # 1. Every mode x signal on one blocking fault: an O_DIRECT read under
    #    a reply stall (region).
    for mode in MODES:
        for sig in SIGNALS:
            yield Cell(mode, Policy.REGION, Fault.STALL, Op.READ_DIRECT, sig)
    # 2. The seed's case under every policy: a 16 MiB write stuck in its
    #    record send, SIGINT with a handler.
    for mode in (Mode.HARD_KILLABLE, Mode.HARD_NOINTR, Mode.SOFT,
                 Mode.HARD_INTR):
        for p in (Policy.REGION, Policy.PERCALL, Policy.SIGMASK):
            yield Cell(mode, p, Fault.STALL, Op.WRITE, Signal.SIGINT_HANDLER)
    # The per-call fix: it fixes the send...
    yield Cell(Mode.HARD_KILLABLE, Policy.PERCALL_SEND_KILLABLE, Fault.STALL,
               Op.WRITE, Signal.SIGINT_HANDLER)
    # 3. ...not the second percall leak: fsync waiting for write-behind.
    for p in Policy:
        yield Cell(Mode.HARD_KILLABLE, p, Fault.STALL, Op.FSYNC,
                   Signal.SIGINT_HANDLER)
    # 4. Every fault once, every op at least once.
    yield from named(CI_FIXED)
    # 5. A lock waiter hit by a handled signal under every mode and the two
    #    policies, and the rest of its signals and faults once.
    for mode in MODES:
        for p in POLICIES:
            yield Cell(mode, p, Fault.WAIT, Op.LOCK, Signal.SIGINT_HANDLER)
    yield from named(CI_LOCKS)
    # 6. Caller regions.
    yield from named(CI_CALLERS)


# --- what a cell's scenario file says ------------------------------------------

TIMEO_OPTS = "timeo=5,retrans=1"
# A blocking fault lasts WINDOW, long enough past 1.0 s that a soft call
# fails before it ends and a hard call outlives it; the signal comes at
# 300 ms, when every blocking fault has the call stuck.
WINDOW = "2s"
# A buffered read that fails its readahead READ asks again with a
# synchronous READ (filemap_read_folio): a soft mount times out twice
# (1.0 s, then 1.0 s more), so its fault must outlast 2 s.
WINDOW_RA = "4s"
DELAY_MS = 800
SIG_AT = "300ms"
# A fault that holds nothing: the signal comes once the op is surely over
# (measured: a 3 MiB write and its close, COMMIT included, took up to
# 330 ms on a loaded machine, so 300 ms would be a race).
SIG_AT_AFTER_MS = 3000

# The procedure an op's fault is aimed at (drop, duplicate, reset, corrupt).
PROC_OF = {Op.READ_DIRECT: "READ", Op.READ_BUFFERED: "READ", Op.WRITE: "WRITE",
           Op.FSYNC: "COMMIT", Op.CREATE: "CREATE", Op.REMOVE: "REMOVE",
           Op.RENAME: "RENAME", Op.READDIR: "READDIRPLUS"}

MOUNT_OF = {Mode.HARD_KILLABLE: "hard,killable", Mode.HARD_INTR: "hard,intr",
            Mode.HARD_NOINTR: "hard,nointr", Mode.SOFT: "soft",
            Mode.SOFTERR: "softerr"}


def mount_opts(cell: Cell) -> str:
    m = MOUNT_OF[cell.mode]
    if cell.policy is Policy.PERCALL_SEND_KILLABLE:
        # The per-call fix: percall, with a send that waits killably.
        return f"{m},policy=percall,send=killable,{TIMEO_OPTS}"
    return f"{m},policy={cell.policy.value},{TIMEO_OPTS}"


def workload(cell: Cell) -> str:
    """The workload line.  A write is several WRITEs: 16 MiB under a call
    stall (and a dropping partition), so that the records overrun the
    loopback socket buffers and a write() sits in its record send, the
    seed's case; 3 MiB elsewhere, which leaves at once and is waited for
    by close()."""
    if cell.op is Op.WRITE:
        if cell.fault in (Fault.STALL, Fault.PARTITION_DROP):
            return "write size=16M chunk=1M"
        return "write size=3M chunk=1M"
    return {Op.READ_DIRECT: "read size=1M chunk=1M direct",
            Op.READ_BUFFERED: "read size=1M chunk=1M",
            Op.FSYNC: "fsync size=1M chunk=1M",
            Op.CREATE: "create", Op.REMOVE: "remove", Op.RENAME: "rename",
            Op.READDIR: "readdir entries=100",
            # Another process holds the file's lock until 1 s past time 0.
            Op.LOCK: "lock hold=1s"}[cell.op]


def fault_lines(cell: Cell) -> list:
    fault, op = cell.fault, cell.op
    w = WINDOW_RA if op is Op.READ_BUFFERED else WINDOW
    p = PROC_OF.get(op)
    if fault is Fault.STALL:
        # A write's WRITEs are stuck going out (the call direction:
        # netfault stops reading, the socket buffers fill); every other op
        # is stuck waiting for its reply.
        d = "call" if op is Op.WRITE else "reply"
        return [f"at=0 for={w} netfault stall dir={d}"]
    if fault is Fault.RESTART:
        # The op's reply is lost, then the server dies and comes back: the
        # retransmission meets a server without its duplicate request
        # cache.  Down at least 2 s (4 s for a buffered read, whose soft
        # timeout comes twice).  Measured with 1 s: soft calls raced the
        # restart (ganesha starts in a few hundred ms), an fsync and a
        # buffered read succeeded.
        down = "4s" if op is Op.READ_BUFFERED else "2s"
        return [f"at=0 netfault drop dir=reply proc={p} nth=1",
                f"at=200ms for={down} restart"]
    line = {
        Fault.DELAY: f"at=0 for={w} netfault delay {DELAY_MS} dir=reply",
        Fault.DROP_REPLY: f"at=0 netfault drop dir=reply proc={p} nth=1",
        Fault.DUP_REPLY: f"at=0 netfault duplicate dir=reply proc={p} nth=1",
        Fault.RESET: f"at=0 netfault reset after=16 dir=reply proc={p} nth=1",
        Fault.BLACKHOLE: f"at=0 for={w} netfault blackhole",
        Fault.PARTITION_DROP: f"at=0 for={w} partition drop",
        Fault.PARTITION_REJECT: f"at=0 for={w} partition reject",
        Fault.CORRUPT: f"at=0 netfault corrupt header dir=reply proc={p} nth=1",
        Fault.WAIT: None,
        Fault.GRANT_DELAY: (f"at=0 netfault delay {DELAY_MS} dir=reply "
                            "prog=NLM proc=LOCK"),
        Fault.GRANT_DROP: "at=0 netfault drop dir=reply prog=NLM proc=LOCK nth=3",
    }[fault]
    return [line] if line else []


def signal_line(cell: Cell, where: Where) -> str:
    at = fmt_ms(SIG_AT_AFTER_MS) if where is Where.NONE else SIG_AT
    return {
        Signal.NONE: "none",
        Signal.SIGINT_HANDLER: f"SIGINT handler at={at}",
        Signal.SIGINT_DEFAULT: f"SIGINT default at={at}",
        Signal.SIGKILL: f"SIGKILL at={at}",
        Signal.SIGALRM_RESTART: f"SIGALRM restart at={at}",
        # Go's runtime preempts with SIGURG, its handlers SA_RESTART.
        Signal.STORM: f"SIGURG restart at={at} every=5ms",
    }[cell.signal]


def fold(text: str, width: int) -> list:
    """text in lines of at most width characters, each broken after its
    last blank that fits (as fold -s does)."""
    lines, buf = [], ""
    for ch in text:
        if len(buf) + 1 > width:
            i = buf.rfind(" ")
            if i >= 0:
                lines.append(buf[:i + 1])
                buf = buf[i + 1:]
            else:
                lines.append(buf)
                buf = ""
        buf += ch
    lines.append(buf)
    return [ln.rstrip(" ") for ln in lines]


def scenario(cell: Cell) -> str:
    """The cell's scenario file, as intrfs-scenario reads it."""
    o = outcome(cell)
    why = fold(f"# Why: {o.why}", 76)
    out = ["# Generated by tests/scenarios/matrix; do not edit.", why[0]]
    out += ["#      " + ln for ln in why[1:]]
    out.append(f"name     {cell.name}")
    about = (f"{cell.mode.value} {cell.policy.value}, {cell.fault.value}, "
             f"{cell.op.value}, signal {cell.signal.value}")
    if cell.caller is not Caller.NONE:
        about += f", caller region {cell.caller.value}"
    out.append(f"about    {about}")
    out.append(f"mount    {mount_opts(cell)}")
    if cell.caller is not Caller.NONE:
        out.append(f"region   {cell.caller.value} the matrix's caller region")
    out += [f"fault    {ln}" for ln in fault_lines(cell)]
    out.append(f"workload {workload(cell)}")
    out.append(f"signal   {signal_line(cell, o.where)}")
    out.append("timeout  40s")
    out.append(f"expect   {o.expect()}")
    return "\n".join(out) + "\n"
