#!/usr/bin/env bash
# Runs N proxysim stress shards on this machine, shard i serving metrics on
# 127.0.0.1:$((9464+i)), and a Prometheus (when installed) scraping them with
# the alert rules of deploy/prometheus/rules.yml, on 127.0.0.1:9090.
#
#   deploy/local/run.sh               3 shards, 10 minutes each
#   deploy/local/run.sh 4             4 shards
#   DURATION=1h deploy/local/run.sh   each shard's --duration
#   PROXYSIM_ARGS='--cpus 64 --jitter 0.05' deploy/local/run.sh
#                                     extra `proxysim stress` flags
#   BASE_PORT=19464 PROM_PORT=19090   other ports
#   KEEP=1                            keep the work directory (logs,
#                                     reports, TSDB) after exit
#
# Everything binds 127.0.0.1 only. Ctrl-C stops the shards and Prometheus
# and removes the work directory (kept when a shard failed, or with KEEP=1).
set -euo pipefail

usage() {
	sed -n '2,16s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

die() {
	printf 'run.sh: %s\n' "$*" >&2
	exit 2
}

is_uint() {
	[[ $1 =~ ^[0-9]+$ ]]
}

case "${1:-}" in
-h | --help)
	usage
	exit 0
	;;
esac

n="${1:-3}"
duration="${DURATION:-10m}"
base_port="${BASE_PORT:-9464}"
prom_port="${PROM_PORT:-9090}"
keep="${KEEP:-0}"
extra=()
if [[ -n ${PROXYSIM_ARGS:-} ]]; then
	read -r -a extra <<<"$PROXYSIM_ARGS"
fi

if ! is_uint "$n" || ((n < 1 || n > 64)); then
	die "shard count must be 1-64, not '$n'"
fi
if ! is_uint "$base_port" || ((base_port < 1024 || base_port + n > 65535)); then
	die "BASE_PORT must be 1024-$((65535 - n)), not '$base_port'"
fi
if ! is_uint "$prom_port" || ((prom_port < 1024 || prom_port > 65535)); then
	die "PROM_PORT must be 1024-65535, not '$prom_port'"
fi
if ((prom_port >= base_port && prom_port < base_port + n)); then
	die "PROM_PORT $prom_port collides with the shards' ports $base_port-$((base_port + n - 1))"
fi
command -v go >/dev/null || die "go is not on PATH"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/proxysim-local.XXXXXX")"

shard_pids=()
prom_pid=""

# stop PID...: SIGTERM (proxysim stops its run cleanly), then SIGKILL
# whatever is left after 15 seconds. Only the given process ids.
# shellcheck disable=SC2317 # reached through the EXIT trap
stop() {
	local pid alive i
	for pid in "$@"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for ((i = 0; i < 150; i++)); do
		alive=0
		for pid in "$@"; do
			if kill -0 "$pid" 2>/dev/null; then
				alive=1
			fi
		done
		((alive)) || break
		sleep 0.1
	done
	for pid in "$@"; do
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
}

# shellcheck disable=SC2317 # the EXIT trap
cleanup() {
	local status=$?
	trap - EXIT INT TERM
	local pids=("${shard_pids[@]}")
	if [[ -n $prom_pid ]]; then
		pids+=("$prom_pid")
	fi
	if ((${#pids[@]})); then
		stop "${pids[@]}"
	fi
	if [[ $keep == 1 ]]; then
		printf 'run.sh: work directory kept: %s\n' "$tmp" >&2
	else
		rm -rf -- "$tmp"
	fi
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

printf 'run.sh: building proxysim into %s\n' "$tmp"
(cd "$root" && go build -o "$tmp/proxysim" ./cmd/proxysim)

# Prometheus configuration: one target per shard, labelled with its shard.
cp "$root/deploy/prometheus/rules.yml" "$tmp/rules.yml"
{
	printf '# Written by deploy/local/run.sh.\n'
	printf 'global:\n  scrape_interval: 5s\n  scrape_timeout: 4s\n  evaluation_interval: 5s\n'
	printf 'rule_files:\n  - rules.yml\n'
	printf 'scrape_configs:\n  - job_name: proxysim\n    honor_labels: true\n    static_configs:\n'
	for ((i = 0; i < n; i++)); do
		printf '      - targets: ["127.0.0.1:%d"]\n        labels:\n          shard: "%d"\n' "$((base_port + i))" "$i"
	done
} >"$tmp/prometheus.yml"

if command -v prometheus >/dev/null; then
	if command -v promtool >/dev/null; then
		promtool check config "$tmp/prometheus.yml" >/dev/null || die "promtool rejects $tmp/prometheus.yml"
	fi
	(
		trap - EXIT INT TERM
		exec prometheus --config.file="$tmp/prometheus.yml" \
			--web.listen-address="127.0.0.1:$prom_port" \
			--storage.tsdb.path="$tmp/data"
	) >"$tmp/prometheus.log" 2>&1 &
	prom_pid=$!
	printf 'run.sh: prometheus: pid %d, http://127.0.0.1:%d (alerts: /alerts), log %s/prometheus.log\n' \
		"$prom_pid" "$prom_port" "$tmp"
else
	printf 'run.sh: prometheus is not installed (apt-get install prometheus); the shards run without it.\n' >&2
	printf 'run.sh: its configuration would be %s\n' "$tmp/prometheus.yml" >&2
fi

for ((i = 0; i < n; i++)); do
	dir="$tmp/shard-$i"
	mkdir -p "$dir"
	(
		trap - EXIT INT TERM
		cd "$dir"
		exec "$tmp/proxysim" stress --shard "$i" --shards "$n" \
			--metrics-addr "127.0.0.1:$((base_port + i))" --duration "$duration" \
			${extra[@]+"${extra[@]}"}
	) >"$dir/log" 2>&1 &
	shard_pids+=("$!")
	printf 'run.sh: shard %d: pid %d, metrics http://127.0.0.1:%d/metrics, log %s/log\n' \
		"$i" "$!" "$((base_port + i))" "$dir"
done

printf 'run.sh: running for %s; Ctrl-C stops everything\n' "$duration"
failed=0
for ((i = 0; i < n; i++)); do
	if wait "${shard_pids[$i]}"; then
		printf 'run.sh: shard %d finished cleanly\n' "$i"
	else
		code=$?
		failed=1
		printf 'run.sh: shard %d exited %d (1: invariant violation); see %s; its log ends:\n' "$i" "$code" "$tmp/shard-$i" >&2
		tail -n 5 "$tmp/shard-$i/log" | sed 's/^/    /' >&2
	fi
done
shard_pids=()
if ((failed)); then
	keep=1
fi

if [[ -n $prom_pid && -t 0 ]]; then
	printf 'run.sh: all shards done; Prometheus keeps serving http://127.0.0.1:%d until Ctrl-C\n' "$prom_port"
	wait "$prom_pid" || true
	prom_pid=""
fi
exit "$failed"
