#!/usr/bin/env bash
# Local infrastructure for Attesta, without Docker: Kafka (KRaft, one node), PostgreSQL 15, Redis.
#
#   scripts/infra up       start what is not running, wait for real readiness, write $STATE/env
#   scripts/infra status   print each component's state (exit 0 only when all are ready)
#   scripts/infra down     stop what this script started (pid file + process identity checked)
#
# Everything lives under one state folder (default <repo>/.state, git-ignored; override with
# ATTESTA_STATE_DIR). Kafka's jars are fetched by Maven once and cached outside the repo
# (ATTESTA_CACHE_DIR, default ~/.cache/attesta). See deploy/README.md.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${ATTESTA_STATE_DIR:-$REPO/.state}"
CACHE="${ATTESTA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/attesta}"
PY="${ATTESTA_PYTHON:-$REPO/.venv/bin/python}"

# Ports can be moved (e.g. to run a second, independent set next to the usual one).
KAFKA_HOST=127.0.0.1 KAFKA_PORT="${ATTESTA_KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT="${ATTESTA_KAFKA_CONTROLLER_PORT:-$((KAFKA_PORT + 1))}"
PG_HOST=127.0.0.1 PG_PORT="${ATTESTA_PG_PORT:-15432}" PG_ADMIN=attesta_admin
PG_PASSWORD="${ATTESTA_PG_ADMIN_PASSWORD:-attesta-dev-only}"
PG_BIN="${ATTESTA_PG_BIN:-/usr/lib/postgresql/15/bin}"
REDIS_HOST=127.0.0.1 REDIS_PORT="${ATTESTA_REDIS_PORT:-16379}"

KAFKA_POM="$REPO/deploy/kafka/pom.xml"
KAFKA_VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$KAFKA_POM")"
LOG4J_VERSION="$(sed -n 's:.*<log4j2.version>\(.*\)</log4j2.version>.*:\1:p' "$KAFKA_POM")"
KAFKA_LIB="$CACHE/kafka-$KAFKA_VERSION/lib"
KAFKA_HEAP="${ATTESTA_KAFKA_HEAP:-512m}"
KAFKA_READY_TIMEOUT="${ATTESTA_KAFKA_READY_TIMEOUT:-120}"

OWN_KAFKA="$KAFKA_HOST:$KAFKA_PORT"
OWN_PG_URL="postgresql://$PG_ADMIN:$(python3 -c 'import sys, urllib.parse as u; print(u.quote(sys.argv[1], safe=""))' "$PG_PASSWORD")@$PG_HOST:$PG_PORT/postgres"
OWN_REDIS_URL="redis://$REDIS_HOST:$REDIS_PORT/0"

# Cluster mode (three brokers, SASL_SSL, ACLs): `--cluster` or ATTESTA_KAFKA_MODE=cluster.
KAFKA_MODE="${ATTESTA_KAFKA_MODE:-single}"
case " $* " in *" --cluster "*) KAFKA_MODE=cluster ;; esac

say() { printf '[infra] %s\n' "$*"; }
warn() { printf '[infra] WARNING: %s\n' "$*" >&2; }
die() { printf '[infra] ERROR: %s\n' "$*" >&2; exit 1; }
redact() { sed -E 's#//([^:/@]+):[^@]*@#//\1:***@#' <<<"$1"; } # hide a URL's password

# ---------------------------------------------------------------- process bookkeeping
# A pid file holds "<pid> <start-time-in-clock-ticks>"; a process is ours only when both match
# and its command line contains the expected marker. Reused pids are never mistaken for ours.
proc_starttime() { [ -r "/proc/$1/stat" ] && awk '{sub(/^.*\) /, ""); print $20}' "/proc/$1/stat"; }
proc_cmdline() { { tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null || true; }

record_pid() { # file pid
  local st; st="$(proc_starttime "$2")" || return 1
  printf '%s %s\n' "$2" "$st" >"$1"
}

# ours PIDFILE MARKER -> prints pid, returns 0 when that recorded process is alive and ours
ours() {
  local file="$1" marker="$2" pid st
  [ -s "$file" ] || return 1
  read -r pid st <"$file" || return 1
  [ -n "${pid:-}" ] && [ -d "/proc/$pid" ] || return 1
  [ "$(proc_starttime "$pid")" = "$st" ] || return 1
  [ "$(awk '{sub(/^.*\) /, ""); print $1}' "/proc/$pid/stat")" != Z ] || return 1
  case "$(proc_cmdline "$pid")" in *"$marker"*) ;; *) return 1 ;; esac
  echo "$pid"
}

