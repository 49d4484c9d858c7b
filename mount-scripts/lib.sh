# shellcheck shell=bash
# lib.sh: what the scripts in mount-scripts/ share, sourced by each of them
# relative to its own path:  . "${BASH_SOURCE[0]%/*}/lib.sh"
# (and by tests/run, tests/bench/run and the install test, for the
# messages).
#
# It owns the messages (die, warn, say, prefixed with the script's name),
# the pid checks (is a pid alive, is it the process we started: its own
# /proc entry, never a search by name), the time helpers (milliseconds,
# polls with a deadline and sub-second sleeps, stopping a pid), the check
# that a directory a script writes in as root is its own (private_dir),
# and the registry of the servers start-server started (REGISTRY_DIR, its
# lock, its entries, the pid files in a run dir).
#
# It never runs anything when sourced (it only defines), never signals a
# process it has not checked by pid, and never finds one by a name
# pattern.  Lock order: the registry lock (flock on REGISTRY_DIR/lock) is
# the only lock; take it through with_registry_lock and call nothing that
# takes it again.

# The script's name, for messages; a script may set PROG before sourcing
# (tests/run and tests/bench/run would both be "run").
PROG=${PROG:-${0##*/}}
readonly PROG
readonly REGISTRY_DIR=${INTRFS_REGISTRY_DIR:-/tmp/intrfs-servers}

# --- messages ---------------------------------------------------------------

die() {
    printf '%s: error: %s\n' "$PROG" "$*" >&2
    exit 1
}

warn() {
    printf '%s: warning: %s\n' "$PROG" "$*" >&2
}

# The script's first comment without its '# ' marks: its --help text.
header_help() {
    sed -n '2,/^[^#]/{/^#/!d;s/^# \{0,1\}//;p}' "$0"
}

# The "Usage:" line of the script's first comment.
usage_line() {
    sed -n 's/^# \(Usage: .*\)/\1/p' "$0"
}

# A bad argument: says so, then how to call (the script's usage()), exit 2.
usage_error() {
    printf '%s: error: %s\n' "$PROG" "$*" >&2
    usage >&2
    exit 2
}

# On stdout, unless the script set quiet=true.
say() {
    [[ ${quiet:-false} == true ]] || printf '%s: %s\n' "$PROG" "$*"
}

# Dies unless running as root; $1, if given, says why root is needed.
# shellcheck disable=SC2120 # the reason is optional
check_root() {
    ((EUID == 0)) || die "must be run as root${1:+ ($1)}"
}

# private_dir DIR: makes DIR (0755) if it is missing, then dies unless it
# is a directory, not a symbolic link, of ours, that nobody else may write
# in.  A script run as root writes files in DIR by their names: in a
# directory others may write in (/tmp), a name could be planted there
# first, a symbolic link towards a file of root's.
private_dir() {
    local dir=$1 owner mode
    [[ -L $dir ]] && die "$dir is a symbolic link: not writing in it"
    [[ -e $dir ]] || mkdir -m 0755 -p -- "$dir" 2>/dev/null || die "cannot create $dir"
    [[ -d $dir && ! -L $dir ]] || die "$dir is not a directory"
    read -r owner mode < <(stat -c '%u %a' -- "$dir")
    [[ $owner == "$EUID" ]] ||
        die "$dir belongs to uid $owner, not to uid $EUID: not writing in it"
    ((8#$mode & 8#022)) &&
        die "others may write in $dir (mode $mode): not writing in it"
    return 0
}

# Dies unless VALUE (of environment variable NAME) is a whole number.
check_seconds() {
    local name=$1 value=$2
    [[ $value =~ ^[0-9]+$ ]] || die "$name must be a whole number of seconds"
}

# --- time -------------------------------------------------------------------

# Milliseconds since the epoch; EPOCHREALTIME spares a fork per poll (its
# decimal separator follows the locale, so keep only the digits).
now_ms() {
    if [[ -n ${EPOCHREALTIME:-} ]]; then
        local us=${EPOCHREALTIME//[!0-9]/}
        echo $((10#$us / 1000))
    else
        local t
        t=$(date +%s%N)
        echo $((t / 1000000))
    fi
}

# poll_until MS INTERVAL COMMAND...: runs COMMAND every INTERVAL seconds
# (fractions allowed) until it succeeds (returns 0) or MS milliseconds have
# passed (returns 1).  COMMAND may die itself to end the wait early.
poll_until() {
    local deadline=$(($(now_ms) + $1)) interval=$2
    shift 2
    until "$@"; do
        (($(now_ms) < deadline)) || return 1
        sleep "$interval"
    done
}

# --- pids -------------------------------------------------------------------

# True if PID is a live process (zombies count as dead).
pid_alive() {
    local pid=$1 state
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$pid/status" 2>/dev/null) || return 1
    [[ -n $state && $state != Z ]]
}

pid_gone() {
    ! pid_alive "$1"
}

# True if PID is a live process whose comm is NAME.
pid_is() {
    local pid=$1 name=$2 comm
    pid_alive "$pid" || return 1
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
    [[ $comm == "$name" ]]
}

# terminate_pid PID WHAT TIMEOUT: SIGCONT and SIGTERM, wait up to TIMEOUT
# seconds, then SIGKILL and wait up to 5 s more.  Returns 0 once PID is
# gone.  The caller has checked that PID is the process it means.
terminate_pid() {
    local pid=$1 what=$2 timeout=$3
    # A SIGSTOPped process only acts on SIGTERM once continued.
    kill -CONT "$pid" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
    poll_until $((timeout * 1000)) 0.05 pid_gone "$pid" && return 0
    printf '%s: %s (pid %s) ignored SIGTERM for %ss, sending SIGKILL\n' \
        "$PROG" "$what" "$pid" "$timeout" >&2
    kill -KILL "$pid" 2>/dev/null || true
    poll_until 5000 0.05 pid_gone "$pid"
}

# --- the servers start-server started -----------------------------------------

# Prints the pid of the ganesha.nfsd serving RUN_DIR, if one is alive.
ganesha_pid_of() {
    local dir=$1 pid cmdline
    pid=$(cat "$dir/ganesha.pid" 2>/dev/null) || return 1
    pid_is "$pid" ganesha.nfsd || return 1
    cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
    [[ $cmdline == *" -f $dir/ganesha.conf "* ]] || return 1
    echo "$pid"
}

# Prints the pid of the start-server still starting an instance in RUN_DIR,
# if it is alive.
starter_pid_of() {
    local dir=$1 pid
    pid=$(cat "$dir/starting" 2>/dev/null) || return 1
    pid_alive "$pid" || return 1
    echo "$pid"
}

# The registry file that says start-server started an instance in RUN_DIR.
registry_entry() {
    local hash
    hash=$(printf '%s' "$1" | md5sum)
    echo "$REGISTRY_DIR/instances/${hash%% *}"
}

# Prints the run dir of every registered instance, one a line.
registry_run_dirs() {
    local entry line
    for entry in "$REGISTRY_DIR"/instances/*; do
        [[ -f $entry ]] || continue
        line=$(sed -n 's/^run_dir=//p' "$entry" | head -n 1)
        [[ -n $line ]] && echo "$line"
    done
}

# Runs "$@" while holding the registry lock that start-server and
# stop-server share (fd 9, never passed to daemons).
with_registry_lock() {
    private_dir "$REGISTRY_DIR"
    mkdir -p "$REGISTRY_DIR/instances"
    (
        flock -w 60 9 || die "could not lock $REGISTRY_DIR/lock"
        "$@"
    ) 9>"$REGISTRY_DIR/lock"
}
