# Shared by .ci/mariadb-pair and .ci/galera (sourced, not run): each mariadbd they start lives in
# a directory of its own, $dir/NAME, with its data directory, socket, pid file and error log.
# The sourcing script sets dir (the parent of those directories) and tool (its name, for
# messages).

sql() { # sql NAME STATEMENTS...: run as root over the instance's socket
  local name=$1; shift
  mariadb --protocol=socket --socket="$dir/$name/sock" -uroot -N -B -e "$*"
}

init_datadir() { # init_datadir NAME: a fresh data directory, unless it has one
  local d="$dir/$1"
  mkdir -p "$d"
  chown mysql:mysql "$d" 2>/dev/null || true
  if [ ! -d "$d/data/mysql" ]; then
    mariadb-install-db --user=mysql --datadir="$d/data" --auth-root-authentication-method=socket \
      --skip-test-db >"$d/install.log" 2>&1 || { cat "$d/install.log" >&2; exit 1; }
  fi
}

run_mariadbd() { # run_mariadbd NAME PORT ARGS...: start mariadbd in the background
  local name=$1 port=$2 d="$dir/$1"; shift 2
  # mariadbd refuses to run as root; --user=mysql drops to the mysql account.
  /usr/sbin/mariadbd --no-defaults --user=mysql --datadir="$d/data" --port="$port" \
    --bind-address=127.0.0.1 --socket="$d/sock" --pid-file="$d/pid" --log-error="$d/error.log" \
    --skip-name-resolve --innodb-buffer-pool-size=64M "$@" >/dev/null 2>&1 &
}

wait_sql() { # wait_sql NAME SECONDS: until the instance answers, or exit showing its log
  local name=$1 end=$((SECONDS + $2))
  while [ "$SECONDS" -lt "$end" ]; do
    sql "$name" "SELECT 1" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "$tool: $name did not start within $2 s; its log:" >&2
  tail -20 "$dir/$name/error.log" >&2 || true
  exit 1
}

stop_instance() { # stop_instance NAME SIGNAL: signal its mariadbd and wait (60 s) until it is gone
  local pidf="$dir/$1/pid" pid end=$((SECONDS + 60))
  [ -f "$pidf" ] || return 0
  pid=$(cat "$pidf")
  kill "-$2" "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do
    [ "$SECONDS" -lt "$end" ] || { echo "$tool: $1 (pid $pid) did not stop within 60 s" >&2; exit 1; }
    sleep 0.1
  done
  rm -f "$pidf"
}
