#!/bin/sh
# One KRaft node (broker + controller) from the jars in /opt/kafka/libs, as user kafka. The
# settings mirror scripts/infra's; KAFKA_ADVERTISED_ADDRESS (host:port clients use) and
# KAFKA_NUM_PARTITIONS may be set. A node of a cluster (docker-compose.yml's `cluster` profile)
# gets KAFKA_CONTROLLER_QUORUM_VOTERS (id@host:9093 of every voter) and KAFKA_REPLICAS=3: every
# topic, the broker's own included, then has three replicas of which two must acknowledge, and
# no topic is created by a client's first use (docs/scaling.md).
set -eu
: "${KAFKA_CLUSTER_ID:?set KAFKA_CLUSTER_ID (22-character base64 UUID)}"
conf=/opt/kafka/config/server.properties
node="${KAFKA_NODE_ID:-1}"
replicas="${KAFKA_REPLICAS:-1}"
voters="${KAFKA_CONTROLLER_QUORUM_VOTERS:-$node@127.0.0.1:9093}"
if [ "$replicas" -gt 1 ]; then
  # Other voters reach this node's controller; two of three in sync must acknowledge.
  controller=0.0.0.0:9093 min_insync=2 auto_create=false
else
  # TODO(attesta): false once every service creates its own topics (as in scripts/infra).
  controller=127.0.0.1:9093 min_insync=1 auto_create=true
fi
cat >"$conf" <<PROPS
process.roles=broker,controller
node.id=$node
controller.quorum.voters=$voters
listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://$controller
advertised.listeners=PLAINTEXT://${KAFKA_ADVERTISED_ADDRESS:-kafka:9092}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=/var/lib/kafka/data
offsets.topic.replication.factor=$replicas
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=$replicas
transaction.state.log.min.isr=$min_insync
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=$replicas
share.coordinator.state.topic.min.isr=$min_insync
group.initial.rebalance.delay.ms=0
num.partitions=${KAFKA_NUM_PARTITIONS:-1}
default.replication.factor=$replicas
min.insync.replicas=$min_insync
auto.create.topics.enable=$auto_create
delete.topic.enable=true
log.cleaner.enable=true
log.cleaner.threads=1
log.retention.check.interval.ms=10000
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
PROPS
cat >/opt/kafka/config/log4j2.properties <<'LOG'
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
LOG
heap="${KAFKA_HEAP:-512m}"
set -- java -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true \
  -Dlog4j2.configurationFile=file:/opt/kafka/config/log4j2.properties \
  -Dkafka.logs.dir=/opt/kafka/logs -cp '/opt/kafka/libs/*'
if [ ! -f /var/lib/kafka/data/meta.properties ]; then
  "$@" kafka.tools.StorageTool format -t "$KAFKA_CLUSTER_ID" -c "$conf" --ignore-formatted
fi
exec "$@" kafka.Kafka "$conf"
