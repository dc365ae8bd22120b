# Cluster mode of the local Kafka: three KRaft nodes (combined broker + controller, three
# voters) on 127.0.0.1, SASL_SSL + SCRAM-SHA-512 for clients and between brokers, mutual TLS on
# the controller listener, ACLs from the declared topic roles, every topic created up front with
# replication factor 3 and min.insync.replicas=2. Sourced by deploy/infra.sh (functions only);
# `scripts/infra up --cluster` (or ATTESTA_KAFKA_MODE=cluster) uses it instead of the single node,
# `scripts/infra kafka-cluster up|status|down` runs only the Kafka part. See docs/scaling.md.
#
# State: $STATE/kafka-cluster/ (git-ignored): tls/ (local CA, one key per node), credentials
# (SCRAM principals: broker, admin, one per service; mode 600), node-N/ (config, data, logs,
# pid), env (admin client), env.<service> (that service's principal). A new principal needs a
# fresh cluster: `scripts/infra kafka-cluster down && rm -rf .state/kafka-cluster`.
#
# FOR MEASUREMENT ONLY, off by default: ATTESTA_KAFKA_CLUSTER_PLAINTEXT_PORT=P adds a PLAINTEXT
# client listener on P, P+1, P+2 (node n: P+n-1), so benchmarks/cluster_pipeline.py can put the
# cost of TLS + SCRAM apart from the cost of three replicas on the same nodes. Its clients are
# User:ANONYMOUS (no authentication, no encryption); set-up gives that principal the union of
# the services' generated ACLs (so the authorizer still checks every request, as it does for the
# service principals) and writes env.plaintext. Between brokers and controllers nothing changes
# (SASL_SSL, mutual TLS). Never set it for anything but a local measurement; tests/cluster and
# the fault harness never do.

CLUSTER_DIR="${ATTESTA_KAFKA_CLUSTER_DIR:-$STATE/kafka-cluster}" # tests/cluster uses its own
CLUSTER_PORT="${ATTESTA_KAFKA_CLUSTER_PORT:-29092}" # node n: client port +2(n-1), controller +1
CLUSTER_HEAP="${ATTESTA_KAFKA_CLUSTER_HEAP:-256m}"
CLUSTER_NODES=(1 2 3)
CLUSTER_MECHANISM=SCRAM-SHA-512
CLUSTER_PLAINTEXT_PORT="${ATTESTA_KAFKA_CLUSTER_PLAINTEXT_PORT:-}" # empty: no PLAINTEXT listener

cluster_client_port() { echo $((CLUSTER_PORT + 2 * ($1 - 1))); }
cluster_controller_port() { echo $((CLUSTER_PORT + 2 * ($1 - 1) + 1)); }
cluster_plaintext_port() { echo $((CLUSTER_PLAINTEXT_PORT + $1 - 1)); }
cluster_bootstrap() { # [port function]: the client listeners (default) or the PLAINTEXT ones
  local n out="" port="${1:-cluster_client_port}"
  for n in "${CLUSTER_NODES[@]}"; do out+="${out:+,}$KAFKA_HOST:$("$port" "$n")"; done
  echo "$out"
}
cluster_marker() { echo "-Dattesta.infra=kafka-cluster-$1 "; } # trailing space: node 1 != 10
cluster_pid() { ours "$CLUSTER_DIR/node-$1/kafka.pid" "$(cluster_marker "$1")"; }
cluster_password() { awk -v u="$1" '$1 == u { print $2 }' "$CLUSTER_DIR/credentials"; }
cluster_setup() { "$PY" "$REPO/deploy/kafka/cluster_setup.py" --env "$CLUSTER_DIR/env" "$@"; }

cluster_certs() { # a local CA and one key + certificate per node (SAN 127.0.0.1/localhost)
  local t="$CLUSTER_DIR/tls" n
  [ -s "$t/ca.pem" ] && return 0
  command -v openssl >/dev/null || die "openssl is needed to make the cluster's certificates"
  mkdir -p "$t.tmp"; chmod 700 "$t.tmp"
  (
    cd "$t.tmp"; umask 077
    openssl req -x509 -newkey rsa:2048 -nodes -days 825 -subj "/CN=attesta-local-ca" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -keyout ca.key -out ca.pem 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' >san.ext
    for n in "${CLUSTER_NODES[@]}"; do
      # CN=kafka-N: the controller listener maps it to the principal User:broker (mutual TLS).
      openssl req -newkey rsa:2048 -nodes -subj "/CN=kafka-$n" -keyout "kafka-$n.key" \
        -out "kafka-$n.csr" 2>/dev/null
      openssl x509 -req -in "kafka-$n.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 825 \
        -extfile san.ext -out "kafka-$n.crt" 2>/dev/null
      cat "kafka-$n.key" "kafka-$n.crt" >"kafka-$n.keystore.pem" # PEM keystore: PKCS#8 key + cert
      rm -f "kafka-$n.csr"
    done
  ) || { rm -rf "$t.tmp"; die "could not generate the cluster's certificates"; }
  rm -rf "$t"; mv "$t.tmp" "$t"
  say "kafka-cluster: local CA and 3 node keys in $t"
}

