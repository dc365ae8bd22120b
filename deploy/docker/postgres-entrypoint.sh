#!/bin/sh
# PostgreSQL 15 from Debian's packages, as user postgres. First start: initdb with the admin
# superuser and password from the environment (scram-sha-256 over TCP, like the local path).
set -eu
: "${POSTGRES_USER:=attesta_admin}" "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pw=$(mktemp); printf '%s\n' "$POSTGRES_PASSWORD" >"$pw"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pw" --auth-host=scram-sha-256 \
    --auth-local=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pw"
  # Other containers connect over the compose network, never from outside it.
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "host all all ::/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c max_connections="${POSTGRES_MAX_CONNECTIONS:-200}" "$@"
