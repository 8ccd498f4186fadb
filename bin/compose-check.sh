#!/usr/bin/env bash
# Brings the Docker Compose deployment up from this checkout's docker-compose.yml and .env, waits for every service's
# health, checks each one without a console, and takes it down again: on any Docker host, before going live or after
# a change. It runs as its own Compose project (sweetloop-check, with its own volumes), so a deployment running on
# the same host is not touched, and `down -v` removes only what the check made. docs/docker.md explains each step.
#
#   bin/compose-check.sh [--fake-discord] [--gpu] [--keep] [-f EXTRA.yml]...
#     --fake-discord  run the project's fake Discord (bin/compose-check.fake-discord.yml) instead of connecting the
#                     .env token to discord.com: for hosts without Discord, or a token another deployment uses
#     --gpu           the GPU trainer too (docker-compose.gpu.yml; needs the NVIDIA runtime)
#     --keep          leave the stack up at the end (take it down with the `down` command printed)
#     -f FILE         one more compose file (host-specific settings), after the project's
#   Environment: COMPOSE_CHECK_PROJECT (sweetloop-check), COMPOSE_CHECK_DASHBOARD_PORT (18080, on 127.0.0.1),
#   COMPOSE_CHECK_TIMEOUT (seconds each service may take to become healthy; 900), and the build settings of
#   docker-compose.yml (BUILD_NETWORK, BUILD_CA_CERT).
# Exit status: 0 when every check passed, 1 otherwise; one line per check on stdout.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

project=${COMPOSE_CHECK_PROJECT:-sweetloop-check}
timeout=${COMPOSE_CHECK_TIMEOUT:-900}
files=(-f docker-compose.yml)
fake=0 keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --fake-discord) fake=1 ;;
    --gpu) files+=(-f docker-compose.gpu.yml) ;;
    --keep) keep=1 ;;
    -f) files+=(-f "${2:?-f needs a file}"); shift ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compose-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ "$fake" = 1 ] && files+=(-f bin/compose-check.fake-discord.yml)
# The dashboard's published port: not the deployment's, which may be in use on this host.
export DASHBOARD_PUBLISHED_PORT=${COMPOSE_CHECK_DASHBOARD_PORT:-18080}
# Well formed (the first part is a bot id in base64), as `sweetloop doctor` checks; the fake accepts only it.
export COMPOSE_CHECK_DISCORD_TOKEN=MTAwMDAwMDAwMDAwMDAwMDAwMA.Gcheck.compose-check-fake-token-not-a-real-one
dc() { docker compose -p "$project" "${files[@]}" "$@"; }
# The same with the dashboard's profile, for what concerns it (and for building and taking everything down).
dcd() { dc --profile dashboard "$@"; }

failed=0
pass() { printf 'ok    %s\n' "$*"; }
fail() { printf 'FAIL  %s\n' "$*"; failed=1; }
step() { printf '\n== %s\n' "$*"; }

step "Docker and Compose"
if ! docker info >/dev/null 2>&1; then echo "compose-check: no Docker daemon answers (docker info)" >&2; exit 1; fi
version=$(docker compose version --short 2>/dev/null || true)
if [ -z "$version" ]; then fail "docker compose (v2) is not installed; Compose v1 (docker-compose) cannot read docker-compose.yml"; exit 1; fi
major=${version%%.*}; rest=${version#*.}; minor=${rest%%.*}
if [ "${major//[!0-9]/}" -gt 2 ] || { [ "${major//[!0-9]/}" -eq 2 ] && [ "${minor//[!0-9]/}" -ge 24 ]; }; then
  pass "Docker Compose $version (2.24 or later)"
else
  fail "Docker Compose $version is older than 2.24, which docker-compose.yml needs"; exit 1
fi
[ -f .env ] || { fail ".env is missing: cp .env.example .env and fill it as the README says"; exit 1; }
if dc config -q; then pass "compose files valid: ${files[*]}"; else fail "compose files invalid: ${files[*]}"; exit 1; fi

down() { dcd down -v --remove-orphans >/dev/null 2>&1; }
if [ "$keep" = 0 ]; then trap down EXIT; fi
if [ -n "$(dcd ps -q 2>/dev/null)" ]; then echo "compose-check: project $project is already running; taking it down first"; down; fi

step "build"
if dcd build >/tmp/compose-check-build.log 2>&1; then pass "images built (log: /tmp/compose-check-build.log)"; else fail "build failed:"; tail -n 25 /tmp/compose-check-build.log; exit 1; fi

step "up"
# As the README says it: every service without a profile.
if dc up -d >/tmp/compose-check-up.log 2>&1; then pass "docker compose up -d: exit 0 ($(dc ps --services | tr '\n' ' '| sed 's/ $//'))"; else fail "docker compose up -d failed:"; tail -n 15 /tmp/compose-check-up.log; exit 1; fi

# Waits until the service's container reports `healthy` (its compose health check); prints why not.
healthy() {
  local service=$1 id status start=$SECONDS
  id=$(dc ps -q "$service")
  while :; do
    status=$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$id" 2>/dev/null)
    case $status in
      healthy) pass "$service healthy after $((SECONDS - start)) s"; return 0 ;;
      exited | dead) fail "$service exited: $(docker logs --tail 3 "$id" 2>&1 | tr '\n' ' ' | cut -c1-300)"; return 1 ;;
    esac
    if [ $((SECONDS - start)) -ge "$timeout" ]; then fail "$service not healthy after $timeout s (status $status): $(docker logs --tail 3 "$id" 2>&1 | tr '\n' ' ' | cut -c1-300)"; return 1; fi
    sleep 5
  done
}
# GET of a URL from inside a service's container, printed as "STATUS BODY".
get() { dc exec -T "$1" node -e "fetch(process.argv[1]).then(async (r) => console.log(r.status, (await r.text()).trim()), (e) => { console.log('000', e.cause?.code ?? e.message); })" "$2"; }