cluster_credentials() { # one SCRAM principal per declared service + broker + admin, made once
  local f="$CLUSTER_DIR/credentials" want have p
  want="$(printf '%s\n' broker admin $("$PY" "$REPO/deploy/kafka/acls.py" --principals) | sort)"
  if [ -s "$f" ]; then
    have="$(awk '{ print $1 }' "$f" | sort)"
    [ "$have" = "$want" ] || die "the declared services changed (principals: $(tr '\n' ' ' <<<"$want")); SCRAM users are created at format time: 'scripts/infra kafka-cluster down' and remove $CLUSTER_DIR"
    return 0
  fi
  (umask 077; for p in $want; do printf '%s %s\n' "$p" "$(openssl rand -hex 24)"; done >"$f.tmp")
  mv "$f.tmp" "$f"
}

cluster_write_config() { # node
  local n="$1" d="$CLUSTER_DIR/node-$1" voters="" m plain="" plain_map=""
  for m in "${CLUSTER_NODES[@]}"; do voters+="${voters:+,}$m@$KAFKA_HOST:$(cluster_controller_port "$m")"; done
  if [ -n "$CLUSTER_PLAINTEXT_PORT" ]; then # measurement only: see the top of this file
    plain=",PLAINTEXT://$KAFKA_HOST:$(cluster_plaintext_port "$n")" plain_map=",PLAINTEXT:PLAINTEXT"
  fi
  mkdir -p "$d/data" "$d/logs"
  (umask 077; cat >"$d/server.properties" <<EOF
# Generated by scripts/infra (cluster mode); edits are overwritten on every 'up'.
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
listeners=SASL_SSL://$KAFKA_HOST:$(cluster_client_port "$n"),CONTROLLER://$KAFKA_HOST:$(cluster_controller_port "$n")$plain
advertised.listeners=SASL_SSL://$KAFKA_HOST:$(cluster_client_port "$n")$plain
controller.listener.names=CONTROLLER
inter.broker.listener.name=SASL_SSL
listener.security.protocol.map=CONTROLLER:SSL,SASL_SSL:SASL_SSL$plain_map
log.dirs=$d/data

# Clients and brokers: TLS + SCRAM-SHA-512. Controllers: mutual TLS, CN=kafka-N -> User:broker.
sasl.enabled.mechanisms=$CLUSTER_MECHANISM
sasl.mechanism.inter.broker.protocol=$CLUSTER_MECHANISM
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="$(cluster_password broker)";
ssl.keystore.type=PEM
ssl.keystore.location=$CLUSTER_DIR/tls/kafka-$n.keystore.pem
ssl.truststore.type=PEM
ssl.truststore.location=$CLUSTER_DIR/tls/ca.pem
ssl.endpoint.identification.algorithm=https
listener.name.controller.ssl.client.auth=required
ssl.principal.mapping.rules=RULE:^CN=kafka-[0-9]+\$/broker/,DEFAULT
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=User:admin;User:broker

# Three replicas, two must acknowledge; the broker's own topics too.
default.replication.factor=3
min.insync.replicas=2
num.partitions=3
offsets.topic.replication.factor=3
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
transaction.state.log.num.partitions=3
share.coordinator.state.topic.replication.factor=3
share.coordinator.state.topic.min.isr=2
auto.create.topics.enable=false
delete.topic.enable=true
group.initial.rebalance.delay.ms=0

log.cleaner.enable=true
log.cleaner.threads=1
log.retention.check.interval.ms=10000

# Three JVMs on 2 cores.
num.network.threads=2
num.io.threads=2
num.replica.fetchers=1
background.threads=2
num.recovery.threads.per.data.dir=1
EOF
  )
  kafka_write_log4j "$d" "attesta-kafka-$n"
}

cluster_jvm() { # node -> CLUSTER_JVM array
  local d="$CLUSTER_DIR/node-$1"
  CLUSTER_JVM=(java -Xms"$CLUSTER_HEAP" -Xmx"$CLUSTER_HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -Djava.awt.headless=true "$(cluster_marker "$1")"
    -Dlog4j2.configurationFile="file:$d/log4j2.properties" -Dkafka.logs.dir="$d/logs"
    -cp "$KAFKA_LIB/*")
}

