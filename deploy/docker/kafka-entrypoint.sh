#!/bin/sh
# One KRaft node (broker + controller) from the jars in /opt/kafka/libs, as user kafka. The
# settings mirror scripts/infra's; KAFKA_ADVERTISED_ADDRESS (host:port clients use), KAFKA_NUM_PARTITIONS and
# KAFKA_DEFAULT_REPLICATION_FACTOR may be set (see docs/scaling.md for more nodes).
set -eu
: "${KAFKA_CLUSTER_ID:?set KAFKA_CLUSTER_ID (22-character base64 UUID)}"
conf=/opt/kafka/config/server.properties
cat >"$conf" <<PROPS
process.roles=broker,controller
node.id=${KAFKA_NODE_ID:-1}
controller.quorum.voters=${KAFKA_NODE_ID:-1}@127.0.0.1:9093
listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093
advertised.listeners=PLAINTEXT://${KAFKA_ADVERTISED_ADDRESS:-kafka:9092}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=/var/lib/kafka/data
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.partitions=${KAFKA_NUM_PARTITIONS:-1}
default.replication.factor=${KAFKA_DEFAULT_REPLICATION_FACTOR:-1}
min.insync.replicas=1
# TODO(attesta): false once every service creates its own topics (as in scripts/infra).
auto.create.topics.enable=true
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