# stop_pid PID NAME SECONDS: SIGTERM, wait, then SIGKILL
stop_pid() {
  local pid="$1" name="$2" secs="$3" i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < secs * 5; i++)); do
    [ -d "/proc/$pid" ] || return 0
    [ "$(awk '{sub(/^.*\) /, ""); print $1}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && return 0
    sleep 0.2
  done
  warn "$name (pid $pid) did not stop in ${secs}s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# start_bg LOGFILE PIDFILE CMD...: run detached in its own session, record pid + start time
start_bg() {
  local log="$1" pidfile="$2"; shift 2
  # In a non-interactive shell a background job is not a process-group leader, so setsid
  # execs in place and $! is the daemon itself.
  # Through close-fds: the daemon outlives us and must not hold our descriptors (fds 8/9 are
  # our lock files; a caller's `flock LOCK scripts/infra up` lock stayed held by the JVM).
  setsid "$REPO/scripts/close-fds" "$@" >>"$log" 2>&1 </dev/null &
  local pid=$!
  record_pid "$pidfile" "$pid" || die "process exited at once: $* (see $log)"
  echo "$pid"
}

external_marker() { echo "$STATE/$1.external"; }

# ---------------------------------------------------------------- Kafka
kafka_fetch_jars() {
  local want="kafka=$KAFKA_VERSION log4j2=$LOG4J_VERSION"
  if [ -f "$KAFKA_LIB/.complete" ] && [ "$(cat "$KAFKA_LIB/.complete")" = "$want" ]; then
    return 0
  fi
  mkdir -p "$CACHE"
  exec 8>"$CACHE/kafka-$KAFKA_VERSION.lock"
  flock 8
  if [ -f "$KAFKA_LIB/.complete" ] && [ "$(cat "$KAFKA_LIB/.complete")" = "$want" ]; then
    exec 8>&-; return 0 # another run fetched it while we waited
  fi
  command -v mvn >/dev/null || die "maven (mvn) is needed once to fetch the Kafka jars"
  say "kafka: fetching broker jars with Maven ($want) into $KAFKA_LIB (once)"
  local tmp="$CACHE/kafka-$KAFKA_VERSION/lib.tmp.$$" t0=$SECONDS
  rm -rf "$tmp"; mkdir -p "$tmp"
  if ! mvn -B -q -f "$KAFKA_POM" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$tmp" >"$CACHE/kafka-$KAFKA_VERSION/mvn.log" 2>&1; then
    tail -n 30 "$CACHE/kafka-$KAFKA_VERSION/mvn.log" >&2
    rm -rf "$tmp"
    die "maven could not fetch the Kafka jars (log: $CACHE/kafka-$KAFKA_VERSION/mvn.log)"
  fi
  ls "$tmp"/kafka_2.13-"$KAFKA_VERSION".jar "$tmp"/log4j-slf4j-impl-"$LOG4J_VERSION".jar >/dev/null \
    || die "maven finished but the broker or the slf4j binding jar is missing in $tmp"
  echo "$want" >"$tmp/.complete"
  rm -rf "$KAFKA_LIB"; mv "$tmp" "$KAFKA_LIB"
  say "kafka: $(ls "$KAFKA_LIB" | grep -c '\.jar$') jars ($(du -sh "$KAFKA_LIB" | cut -f1)) fetched in $((SECONDS - t0))s"
  exec 8>&-
}

kafka_write_config() {
  local d="$STATE/kafka"
  mkdir -p "$d/data" "$d/logs"
  cat >"$d/server.properties" <<EOF
# Generated by scripts/infra; edits are overwritten on every 'up'.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$KAFKA_HOST:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://$KAFKA_HOST:$KAFKA_PORT,CONTROLLER://$KAFKA_HOST:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$KAFKA_HOST:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$d/data

# One node: internal topics must not ask for 3 replicas (they would hang).
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.partitions=1
default.replication.factor=1
min.insync.replicas=1

# TODO(attesta): switch to false once every service creates its own topics at start-up.
auto.create.topics.enable=true
delete.topic.enable=true

# Compacted topics are used: the cleaner must run.
log.cleaner.enable=true
log.cleaner.threads=1
# Retention/compaction tests can use small segment.ms on their topics; check often.
log.retention.check.interval.ms=10000

# Sized for 2 cores.
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
EOF
  kafka_write_log4j "$d" attesta-kafka
}

kafka_write_log4j() { # dir name: log4j2 properties (avoids Kafka's YAML config), logs in dir/logs
  local d="$1"
  cat >"$d/log4j2.properties" <<EOF
# Generated by scripts/infra (log4j2 properties format; avoids Kafka's YAML config).
status = warn
name = $2
appender.file.type = RollingFile
appender.file.name = FILE
appender.file.fileName = $d/logs/server.log
appender.file.filePattern = $d/logs/server.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 50MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
logger.zk.name = org.apache.kafka.raft
logger.zk.level = INFO
EOF
}

kafka_cluster_id() {
  local f="$STATE/kafka/cluster.id"
  if [ ! -s "$f" ]; then
    # 22-character URL-safe base64 UUID, not starting with '-'.
    python3 - >"$f" <<'EOF'
import base64, uuid
while True:
    cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not cid.startswith("-"):
        print(cid)
        break
EOF
  fi
  cat "$f"
}

kafka_jvm() { # fills the KAFKA_JVM array (java command line without the main class)
  KAFKA_JVM=(java -Xms"$KAFKA_HEAP" -Xmx"$KAFKA_HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -Djava.awt.headless=true -Dattesta.infra=kafka
    -Dlog4j2.configurationFile="file:$STATE/kafka/log4j2.properties"
    -Dkafka.logs.dir="$STATE/kafka/logs"
    -cp "$KAFKA_LIB/*")
}

kafka_log_tail() {
  warn "last lines of $STATE/kafka/logs/server.log:"
  tail -n 40 "$STATE/kafka/logs/server.log" >&2 2>/dev/null || true
  if [ -s "$STATE/kafka/kafka.out" ]; then
    warn "last lines of $STATE/kafka/kafka.out:"
    tail -n 20 "$STATE/kafka/kafka.out" >&2
  fi
}

kafka_probe() { # bootstrap [pid] [timeout]
  [ -x "$PY" ] || die "no python venv at $PY: run scripts/install.sh first (the Kafka probe uses aiokafka)"
  "$PY" "$REPO/deploy/kafka/probe.py" --bootstrap "$1" ${2:+--pid "$2"} --timeout "${3:-10}"
}

kafka_up() {
  local ext="${KAFKA_BOOTSTRAP_SERVERS:-}" pid t0=$SECONDS
  if [ -n "$ext" ] && [ "$ext" != "$OWN_KAFKA" ]; then
    say "kafka: KAFKA_BOOTSTRAP_SERVERS=$ext is set; probing it"
    if kafka_probe "$ext" "" 15; then
      say "kafka: using EXTERNAL broker $ext (not starting our own)"
      echo "$ext" >"$(external_marker kafka)"; KAFKA_IN_USE="$ext"; return 0
    fi
    warn "kafka: $ext is not reachable; starting our own on $OWN_KAFKA instead"
  fi
  rm -f "$(external_marker kafka)"
  KAFKA_IN_USE="$OWN_KAFKA"
  if pid="$(ours "$STATE/kafka/kafka.pid" "-Dattesta.infra=kafka")"; then
    say "kafka: already running (pid $pid); checking readiness"
    kafka_probe "$OWN_KAFKA" "$pid" 60 || { kafka_log_tail; die "kafka (pid $pid) runs but is not ready"; }
    return 0
  fi
  if port_open "$KAFKA_HOST" "$KAFKA_PORT" && kafka_probe "$OWN_KAFKA" "" 10 >/dev/null 2>&1; then
    say "kafka: $OWN_KAFKA is served by a broker not started from this state dir; using it as EXTERNAL"
    echo "$OWN_KAFKA" >"$(external_marker kafka)"; return 0
  fi
  for p in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
    port_open "$KAFKA_HOST" "$p" && die "port $KAFKA_HOST:$p is in use by a process scripts/infra did not start (and it is no ready Kafka); stop it or set KAFKA_BOOTSTRAP_SERVERS"
  done
  command -v java >/dev/null || die "java (17+) not found"
  kafka_fetch_jars
  kafka_write_config
  kafka_jvm
  local cid; cid="$(kafka_cluster_id)"
  if [ ! -f "$STATE/kafka/data/meta.properties" ]; then
    say "kafka: formatting KRaft storage (cluster id $cid)"
    "${KAFKA_JVM[@]}" kafka.tools.StorageTool format -t "$cid" -c "$STATE/kafka/server.properties" \
      --ignore-formatted >>"$STATE/kafka/kafka.out" 2>&1 || { kafka_log_tail; die "kafka storage format failed"; }
  fi
  say "kafka: starting broker $KAFKA_VERSION on $OWN_KAFKA (controller :$KAFKA_CONTROLLER_PORT, heap $KAFKA_HEAP)"
  pid="$(start_bg "$STATE/kafka/kafka.out" "$STATE/kafka/kafka.pid" \
    "${KAFKA_JVM[@]}" kafka.Kafka "$STATE/kafka/server.properties")"
  say "kafka: pid $pid; waiting for admin client + probe topic (timeout ${KAFKA_READY_TIMEOUT}s)"
  local rc=0
  kafka_probe "$OWN_KAFKA" "$pid" "$KAFKA_READY_TIMEOUT" || rc=$?
  if [ "$rc" -ne 0 ]; then
    kafka_log_tail
    [ "$rc" -eq 2 ] && die "kafka broker process died during start-up"
    die "kafka did not become ready in ${KAFKA_READY_TIMEOUT}s"
  fi
  say "kafka: ready in $((SECONDS - t0))s"
}

kafka_status() {
  local pid
  if [ -f "$(external_marker kafka)" ]; then
    local ext; ext="$(cat "$(external_marker kafka)")"
    if kafka_probe "$ext" "" 5 >/dev/null 2>&1; then say "kafka:    EXTERNAL $ext ready"; return 0; fi
    say "kafka:    EXTERNAL $ext NOT READY"; return 1
  fi
  if pid="$(ours "$STATE/kafka/kafka.pid" "-Dattesta.infra=kafka")"; then
    if kafka_probe "$OWN_KAFKA" "$pid" 5 >/dev/null 2>&1; then
      say "kafka:    running pid $pid on $OWN_KAFKA, ready ($KAFKA_VERSION)"; return 0
    fi
    say "kafka:    running pid $pid on $OWN_KAFKA, NOT READY"; return 1
  fi
  say "kafka:    stopped"; return 1
}

kafka_down() {
  if [ -f "$(external_marker kafka)" ]; then
    say "kafka: external ($(redact "$(cat "$(external_marker kafka)")")); left alone"
    rm -f "$(external_marker kafka)"; return 0
  fi
  local pid
  if pid="$(ours "$STATE/kafka/kafka.pid" "-Dattesta.infra=kafka")"; then
    say "kafka: stopping pid $pid"
    stop_pid "$pid" kafka 60
  else
    say "kafka: not running (nothing of ours to stop)"
  fi
  rm -f "$STATE/kafka/kafka.pid" "$(external_marker kafka)"
}

# ---------------------------------------------------------------- PostgreSQL
pg_datadir() { echo "$STATE/postgres/data"; }
as_pg() { runuser -u postgres -- "$@"; }
# pg_running: our postmaster is alive. pg_ctl reads this data dir's postmaster.pid; we also
# require that pid to be a postgres whose command line names this data dir (no reused pids).
pg_running() {
  local data pid; data="$(pg_datadir)"
  [ -s "$data/postmaster.pid" ] || return 1
  pid="$(head -1 "$data/postmaster.pid")"
  case "$(proc_cmdline "$pid")" in *postgres*"-D $data"*) ;; *) return 1 ;; esac
  as_pg "$PG_BIN/pg_ctl" status -D "$data" >/dev/null 2>&1
}

