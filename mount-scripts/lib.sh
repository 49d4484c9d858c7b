# shellcheck shell=bash
# lib.sh: what the scripts in mount-scripts/ share, sourced by each of them
# relative to its own path:  . "${BASH_SOURCE[0]%/*}/lib.sh"
# (and by tests/run, tests/bench/run and the install test, for the
# messages).
#
# It owns the messages (die, warn, say, prefixed with the script's name),
# the pid checks (is a pid alive, is it the process we started: its own
# /proc entry, never a search by name), the time helpers (milliseconds,
# polls with a deadline and sub-second sleeps, stopping a pid), the paths
# a script run as root writes in (safe_dir: the safe-path rule, one
# directory held open at a time; fresh_dir; publish_dir and publish_file:
# output written as the user who owns where it goes; run_as), and the
# registry of the servers start-server started (REGISTRY_DIR, its lock,
# its entries, the pid files in a run dir).
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
# Root's own runtime directory: no fixed name in a world-writable one,
# which another user could make first.
readonly REGISTRY_DIR=${INTRFS_REGISTRY_DIR:-/run/intrfs/servers}

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

# --- paths root writes in ---------------------------------------------------
#
# Every other local user is hostile: a path given to a script run as root
# is walked from "/" one component at a time (safe_dir), each directory
# held open (exec {fd}<) and checked before the next is opened, refusing a
# symbolic link anywhere, a directory that belongs to neither root nor the
# invoking user, and one that others may write in unless it is sticky
# (OpenSSH's safe-path rule; lib/safepath.c is the same rule in C).  The
# script then writes through /proc/self/fd/FD/... (in itself and in the
# children that inherit FD), never through the path again.  Output meant
# for a directory of the invoking user's is made in a fresh private
# directory (fresh_dir) and copied there as that user (publish_dir,
# publish_file), so that the user's rights decide, not root's.  A path a
# root daemon is given (ganesha's config) can only be the path: the rule
# leaves nobody but root and the invoking user able to change it.

# The user on whose behalf this runs: SUDO_UID under sudo, else the real
# uid.
invoking_uid() {
    if ((UID == 0)) && [[ ${SUDO_UID:-} =~ ^[0-9]+$ ]]; then
        echo "$SUDO_UID"
    else
        echo "$UID"
    fi
}

