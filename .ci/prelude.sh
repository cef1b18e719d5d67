# Sourced by .ci/run and .ci/nightly (never run alone): the project's Node first on PATH, the environment printed,
# Postgres and Redis answering (the machine's own servers started when they do not), Chromium and PgBouncer installed
# when missing, then exactly the locked dependencies (npm ci).

echo "=== node"
# The project's one Node (.node-version): the machine's own when it fits, else the registry's (scripts/ensure-node.sh)
PATH="$(bash scripts/ensure-node.sh):$PATH"
export PATH

echo "=== environment"
echo "node     $(node --version)"
echo "npm      $(npm --version)"
echo "postgres $(psql --version 2>/dev/null || echo 'psql not found')"
echo "redis    $(redis-server --version 2>/dev/null || echo 'redis-server not found')"
echo "os       $(uname -srm)"
echo "cpus     $(nproc 2>/dev/null || echo '?')"

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432; }
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = "PONG" ]; }

# wait_for NAME CHECK SECONDS: bounded wait, never an open-ended loop.
wait_for() {
  local name=$1 check=$2 secs=$3 i
  for ((i = 0; i < secs * 4; i++)); do
    if "$check"; then echo "$name: up"; return 0; fi
    sleep 0.25
  done
  echo "$name: did not answer within ${secs}s" >&2
  return 1
}

echo "=== services"
if pg_up; then
  echo "postgres: already answering"
else
  echo "postgres: starting"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
  wait_for postgres pg_up 60
fi
if redis_up; then
  echo "redis: already answering"
else
  echo "redis: starting"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_for redis redis_up 30
fi

echo "=== chromium (browser tests: test/e2e/playground.e2e.test.ts, test/docs/docs-page.e2e.test.ts)"
bash scripts/ensure-browser.sh

echo "=== pgbouncer (the int and e2e suites run once more through it: scripts/with-pgbouncer.sh)"
if ! command -v pgbouncer >/dev/null; then
  echo "pgbouncer: installing Debian's package"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends pgbouncer
fi
echo "pgbouncer: $(pgbouncer --version 2>/dev/null | head -n1 || echo 'not runnable')"

echo "=== npm ci"
bash scripts/npm-install.sh