step "health"
services=(postgres bot trainer)
[ "$fake" = 1 ] && services=(fake-discord "${services[@]}")
for s in "${services[@]}"; do healthy "$s"; done

step "bot"
uid=$(dc exec -T bot id -u | tr -d '\r')
if [ -n "$uid" ] && [ "$uid" != 0 ]; then pass "bot runs as uid $uid ($(dc exec -T bot id -un | tr -d '\r')), not root"; else fail "bot runs as root"; fi
ready=$(get bot http://127.0.0.1:9464/health/ready)
case $ready in
  "200 "*'"database":true'*'"policy":true'*) pass "bot /health/ready: $ready" ;;
  *) fail "bot /health/ready: $ready" ;;
esac
# Inside the running bot's container: Chromium renders a page, bubblewrap starts a sandbox, the database answers.
if doctor=$(dc exec -T bot node bin/sweetloop.cjs doctor 2>&1); then pass "sweetloop doctor in the bot container:"; else fail "sweetloop doctor in the bot container:"; fi
printf '%s\n' "$doctor" | sed 's/^/        /'
# The two sandboxes as the bot's user: Chromium's own (no --no-sandbox: it refuses to start without one), and
# bubblewrap as the backend evaluator runs it (tasks/sandbox.ts: Python with no network, its own PID 1).
page=$(dc exec -T bot chromium --headless --disable-gpu --no-first-run --dump-dom 'data:text/html,<p>rendered-in-sandbox</p>' 2>&1)
case $page in *rendered-in-sandbox*) pass "Chromium renders with its own sandbox on (no --no-sandbox)" ;; *) fail "Chromium with its sandbox: $(printf '%s' "$page" | grep -m1 -i sandbox)" ;; esac
probe='import { runSandboxed } from "/app/tasks/sandbox.ts";
const r = await runSandboxed({ argv: ["/usr/bin/python3", "-c", "import os, socket\nprint(os.getpid())\ntry:\n socket.create_connection((\"1.1.1.1\", 80), timeout=2)\nexcept OSError as e:\n print(e.strerror)"] });
console.log(r.exitCode, r.stdout.trim().split("\n").join(", "));'
sandbox=$(dc exec -T bot node --import tsx --input-type=module -e "$probe" 2>&1 | tail -n 1)
case $sandbox in "0 1, "*) pass "bubblewrap sandbox (tasks/sandbox.ts) runs Python as PID 1 without network: $sandbox" ;; *) fail "bubblewrap sandbox: $sandbox" ;; esac
status=$(dc run --rm -T bot node bin/sweetloop.cjs db status 2>&1 | tr -d '\r')
applied=$(printf '%s\n' "$status" | grep -c '  applied')
case $status in
  *'Database schema is up to date.'*) pass "docker compose run bot sweetloop db status: $applied migration(s) applied, up to date" ;;
  *) fail "docker compose run bot sweetloop db status: $(printf '%s\n' "$status" | tail -n 1)" ;;
esac