cluster_format() { # node: KRaft storage with the SCRAM users in its bootstrap metadata
  local n="$1" d="$CLUSTER_DIR/node-$1" scram=() u p
  [ -f "$d/data/meta.properties" ] && return 0
  while read -r u p; do scram+=(--add-scram "$CLUSTER_MECHANISM=[name=$u,password=$p]"); done <"$CLUSTER_DIR/credentials"
  cluster_jvm "$n"
  "${CLUSTER_JVM[@]}" kafka.tools.StorageTool format -t "$(cat "$CLUSTER_DIR/cluster.id")" \
    -c "$d/server.properties" "${scram[@]}" --ignore-formatted >>"$d/kafka.out" 2>&1 \
    || { tail -n 20 "$d/kafka.out" >&2; die "kafka-cluster: storage format of node $n failed"; }
}

cluster_write_env() { # env (admin) and env.<service>: what KafkaOptions needs
  local u p f
  while read -r u p; do
    [ "$u" = broker ] && continue
    f="$CLUSTER_DIR/env.$u"; [ "$u" = admin ] && f="$CLUSTER_DIR/env"
    (umask 077; {
      echo "# Written by 'scripts/infra' (cluster mode): Kafka client settings for principal '$u'."
      echo "export KAFKA_BOOTSTRAP_SERVERS=$(cluster_bootstrap)"
      echo "export ATTESTA_KAFKA_SECURITY_PROTOCOL=SASL_SSL"
      echo "export ATTESTA_KAFKA_SASL_MECHANISM=$CLUSTER_MECHANISM"
      printf 'export ATTESTA_KAFKA_SASL_USERNAME=%q\n' "$u"
      printf 'export ATTESTA_KAFKA_SASL_PASSWORD=%q\n' "$p"
      printf 'export ATTESTA_KAFKA_SSL_CAFILE=%q\n' "$CLUSTER_DIR/tls/ca.pem"
      echo "export ATTESTA_KAFKA_REPLICATION_FACTOR=3"
    } >"$f.tmp"); mv "$f.tmp" "$f"
  done <"$CLUSTER_DIR/credentials"
  f="$CLUSTER_DIR/env.plaintext"
  if [ -z "$CLUSTER_PLAINTEXT_PORT" ]; then rm -f "$f"; return 0; fi
  {
    echo "# Written by 'scripts/infra' (cluster mode, ATTESTA_KAFKA_CLUSTER_PLAINTEXT_PORT set):"
    echo "# the PLAINTEXT listener, as User:ANONYMOUS. For measurement only."
    echo "export KAFKA_BOOTSTRAP_SERVERS=$(cluster_bootstrap cluster_plaintext_port)"
    echo "export ATTESTA_KAFKA_SECURITY_PROTOCOL=PLAINTEXT"
    echo "export ATTESTA_KAFKA_SASL_MECHANISM="
    echo "export ATTESTA_KAFKA_SASL_USERNAME="
    echo "export ATTESTA_KAFKA_SASL_PASSWORD="
    echo "export ATTESTA_KAFKA_SSL_CAFILE="
    echo "export ATTESTA_KAFKA_REPLICATION_FACTOR=3"
  } >"$f.tmp"; mv "$f.tmp" "$f"
}

cluster_plaintext_acls() { # measurement only: User:ANONYMOUS may do what any service may
  [ -n "$CLUSTER_PLAINTEXT_PORT" ] || return 0
  (cd "$REPO/deploy/kafka" && "$PY" - "$CLUSTER_DIR/env" <<'EOF'
import asyncio, dataclasses, sys
from pathlib import Path

import acls, cluster_setup  # the generator and the set-up's admin client, next to this file

async def main() -> None:
    admin = cluster_setup.options_from_env(cluster_setup.read_env(Path(sys.argv[1]))).admin()
    await admin.start()
    try:
        union = {dataclasses.replace(a, principal="User:ANONYMOUS") for a in acls.all_acls()}
        print(f"[infra] kafka-cluster: {await acls.apply(admin, sorted(union))} ACLs for "
              "User:ANONYMOUS (PLAINTEXT listener, measurement only)")
    finally:
        await admin.close()

asyncio.run(main())
EOF
  ) || die "kafka-cluster: could not give User:ANONYMOUS the services' ACLs"
}