pg_select1() { # url
  PGCONNECT_TIMEOUT=5 "$PG_BIN/psql" "$1" -XAtq -v ON_ERROR_STOP=1 -c 'SELECT 1' 2>&1
}

pg_up() {
  local ext="${ATTESTA_PG_ADMIN_URL:-}" t0=$SECONDS
  if [ -n "$ext" ] && [ "$ext" != "$OWN_PG_URL" ]; then
    say "postgres: ATTESTA_PG_ADMIN_URL is set; probing it"
    if [ "$(pg_select1 "$ext")" = 1 ]; then
      say "postgres: using EXTERNAL server $(redact "$ext") (not starting our own)"
      echo "$ext" >"$(external_marker postgres)"; PG_IN_USE="$ext"; return 0
    fi
    warn "postgres: ATTESTA_PG_ADMIN_URL is not reachable; starting our own on $PG_HOST:$PG_PORT"
  fi
  rm -f "$(external_marker postgres)"
  PG_IN_USE="$OWN_PG_URL"
  [ -x "$PG_BIN/postgres" ] || die "PostgreSQL 15 binaries not found in $PG_BIN (apt-get install postgresql-15)"
  id postgres >/dev/null 2>&1 || die "no 'postgres' OS user (initdb refuses to run as root)"
  local data; data="$(pg_datadir)"
  mkdir -p "$STATE/postgres"
  chown postgres:postgres "$STATE/postgres"
  as_pg test -w "$STATE/postgres" || die "the postgres OS user cannot write $STATE/postgres (a parent folder is not traversable); set ATTESTA_STATE_DIR to a folder it can reach"

  if pg_running; then
    say "postgres: already running ($(head -1 "$data/postmaster.pid"))"
  else
    if port_open "$PG_HOST" "$PG_PORT"; then
      if [ "$(pg_select1 "$OWN_PG_URL")" = 1 ]; then
        say "postgres: $PG_HOST:$PG_PORT is served by a server not started from this state dir (same credentials work); using it as EXTERNAL"
        echo "$OWN_PG_URL" >"$(external_marker postgres)"; return 0
      fi
      die "port $PG_HOST:$PG_PORT is in use by a process scripts/infra did not start (SELECT 1 as $PG_ADMIN fails there)"
    fi
    if [ ! -s "$data/PG_VERSION" ]; then
      say "postgres: initdb $data (superuser $PG_ADMIN, scram-sha-256)"
      local pw; pw="$(mktemp "$STATE/postgres/.pw.XXXXXX")"
      printf '%s\n' "$PG_PASSWORD" >"$pw"; chown postgres "$pw"; chmod 600 "$pw"
      as_pg "$PG_BIN/initdb" -D "$data" -U "$PG_ADMIN" --pwfile="$pw" --auth=scram-sha-256 \
        -E UTF8 --locale=C.UTF-8 >"$STATE/postgres/initdb.log" 2>&1 \
        || { rm -f "$pw"; tail -n 20 "$STATE/postgres/initdb.log" >&2; die "initdb failed"; }
      rm -f "$pw"
      echo "include_if_exists = 'attesta.conf'" | as_pg tee -a "$data/postgresql.conf" >/dev/null
    fi
    as_pg tee "$data/attesta.conf" >/dev/null <<EOF
# Generated by scripts/infra; edits are overwritten on every 'up'.
listen_addresses = '$PG_HOST'
port = $PG_PORT
max_connections = 200
unix_socket_directories = ''
password_encryption = 'scram-sha-256'
log_timezone = 'UTC'
timezone = 'UTC'
EOF
    say "postgres: starting on $PG_HOST:$PG_PORT"
    # The postmaster outlives us: through close-fds for the reason start_bg gives.
    setsid "$REPO/scripts/close-fds" runuser -u postgres -- "$PG_BIN/pg_ctl" start -D "$data" \
      -l "$STATE/postgres/postgres.log" -w -t 60 -s </dev/null >/dev/null 2>&1 \
      || { tail -n 30 "$STATE/postgres/postgres.log" >&2; die "postgres did not start"; }
  fi
  local i out=""
  for ((i = 0; i < 60; i++)); do
    if "$PG_BIN/pg_isready" -q -h "$PG_HOST" -p "$PG_PORT" -t 2; then
      out="$(pg_select1 "$OWN_PG_URL")" && [ "$out" = 1 ] && break
    fi
    sleep 0.5
  done
  if [ "$out" != 1 ]; then
    warn "SELECT 1 as $PG_ADMIN failed: $out"
    case "$out" in *password*) warn "the data dir was initialised with another password: set ATTESTA_PG_ADMIN_PASSWORD to it, or 'scripts/infra down' and remove $data" ;; esac
    tail -n 20 "$STATE/postgres/postgres.log" >&2 || true
    die "postgres is not ready"
  fi
  say "postgres: ready in $((SECONDS - t0))s (pg_isready ok; SELECT 1 as $PG_ADMIN -> $out)"
}

