#!/usr/bin/env bash
# Runs a command with a PgBouncer (transaction pooling, k8s/base/pgbouncer/pgbouncer.ini) in front of the test Postgres,
# on a free loopback port, and stops it afterwards. The command sees TEST_DATABASE_POOL_URL: test databases are
# migrated directly and everything else connects through the pooler (libs/testing createTestDatabase).
#   bash scripts/with-pgbouncer.sh node_modules/.bin/jest --selectProjects int e2e --runInBand
# PGBOUNCER_BIN overrides the binary; TEST_DATABASE_ADMIN_URL the server behind it (default 127.0.0.1:5432).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${PGBOUNCER_BIN:-pgbouncer}
command -v "$bin" >/dev/null || { echo "with-pgbouncer: $bin not found (apt-get install -y pgbouncer; .ci/run does it)" >&2; exit 1; }
admin_url=${TEST_DATABASE_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}
# host and port of the server behind the pooler, and its user (trust auth on loopback, as the tests use)
read -r pg_user pg_host pg_port < <(node -e 'const u=new URL(process.argv[1]);console.log(decodeURIComponent(u.username||"postgres"),u.hostname,u.port||5432)' "$admin_url")
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
dir=$(mktemp -d /tmp/gmg-pgbouncer.XXXXXX)
# The production settings, with what differs on a CI machine: loopback, the free port, trust auth, and smaller pools
# (the test Postgres is shared and has max_connections 100).
sed -e "s|^%include .*databases.ini|%include ${dir}/databases.ini|" \
    -e "s|^listen_addr = .*|listen_addr = 127.0.0.1|" \
    -e "s|^listen_port = .*|listen_port = ${port}|" \
    -e "s|^auth_type = .*|auth_type = trust|" \
    -e "s|^auth_file = .*|auth_file = ${dir}/userlist.txt|" \
    -e "s|^admin_users = .*|admin_users = ${pg_user}|" \
    -e "s|^stats_users = .*|stats_users = ${pg_user}|" \
    -e "s|^default_pool_size = .*|default_pool_size = 10|" \
    -e "s|^max_db_connections = .*|max_db_connections = 20|" \
    k8s/base/pgbouncer/pgbouncer.ini > "$dir/pgbouncer.ini"
sed -e "s|host=postgres port=5432|host=${pg_host} port=${pg_port}|" k8s/base/pgbouncer/databases.ini.example > "$dir/databases.ini"
printf 'logfile = %s\npidfile = %s\n' "$dir/pgbouncer.log" "$dir/pgbouncer.pid" >> "$dir/pgbouncer.ini"
printf '"%s" ""\n' "$pg_user" > "$dir/userlist.txt"
# PgBouncer refuses to run as root: then it runs as the postgres system user (-u).
as_user=()
if [ "$(id -u)" = 0 ]; then chown -R postgres "$dir"; as_user=(-u postgres); fi
"$bin" -d "${as_user[@]}" "$dir/pgbouncer.ini"
stop() {
  if [ -f "$dir/pgbouncer.pid" ]; then kill "$(cat "$dir/pgbouncer.pid")" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap stop EXIT
pool_url="postgres://${pg_user}@127.0.0.1:${port}/postgres"
for ((i = 0; i < 40; i++)); do
  if psql "postgres://${pg_user}@127.0.0.1:${port}/pgbouncer" -Atqc 'SHOW VERSION' >/dev/null 2>&1; then break; fi
  sleep 0.25
done
psql "postgres://${pg_user}@127.0.0.1:${port}/pgbouncer" -Atqc 'SHOW VERSION' >/dev/null || { cat "$dir/pgbouncer.log" >&2; echo "with-pgbouncer: no answer on $port" >&2; exit 1; }
echo "with-pgbouncer: $("$bin" --version | head -n1), transaction pooling on 127.0.0.1:${port} in front of ${pg_host}:${pg_port}"
rc=0
TEST_DATABASE_POOL_URL=$pool_url "$@" || rc=$?
echo "with-pgbouncer: pooler stats: $(psql "postgres://${pg_user}@127.0.0.1:${port}/pgbouncer" -Atqc 'SHOW TOTALS' 2>/dev/null | tr '\n' ' ' | cut -c1-200)"
exit $rc