step "trainer"
tready=$(get trainer http://127.0.0.1:9465/health/ready)
case $tready in 200*) pass "trainer /health/ready: $tready" ;; *) fail "trainer /health/ready: $tready" ;; esac
state=$(get trainer http://127.0.0.1:9465/metrics | grep -E '^sweetloop_trainer_state\{.*\} 1$' | head -n 1)
if [ -n "$state" ]; then pass "trainer state: $state"; else fail "trainer /metrics has no sweetloop_trainer_state"; fi

step "dashboard (profile dashboard)"
# Printed once, on the line after "Token ...".
token=$(dc run --rm -T bot node bin/sweetloop.cjs dashboard token create --role operator 2>/dev/null | tr -d '\r' | sed -n '/^Token /{n;p;q}')
if [ -n "$token" ]; then pass "dashboard token created (docker compose run bot sweetloop dashboard token create)"; else fail "no dashboard token printed"; fi
if dcd up -d dashboard >/tmp/compose-check-dashboard.log 2>&1; then pass "docker compose --profile dashboard up -d dashboard: exit 0"; else fail "dashboard did not start: $(tail -n 3 /tmp/compose-check-dashboard.log)"; fi
url=http://127.0.0.1:$DASHBOARD_PUBLISHED_PORT
code=000
for _ in $(seq 60); do code=$(curl -s -o /dev/null -w '%{http_code}' "$url/"); [ "$code" != 000 ] && break; sleep 2; done
if [ "$code" = 401 ]; then pass "GET $url/ without a token: 401"; else fail "GET $url/ without a token: $code (expected 401)"; fi
jar=$(mktemp)
login=$(curl -s -c "$jar" -o /dev/null -w '%{http_code}' "$url/login?token=$token")
read -r code final <<<"$(curl -s -b "$jar" -L -o /dev/null -w '%{http_code} %{url_effective}' "$url/")"
rm -f "$jar"
if [ "$code" = 200 ]; then pass "GET $url/ with the token's cookie: 200 at $final (login answered $login)"; else fail "GET $url/ with the token's cookie: $code at $final (login answered $login)"; fi

step "a bot without DISCORD_TOKEN"
# The bot image with nothing configured, under the restart policy compose gave the bot service: it must exit
# non-zero with one line naming the setting, and Docker must give up after the policy's retries.
image=$(docker inspect -f '{{.Image}}' "$(dc ps -q bot)")
policy=$(docker inspect -f '{{.HostConfig.RestartPolicy.Name}}:{{.HostConfig.RestartPolicy.MaximumRetryCount}}' "$(dc ps -q bot)")
probe=$(docker run -d --network none --restart "$policy" --label com.sweetloop.compose-check=1 "$image")
max=${policy#*:}
for _ in $(seq 90); do
  read -r pstatus restarts <<<"$(docker inspect -f '{{.State.Status}} {{.RestartCount}}' "$probe")"
  [ "$pstatus" = exited ] && [ "$restarts" -ge "$max" ] && break
  sleep 2
done
read -r pstatus pcode restarts <<<"$(docker inspect -f '{{.State.Status}} {{.State.ExitCode}} {{.RestartCount}}' "$probe")"
lines=$(docker logs "$probe" 2>&1 | sort | uniq -c | sed 's/^ *//')
docker rm -f -v "$probe" >/dev/null
if [ "$pstatus" = exited ] && [ "$pcode" != 0 ] && [ -n "$lines" ] && [ "$(printf '%s\n' "$lines" | wc -l)" = 1 ] && printf '%s' "$lines" | grep -q DISCORD_TOKEN; then
  pass "restart policy $policy: exited with code $pcode after $restarts restarts, every run printing the one line: $lines"
else
  fail "a bot without DISCORD_TOKEN: status $pstatus, exit $pcode, $restarts restarts, output: $lines"
fi

step "images"
docker images --format '{{.Repository}}:{{.Tag}} {{.ID}} {{.Size}}' | grep "^$project-" | sed 's/^/        /'

if [ "$keep" = 1 ]; then
  step "left up: docker compose -p $project ${files[*]} --profile dashboard down -v"
else
  step "down"
  trap - EXIT
  if dcd down -v --remove-orphans >/dev/null 2>&1; then pass "docker compose down -v"; else fail "docker compose down -v"; fi
fi
echo
if [ "$failed" = 0 ]; then echo "compose-check: every check passed"; else echo "compose-check: some checks FAILED"; fi
exit "$failed"
