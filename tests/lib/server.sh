# tests/lib/server.sh, sourced by tests/run and tests/bench/run: a private
# nfs-ganesha for a run, started through mount-scripts/start-server, whose
# key=value lines are read here and nowhere else (without eval: an export
# path is data, not code).  Needs ROOT, the source tree.  Never stops a
# server: the caller that started one stops it with mount-scripts/stop-server.

# server_start RUN_DIR NFS_PORT MOUNT_PORT NLM_PORT RQUOTA_PORT [OPTION...]:
# starts the server (or finds the one running in RUN_DIR), with more of
# start-server's options if given (--export-fs ext4...), and sets
# SERVER_ADDR, SERVER_EXPORT, SERVER_NFS_PORT, SERVER_MOUNT_PORT and
# SERVER_PID.  Returns non-zero if it did not start.  The export is the
# filesystem start-server mounted (stop-server unmounts it).
server_start() {
  local out key value
  out=$("$ROOT/mount-scripts/start-server" --run-dir "$1" --nfs-port "$2" \
    --mount-port "$3" --nlm-port "$4" --rquota-port "$5" "${@:6}") || return 1
  SERVER_ADDR='' SERVER_EXPORT='' SERVER_NFS_PORT='' SERVER_MOUNT_PORT='' SERVER_PID=''
  while IFS='=' read -r key value; do
    case $key in
    server) SERVER_ADDR=$value ;;
    export) SERVER_EXPORT=$value ;;
    nfs_port) SERVER_NFS_PORT=$value ;;
    mount_port) SERVER_MOUNT_PORT=$value ;;
    pid) SERVER_PID=$value ;;
    esac
  done <<<"$out"
  if [[ -z $SERVER_ADDR || -z $SERVER_EXPORT || -z $SERVER_NFS_PORT ||
    -z $SERVER_MOUNT_PORT || -z $SERVER_PID ]]; then
    echo "start-server did not say where its server is:" >&2
    printf '%s\n' "$out" >&2
    return 1
  fi
}