pg_status() {
  if [ -f "$(external_marker postgres)" ]; then
    local ext; ext="$(cat "$(external_marker postgres)")"
    if [ "$(pg_select1 "$ext")" = 1 ]; then say "postgres: EXTERNAL $(redact "$ext") ready"; return 0; fi
    say "postgres: EXTERNAL NOT READY"; return 1
  fi
  local data; data="$(pg_datadir)"
  if pg_running; then
    if "$PG_BIN/pg_isready" -q -h "$PG_HOST" -p "$PG_PORT" -t 2 && [ "$(pg_select1 "$OWN_PG_URL")" = 1 ]; then
      say "postgres: running pid $(head -1 "$data/postmaster.pid") on $PG_HOST:$PG_PORT, ready"; return 0
    fi
    say "postgres: running pid $(head -1 "$data/postmaster.pid"), NOT READY"; return 1
  fi
  say "postgres: stopped"; return 1
}

pg_down() {
  if [ -f "$(external_marker postgres)" ]; then
    say "postgres: external ($(redact "$(cat "$(external_marker postgres)")")); left alone"
    rm -f "$(external_marker postgres)"; return 0
  fi
  local data; data="$(pg_datadir)"
  rm -f "$(external_marker postgres)"
  # pg_ctl acts only on the postmaster recorded in *this* data dir's postmaster.pid.
  if pg_running; then
    say "postgres: stopping pid $(head -1 "$data/postmaster.pid")"
    as_pg "$PG_BIN/pg_ctl" stop -D "$data" -m fast -w -t 60 -s
  else
    say "postgres: not running (nothing of ours to stop)"
  fi
}

