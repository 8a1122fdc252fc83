#!/usr/bin/env bash
# A throwaway PostgreSQL server for tidal's store tests.
#
#   scripts/pg-test-server.sh start DIR   # prints the server's URL on stdout
#   scripts/pg-test-server.sh stop DIR    # stops it and removes DIR
#
# The cluster lives entirely under DIR (data in DIR/data, log in DIR/log) and
# listens only on a Unix socket in DIR (listen_addresses=''), so it needs no
# free TCP port and nobody else can reach it. Authentication is trust for the
# local user; fsync stays on, so the tests see real commit latency.
#
# As root (CI), initdb and pg_ctl refuse to run, so they run as the postgres
# user through runuser and DIR is handed to that user; as a normal user they
# run directly. Typical use:
#
#   export TIDAL_TEST_POSTGRES_URL=$(scripts/pg-test-server.sh start /tmp/pg-tidal)
#   ctest --test-dir build -R store
#   scripts/pg-test-server.sh stop /tmp/pg-tidal
set -euo pipefail

PORT=5432  # names the socket file DIR/.s.PGSQL.5432; no TCP port is opened

die() {
  echo "pg-test-server: $*" >&2
  exit 1
}

usage() {
  echo "usage: $0 start|stop DIR" >&2
  exit 2
}

# The PostgreSQL server binaries: $PG_BIN, else the newest Debian install,
# else whatever is on PATH.
find_bin() {
  if [[ -n "${PG_BIN:-}" ]]; then
    echo "$PG_BIN"
    return
  fi
  local d best=""
  for d in /usr/lib/postgresql/*/bin; do
    [[ -x "$d/initdb" ]] && best=$d
  done
  if [[ -z "$best" ]] && command -v initdb >/dev/null; then
    best=$(dirname "$(command -v initdb)")
  fi
  [[ -n "$best" ]] || die "no PostgreSQL server binaries (initdb, pg_ctl) found: install the 'postgresql' package or set PG_BIN"
  echo "$best"
}

(($# == 2)) || usage
cmd=$1
DIR=$2
[[ -n "$DIR" ]] || usage
# The URL carries DIR unescaped, and a Unix socket path is limited to ~107 bytes.
[[ "$DIR" =~ ^[A-Za-z0-9/._-]+$ ]] || die "DIR '$DIR' may hold only letters, digits and / . _ -"
DIR=$(realpath -m -- "$DIR")
((${#DIR} <= 80)) || die "DIR '$DIR' is too long for a Unix socket path; use a shorter one (e.g. under /tmp)"

if [[ $(id -u) -eq 0 ]]; then
  id postgres >/dev/null 2>&1 || die "running as root, but there is no 'postgres' user to run the server as (install the 'postgresql' package)"
  AS=(runuser -u postgres --)
  DBUSER=postgres
else
  AS=()
  DBUSER=$(id -un)
fi

BIN=$(find_bin)

case "$cmd" in
  start)
    if [[ -e "$DIR/data/PG_VERSION" ]]; then
      die "$DIR already holds a cluster; stop it first ($0 stop $DIR)"
    fi
    mkdir -p -- "$DIR"
    if [[ $(id -u) -eq 0 ]]; then
      chown postgres:postgres -- "$DIR"
      chmod 0700 -- "$DIR"
    fi
    "${AS[@]}" test -w "$DIR" -a -x "$DIR" ||
      die "user $DBUSER cannot write $DIR (is a parent folder closed to it? use a folder under /tmp)"

    # initdb's own fsyncs are skipped (the cluster is thrown away); the server runs with fsync on.
    if ! "${AS[@]}" "$BIN/initdb" -D "$DIR/data" -U "$DBUSER" --auth=trust -E UTF8 --locale=C --no-sync \
      >"$DIR/initdb.log" 2>&1; then
      cat "$DIR/initdb.log" >&2
      die "initdb failed in $DIR/data (log above)"
    fi
    cat >>"$DIR/data/postgresql.conf" <<EOF
# pg-test-server.sh: a private test server on a Unix socket only.
listen_addresses = ''
unix_socket_directories = '$DIR'
port = $PORT
fsync = on
max_connections = 200
EOF
    if ! "${AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/log" -w -t 60 start >/dev/null 2>&1; then
      cat "$DIR/log" >&2 2>/dev/null || true
      die "the server in $DIR did not start (log above)"
    fi
    for _ in $(seq 1 100); do
      if "$BIN/pg_isready" -q -h "$DIR" -p "$PORT" -U "$DBUSER" -d postgres; then
        echo "postgresql:///postgres?host=$DIR&port=$PORT&user=$DBUSER"
        exit 0
      fi
      sleep 0.1
    done
    die "the server in $DIR started but does not accept connections (see $DIR/log)"
    ;;
  stop)
    if [[ -e "$DIR/data/postmaster.pid" ]]; then
      "${AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1 ||
        echo "pg-test-server: pg_ctl stop failed in $DIR; removing it anyway" >&2
    fi
    # Only ever remove a folder this script set up.
    if [[ -e "$DIR/data/PG_VERSION" || -e "$DIR/initdb.log" ]]; then
      rm -rf -- "$DIR"
    elif [[ -d "$DIR" ]] && [[ -z "$(ls -A -- "$DIR")" ]]; then
      rmdir -- "$DIR"
    elif [[ -e "$DIR" ]]; then
      die "$DIR does not look like a pg-test-server folder; not removing it"
    fi
    ;;
  *)
    usage
    ;;
esac