cluster_kafka_up() {
  local t0=$SECONDS n pid pids=() started=0
  command -v java >/dev/null || die "java (17+) not found"
  [ -x "$PY" ] || die "no python venv at $PY: run scripts/install.sh first"
  kafka_fetch_jars
  mkdir -p "$CLUSTER_DIR"; chmod 700 "$CLUSTER_DIR"
  cluster_certs
  cluster_credentials
  [ -s "$CLUSTER_DIR/cluster.id" ] || "$PY" -c 'import base64, uuid; print(base64.urlsafe_b64encode(uuid.UUID(int=uuid.uuid4().int & ~(1 << 127)).bytes).decode().rstrip("="))' >"$CLUSTER_DIR/cluster.id"
  cluster_write_env
  for n in "${CLUSTER_NODES[@]}"; do
    if pid="$(cluster_pid "$n")"; then pids+=("$pid"); continue; fi
    for p in "$(cluster_client_port "$n")" "$(cluster_controller_port "$n")" \
      ${CLUSTER_PLAINTEXT_PORT:+"$(cluster_plaintext_port "$n")"}; do
      port_open "$KAFKA_HOST" "$p" && die "port $KAFKA_HOST:$p is in use by a process scripts/infra did not start"
    done
    cluster_write_config "$n"
    cluster_format "$n"
    cluster_jvm "$n"
    pid="$(start_bg "$CLUSTER_DIR/node-$n/kafka.out" "$CLUSTER_DIR/node-$n/kafka.pid" \
      "${CLUSTER_JVM[@]}" kafka.Kafka "$CLUSTER_DIR/node-$n/server.properties")"
    pids+=("$pid"); started=$((started + 1))
  done
  say "kafka-cluster: nodes on $(cluster_bootstrap) (pids ${pids[*]}; $started started, heap $CLUSTER_HEAP each)"
  local args=() rc=0
  for pid in "${pids[@]}"; do args+=(--pid "$pid"); done
  cluster_setup "${args[@]}" --timeout "$KAFKA_READY_TIMEOUT" || rc=$?
  if [ "$rc" -ne 0 ]; then
    for n in "${CLUSTER_NODES[@]}"; do
      warn "last lines of node $n's server.log:"; tail -n 15 "$CLUSTER_DIR/node-$n/logs/server.log" >&2 2>/dev/null || true
    done
    die "kafka-cluster did not become ready"
  fi
  cluster_plaintext_acls
  say "kafka-cluster: ready in $((SECONDS - t0))s"
  KAFKA_IN_USE="$(cluster_bootstrap)"
}

cluster_kafka_status() {
  local n pid rc=0
  for n in "${CLUSTER_NODES[@]}"; do
    if pid="$(cluster_pid "$n")"; then say "kafka-cluster: node $n running pid $pid on $KAFKA_HOST:$(cluster_client_port "$n")"
    else say "kafka-cluster: node $n stopped"; rc=1; fi
  done
  [ "$rc" -eq 0 ] || return 1
  cluster_setup --check --timeout 10 >/dev/null 2>&1 || { say "kafka-cluster: NOT READY"; return 1; }
  say "kafka-cluster: ready ($(cluster_bootstrap))"
}

cluster_alive() { [ -d "/proc/$1" ] && [ "$(awk '{sub(/^.*\) /, ""); print $1}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

cluster_kafka_down() { # quiet when nothing of ours runs (the single-node 'down' prints as before)
  local n pid pids=() i any
  for n in "${CLUSTER_NODES[@]}"; do
    if pid="$(cluster_pid "$n")"; then pids+=("$pid"); fi
  done
  [ "${#pids[@]}" -gt 0 ] || return 0
  say "kafka-cluster: stopping pids ${pids[*]}"
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do # all at once: the quorum goes away together, so wait for all
    any=0
    for pid in "${pids[@]}"; do cluster_alive "$pid" && any=1; done
    [ "$any" -eq 0 ] && break
    sleep 0.2
  done
  for pid in "${pids[@]}"; do
    if cluster_alive "$pid"; then
      warn "kafka-cluster pid $pid did not stop in 60s; sending SIGKILL"; kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for n in "${CLUSTER_NODES[@]}"; do rm -f "$CLUSTER_DIR/node-$n/kafka.pid"; done
}

cluster_env_extra() { # appended to $STATE/env by write_env in cluster mode
  [ "$KAFKA_MODE" = cluster ] || return 0
  grep '^export ATTESTA_KAFKA_' "$CLUSTER_DIR/env"
  echo "export ATTESTA_KAFKA_MODE=cluster"
}

cluster_cmd() { # scripts/infra kafka-cluster up|status|down
  case "${1:-}" in
    up) lock_state; cluster_kafka_up ;;
    status) cluster_kafka_status ;;
    down) lock_state; cluster_kafka_down; say "kafka-cluster: down" ;;
    *) echo "usage: scripts/infra kafka-cluster up|status|down" >&2; exit 2 ;;
  esac
}