# ---------------------------------------------------------------- Redis
redis_ping() { redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping 2>/dev/null; }

redis_install() {
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null && return 0
  say "redis: redis-server missing; installing Debian's redis-server package"
  [ "$(id -u)" = 0 ] || die "redis-server is missing and we are not root: apt-get install redis-server"
  export DEBIAN_FRONTEND=noninteractive
  # Try the existing package lists first; refresh them only when that fails.
  apt-get install -y -qq redis-server >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; } \
    || die "apt-get install redis-server failed"
}

redis_up() {
  local ext="${REDIS_URL:-}" pid t0=$SECONDS
  redis_install
  if [ -n "$ext" ] && [ "$ext" != "$OWN_REDIS_URL" ]; then
    say "redis: REDIS_URL=$ext is set; probing it"
    if [ "$(redis-cli -u "$ext" ping 2>/dev/null)" = PONG ]; then
      say "redis: using EXTERNAL server $ext (not starting our own)"
      echo "$ext" >"$(external_marker redis)"; REDIS_IN_USE="$ext"; return 0
    fi
    warn "redis: $ext is not reachable; starting our own on $REDIS_HOST:$REDIS_PORT"
  fi
  rm -f "$(external_marker redis)"
  REDIS_IN_USE="$OWN_REDIS_URL"
  mkdir -p "$STATE/redis"
  if pid="$(ours "$STATE/redis/redis.pid" "$REDIS_HOST:$REDIS_PORT")"; then
    say "redis: already running (pid $pid)"
  else
    if port_open "$REDIS_HOST" "$REDIS_PORT"; then
      if [ "$(redis_ping)" = PONG ]; then
        say "redis: $REDIS_HOST:$REDIS_PORT is served by a redis not started from this state dir; using it as EXTERNAL"
        echo "$OWN_REDIS_URL" >"$(external_marker redis)"; return 0
      fi
      die "port $REDIS_HOST:$REDIS_PORT is in use by a process scripts/infra did not start"
    fi
    cat >"$STATE/redis/redis.conf" <<EOF
# Generated by scripts/infra; edits are overwritten on every 'up'.
bind $REDIS_HOST
port $REDIS_PORT
protected-mode yes
daemonize no
supervised no
dir $STATE/redis
logfile $STATE/redis/redis.log
dbfilename dump.rdb
appendonly no
EOF
    say "redis: starting on $REDIS_HOST:$REDIS_PORT"
    pid="$(start_bg "$STATE/redis/redis.out" "$STATE/redis/redis.pid" redis-server "$STATE/redis/redis.conf")"
  fi
  local i out=""
  for ((i = 0; i < 50; i++)); do
    out="$(redis_ping)" && [ "$out" = PONG ] && break
    [ -d "/proc/$pid" ] || { tail -n 20 "$STATE/redis/redis.log" >&2; die "redis-server exited"; }
    sleep 0.2
  done
  [ "$out" = PONG ] || { tail -n 20 "$STATE/redis/redis.log" >&2; die "redis did not answer PING"; }
  # redis rewrites its process title to "redis-server 127.0.0.1:16379", the identity marker.
  say "redis: ready in $((SECONDS - t0))s (pid $pid; redis-cli -p $REDIS_PORT ping -> $out)"
}