# normalize_path PATH: PATH made absolute (against the physical working
# directory) with "." and ".." taken by their names; symbolic links are
# refused by the walk, so for the paths it accepts this is the path.
normalize_path() {
    local p=$1 part out=()
    [[ $p == /* ]] || p="$(pwd -P)/$p"
    while [[ -n $p ]]; do
        part=${p%%/*}
        if [[ $p == */* ]]; then p=${p#*/}; else p=; fi
        case $part in
            '' | .) ;;
            ..) ((${#out[@]} == 0)) || unset 'out[-1]' ;;
            *) out+=("$part") ;;
        esac
    done
    local IFS=/
    printf '/%s\n' "${out[*]}"
}

# run_as [-i] UID COMMAND...: COMMAND as UID, with that user's gid and
# groups (SUDO_GID for the invoking user; else passwd's); as root when UID
# is 0.  Nothing root opened goes to a process the user controls: its
# input is /dev/null (with -i, the caller's, a pipe), its output comes
# back through a pipe, and the callers hold no directory open then.
run_as() {
    local input=false uid gid entry
    [[ $1 == -i ]] && { input=true; shift; }
    uid=$1
    shift
    if ((uid == 0)); then
        "$@"
        return
    fi
    entry=$(getent passwd "$uid") || die "uid $uid has no passwd entry to write as"
    gid=$(cut -d: -f4 <<<"$entry")
    [[ $uid == "${SUDO_UID:-}" && ${SUDO_GID:-} =~ ^[0-9]+$ ]] && gid=$SUDO_GID
    if $input; then
        setpriv --reuid="$uid" --regid="$gid" --init-groups -- "$@" 2>&1 | cat >&2
    else
        setpriv --reuid="$uid" --regid="$gid" --init-groups -- "$@" </dev/null 2>&1 | cat >&2
    fi
    return "${PIPESTATUS[0]}"
}

# safe__check PATH SHOWN INFO: whether the directory whose stat INFO
# (type|uid|gid|mode) is may be written in by root: a directory, root's or
# the invoking user's, not writable by others unless sticky.  Returns 1
# with SAFE_ERROR saying why (naming PATH and SHOWN) when not.
safe__check() {
    local path=$1 shown=$2 type owner group mode inv
    IFS='|' read -r type owner group mode _ <<<"$3"
    inv=$(invoking_uid)
    if [[ $type == "symbolic link" ]]; then
        SAFE_ERROR="$path: $shown is a symbolic link: not followed as root (name what it points to)"
    elif [[ $type != directory ]]; then
        SAFE_ERROR="$path: $shown is not a directory"
    elif [[ $owner != 0 && $owner != "$inv" ]]; then
        SAFE_ERROR="$path: $shown belongs to uid $owner (neither root nor uid $inv, who runs this): not writing there as root"
    elif (((8#$mode & 8#002) || ((8#$mode & 8#020) && group != 0))) && ! ((8#$mode & 8#1000)); then
        SAFE_ERROR="$path: $shown is writable by others (mode $(printf '%04o' $((8#$mode)))) and not sticky: not writing there as root"
    else
        return 0
    fi
    return 1
}

# safe_dir_try VAR PATH [MODE]: PATH walked from "/" as above, every
# directory held open and checked before the next is opened; VAR gets the
# descriptor of PATH (use /proc/self/fd/$VAR/..., never PATH again),
# SAFE_PATH the normalized path and SAFE_OWNER its owner.  With MODE the
# missing directories are made (mkdir -m MODE, as root, each through its
# held parent, then checked as the others).  Returns 1
# with SAFE_ERROR naming PATH (or SAFE_FOR, what the caller was given, when
# set) and the component refused (SAFE_MISSING=true when one is missing),
# holding nothing.
safe_dir_try() {
    local -n safe__var=$1
    local path=${SAFE_FOR:-$2} mode=${3:-} norm rest part shown='' cur nfd next info id
    SAFE_MISSING=false
    norm=$(normalize_path "$2")
    if ! { exec {cur}</; } 2>/dev/null; then
        SAFE_ERROR="$path: cannot open /"
        return 1
    fi
    safe__check "$path" / "$(stat -c '%F|%u|%g|%a' /)" || { exec {cur}<&-; return 1; }
    rest=${norm#/}
    while [[ -n $rest ]]; do
        part=${rest%%/*}
        if [[ $rest == */* ]]; then rest=${rest#*/}; else rest=; fi
        shown+=/$part
        next=/proc/self/fd/$cur/$part
        if ! info=$(stat -c '%F|%u|%g|%a|%d:%i' -- "$next" 2>/dev/null); then
            if [[ -z $mode ]]; then
                # shellcheck disable=SC2034 # the caller's
                SAFE_ERROR="$path: $shown: no such directory" SAFE_MISSING=true
            elif ! mkdir -m "$mode" -- "$next" 2>/dev/null; then
                SAFE_ERROR="$path: cannot make $shown"
            elif ! info=$(stat -c '%F|%u|%g|%a|%d:%i' -- "$next" 2>/dev/null); then
                SAFE_ERROR="$path: $shown: gone as it was made"
            fi
            [[ -n $info ]] || { exec {cur}<&-; return 1; }
        fi
        # Checked before it is opened: an entry of root's or the
        # invoker's in a directory checked so cannot be swapped by
        # anyone else before the open (nor be a FIFO that holds it).
        safe__check "$path" "$shown" "$info" || { exec {cur}<&-; return 1; }
        if ! { exec {nfd}<"$next"; } 2>/dev/null; then
            SAFE_ERROR="$path: $shown: cannot open it"
            exec {cur}<&-
            return 1
        fi
        exec {cur}<&-
        cur=$nfd
        # What was opened is what was checked: else a link was swapped in.
        id=$(stat -L -c '%d:%i' -- "/proc/self/fd/$cur")
        if [[ $id != "${info##*|}" ]]; then
            SAFE_ERROR="$path: $shown changed while it was checked: not writing there"
            exec {cur}<&-
            return 1
        fi
    done
    # shellcheck disable=SC2034 # the caller's
    safe__var=$cur
    SAFE_PATH=$norm
    SAFE_OWNER=$(stat -L -c '%u' -- "/proc/self/fd/$cur")
}

# safe_dir VAR PATH [MODE]: safe_dir_try, dying with its message.
safe_dir() {
    safe_dir_try "$@" || die "$SAFE_ERROR"
}

# private_dir DIR: DIR made (0755) if it is missing by the walk above,
# then dies unless it is root's (the caller's) and nobody else may write
# in it.  For directories whose files a script writes by name.
private_dir() {
    local fd
    safe_dir fd "$1" 0755
    exec {fd}<&-
    [[ $SAFE_OWNER == "$EUID" ]] ||
        die "$1 belongs to uid $SAFE_OWNER, not to uid $EUID: not writing in it"
}

# fresh_dir VAR [PARENT [NAME]]: a directory made fresh (mktemp -d: 0700,
# root's), NAME.XXXXXX (default intrfs) in PARENT (default $TMPDIR, else
# /tmp), checked by the walk: VAR gets its path, which nobody but root can
# change.
fresh_dir() {
    local -n fresh__var=$1
    local parent=${2:-${TMPDIR:-/tmp}} name=${3:-intrfs} fd made
    safe_dir fd "$parent"
    made=$(mktemp -d "/proc/self/fd/$fd/$name.XXXXXX") || die "cannot make a directory in $parent"
    exec {fd}<&-
    # shellcheck disable=SC2034 # the caller's
    fresh__var=$SAFE_PATH/${made##*/}
}

# out_owner DEST: checks where DEST (a directory or a file to write) would
# go and prints the uid to write it as: DEST's owner if it is a directory
# there, else that of the nearest directory on its way that is there
# (root or the invoking user, by the walk).  Dies naming what is refused:
# also an early check, before a long run.
out_owner() {
    local norm name dir fd info uid
    norm=$(normalize_path "$1")
    name=${norm##*/}
    [[ -n $name ]] || die "$1: names /, not a place to write in"
    dir=${norm%/*}
    until SAFE_FOR=$1 safe_dir_try fd "${dir:-/}"; do
        $SAFE_MISSING || die "$SAFE_ERROR"
        dir=${dir%/*}
    done
    uid=$SAFE_OWNER
    if [[ $dir == "${norm%/*}" ]] &&
        info=$(stat -c '%F|%u|%g|%a' -- "/proc/self/fd/$fd/$name" 2>/dev/null) &&
        [[ $info != "regular file|"* ]]; then
        safe__check "$1" "$norm" "$info" || die "$SAFE_ERROR"
        IFS='|' read -r _ uid _ <<<"$info"
    fi
    exec {fd}<&-
    echo "$uid"
}

# publish_dir SRC DEST [STALE...]: SRC's files copied into the directory
# DEST (made, 0755, where missing), after the names STALE an earlier run
# left there are removed, as the uid out_owner says.  Root's: through
# DEST held open, so a link swapped in after the check is never
# followed.  The invoking user's: by the user, by the path, so the user's
# rights decide (the walk left nobody else able to change it), and no
# descriptor of root's goes to the user's processes.
publish_dir() {
    local src=$1 dest=$2 uid norm fd name
    shift 2
    uid=$(out_owner "$dest") || exit 1
    norm=$(normalize_path "$dest")
    if ((uid == 0)); then
        safe_dir fd "$norm" 0755
        [[ $SAFE_OWNER == 0 ]] || die "$dest: belongs to uid $SAFE_OWNER now: not writing in it as root"
        for name; do
            rm -rf -- "/proc/self/fd/$fd/$name"
        done
        tar -C "$src" -cf - . | tar -C "/proc/self/fd/$fd" -xf - --no-overwrite-dir ||
            die "cannot write into $dest"
        exec {fd}<&-
        return
    fi
    run_as "$uid" mkdir -p -m 0755 -- "$norm" || die "cannot make $dest (as uid $uid)"
    for name; do
        run_as "$uid" rm -rf -- "$norm/$name" || die "cannot remove $dest/$name (as uid $uid)"
    done
    tar -C "$src" -cf - . |
        run_as -i "$uid" tar -C "$norm" -xf - --no-same-owner --no-overwrite-dir ||
        die "cannot write into $dest (as uid $uid)"
}

# publish_file SRC DEST: SRC copied to the file DEST, as the uid out_owner
# says: made fresh beside it (mktemp) and renamed over it, so that no link
# or second name of DEST is written through; by root through its
# directory held open, by the invoking user by the path.
publish_file() {
    local src=$1 dest=$2 uid norm fd dir
    uid=$(out_owner "$dest") || exit 1
    norm=$(normalize_path "$dest")
    dir=${norm%/*}
    if ((uid == 0)); then
        SAFE_FOR=$dest safe_dir fd "${dir:-/}"
        dir=/proc/self/fd/$fd
    fi
    # shellcheck disable=SC2016 # the inner shell's
    cat "$src" | run_as -i "$uid" sh -c 'set -e; t=$(mktemp "$1/.intrfs.XXXXXX"); cat >"$t"; chmod 0644 "$t"; mv -fT "$t" "$1/$2"' \
        _ "${dir:-/}" "${norm##*/}" || die "cannot write $dest (as uid $uid)"
    [[ -z ${fd:-} ]] || exec {fd}<&-
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

# The registry, walked, made where missing (0755) and held open: REG_FD,
# and REG, the name to write in it by.  It must be root's (a directory of
# another user's made first, as /tmp/intrfs-servers could be, is refused
# naming its owner; the default is under root's /run).
registry_open() {
    [[ -z ${REG_FD:-} ]] || return 0
    safe_dir REG_FD "$REGISTRY_DIR" 0755
    [[ $SAFE_OWNER == 0 ]] ||
        die "the registry $REGISTRY_DIR belongs to uid $SAFE_OWNER: it must be root's (INTRFS_REGISTRY_DIR)"
    REG=/proc/self/fd/$REG_FD
    if [[ ! -d $REG/instances || -L $REG/instances ]]; then
        rm -f "$REG/instances"
        mkdir -m 0755 "$REG/instances" || die "cannot make $REGISTRY_DIR/instances"
    fi
}

# The registry file that says start-server started an instance in RUN_DIR
# (registry_open first).
registry_entry() {
    local hash
    hash=$(printf '%s' "$1" | md5sum)
    echo "$REG/instances/${hash%% *}"
}

# Prints the run dir of every registered instance, one a line.
registry_run_dirs() {
    local entry line
    for entry in "$REG"/instances/*; do
        [[ -f $entry ]] || continue
        line=$(sed -n 's/^run_dir=//p' "$entry" | head -n 1)
        [[ -n $line ]] && echo "$line"
    done
}

# Runs "$@" while holding the registry lock that start-server and
# stop-server share (fd 9, never passed to daemons), the registry open.
with_registry_lock() {
    registry_open
    (
        flock -w 60 9 || die "could not lock $REGISTRY_DIR/lock"
        "$@"
    ) 9>>"$REG/lock"
}