redis_status() {
  local pid
  if [ -f "$(external_marker redis)" ]; then
    local ext; ext="$(cat "$(external_marker redis)")"
    if [ "$(redis-cli -u "$ext" ping 2>/dev/null)" = PONG ]; then say "redis:    EXTERNAL $ext ready"; return 0; fi
    say "redis:    EXTERNAL $ext NOT READY"; return 1
  fi
  if pid="$(ours "$STATE/redis/redis.pid" "$REDIS_HOST:$REDIS_PORT")"; then
    if [ "$(redis_ping)" = PONG ]; then say "redis:    running pid $pid on $REDIS_HOST:$REDIS_PORT, ready"; return 0; fi
    say "redis:    running pid $pid, NOT READY"; return 1
  fi
  say "redis:    stopped"; return 1
}

redis_down() {
  if [ -f "$(external_marker redis)" ]; then
    say "redis: external ($(redact "$(cat "$(external_marker redis)")")); left alone"
    rm -f "$(external_marker redis)"; return 0
  fi
  local pid
  if pid="$(ours "$STATE/redis/redis.pid" "$REDIS_HOST:$REDIS_PORT")"; then
    say "redis: stopping pid $pid"
    stop_pid "$pid" redis 20
  else
    say "redis: not running (nothing of ours to stop)"
  fi
  rm -f "$STATE/redis/redis.pid" "$(external_marker redis)"
}

# ---------------------------------------------------------------- commands
write_env() {
  local f="$STATE/env" tmp="$STATE/env.tmp"
  {
    echo "# Written by 'scripts/infra up' at $(date -u +%FT%TZ). Source it: . $f"
    printf 'export KAFKA_BOOTSTRAP_SERVERS=%q\n' "$KAFKA_IN_USE"
    printf 'export ATTESTA_PG_ADMIN_URL=%q\n' "$PG_IN_USE"
    printf 'export REDIS_URL=%q\n' "$REDIS_IN_USE"
    cluster_env_extra
  } >"$tmp"
  chmod 600 "$tmp"; mv "$tmp" "$f"
  say "wrote $f"
}

lock_state() {
  mkdir -p "$STATE"
  exec 9>"$STATE/infra.lock"
  flock -w 300 9 || die "another 'scripts/infra' holds $STATE/infra.lock"
}

cmd_up() {
  lock_state
  local t0=$SECONDS
  say "state dir: $STATE"
  redis_up
  pg_up
  if [ "$KAFKA_MODE" = cluster ]; then cluster_kafka_up; else kafka_up; fi
  write_env
  say "all components ready in $((SECONDS - t0))s"
}

cmd_status() {
  local rc=0
  say "state dir: $STATE"
  if [ "$KAFKA_MODE" = cluster ]; then cluster_kafka_status || rc=1; else kafka_status || rc=1; fi
  pg_status || rc=1
  redis_status || rc=1
  [ -f "$STATE/env" ] && say "env file: $STATE/env" || say "env file: (none)"
  return $rc
}

cmd_down() {
  lock_state
  kafka_down
  cluster_kafka_down
  pg_down
  redis_down
  rm -f "$STATE/env"
  say "down"
}

# shellcheck source=deploy/kafka/cluster.sh
. "$REPO/deploy/kafka/cluster.sh"

case "${1:-}" in
  up) cmd_up ;;
  status) cmd_status ;;
  down) cmd_down ;;
  kafka-cluster) shift; cluster_cmd "$@" ;;
  kafka-libs) kafka_fetch_jars >&2; echo "$KAFKA_LIB" ;;  # the image build copies the same jars
  *) echo "usage: scripts/infra up|status|down [--cluster] | kafka-cluster up|status|down | kafka-libs" >&2; exit 2 ;;
esac
