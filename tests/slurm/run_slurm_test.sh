#!/usr/bin/env bash
# A real Slurm on this machine: munged + slurmctld + slurmd (Debian's slurm-wlm, munge)
# configured for one node on localhost in a temporary directory, started here as root
# (no systemd) and stopped on exit. Submits a small experiment with
# `specsweep slurm --submit` (a 2-task job array + the merge job depending on it), waits
# for both (bounded), and checks that the merged point set and greedy acceptance
# figures equal those of a plain local `specsweep run` of the same experiment.
#
# Prints "SKIPPED: <reason>" and exits 0 when the daemons cannot be started (not root,
# packages missing, a daemon fails); any failure after that exits 1.
# Usage: tests/slurm/run_slurm_test.sh [BUILD_DIR]   (KEEP=1 keeps the temporary directory)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
bin=$build/specsweep
start=$(date +%s)
limit=${SLURM_TEST_TIMEOUT:-150}   # seconds for the jobs to finish

skip() { echo "SKIPPED: slurm test: $*"; exit 0; }
fail() { echo "FAILED: slurm test: $*" >&2; exit 1; }

if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  exec sudo -n env "PATH=$PATH" "SPECSWEEP_MODELS=${SPECSWEEP_MODELS:-}" bash "$0" "$@"
fi
[ "$(id -u)" -eq 0 ] || skip "needs root to start munged/slurmctld/slurmd (running as uid $(id -u))"
for c in munged slurmctld slurmd sbatch squeue scontrol sinfo jq; do
  command -v "$c" >/dev/null || skip "'$c' not found (apt-get install slurm-wlm munge jq: .ci/install-slurm)"
done
[ -x "$bin" ] || fail "$bin not built"
models=${SPECSWEEP_MODELS:-$repo/../shared/models}
for m in tinystories-260k tinystories-656k; do
  [ -d "$models/$m" ] || skip "model $m not in $models (shared models folder missing)"
done
models=$(cd "$models" && pwd)

tmp=$(mktemp -d /tmp/specsweep-slurm.XXXXXX)
chmod 700 "$tmp"
pids=()
jobs_submitted=""
cleanup() {
  set +e
  [ -n "$jobs_submitted" ] && scancel $jobs_submitted 2>/dev/null
  # Stop in reverse order of start, each by its own pid.
  for (( i=${#pids[@]}-1; i>=0; i-- )); do kill "${pids[$i]}" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
show_logs() { for f in "$tmp"/log/*.log; do echo "--- $f"; tail -n 15 "$f"; done; }

# --- munge: own key, socket, pid and log files.
mkdir -p "$tmp/munge" "$tmp/log" "$tmp/state" "$tmp/spool"
chmod 700 "$tmp/munge"
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"
sock=$tmp/munge/munge.socket
munged -F -f --key-file="$tmp/munge/munge.key" --socket="$sock" --pid-file="$tmp/munge/munged.pid" \
  --seed-file="$tmp/munge/munged.seed" --log-file="$tmp/log/munged.log" >>"$tmp/log/munged.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { show_logs; skip "munged did not start"; }

# --- slurm.conf: one node (this machine, as slurmd -C sees it) on 127.0.0.1.
host=$(hostname -s)
node=$(slurmd -C | head -n 1)
[[ $node == NodeName=* ]] || skip "slurmd -C gave no node line: $node"
port=$(( 20000 + RANDOM % 20000 ))
export SLURM_CONF=$tmp/slurm.conf
cat > "$SLURM_CONF" <<CONF
ClusterName=specsweep-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$(( port + 1 ))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MinJobAge=600
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -D -i -f "$SLURM_CONF" >>"$tmp/log/slurmctld.out.log" 2>&1 &
pids+=($!)
slurmd -D -N "$host" -f "$SLURM_CONF" >>"$tmp/log/slurmd.out.log" 2>&1 &
pids+=($!)
ready=""
for _ in $(seq 150); do
  state=$(sinfo -h -N -o '%T' 2>/dev/null | head -n 1 || true)
  if [ "$state" = idle ]; then ready=1; break; fi
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || { show_logs; skip "a Slurm daemon exited (pid $p)"; }; done
  sleep 0.2
done
[ -n "$ready" ] || { show_logs; skip "the node did not become idle within 30 s (state: ${state:-none})"; }
echo "slurm: $(sinfo -V) up: node $host idle ($(( $(date +%s) - start )) s)"

# --- a tiny experiment: 2 models (2 baseline groups), 3 points each, greedy.
cat > "$tmp/tiny_cluster.yaml" <<YAML
name: tiny_cluster
models: [tinystories-260k, tinystories-656k]
prompts:
  file: $repo/experiments/prompts/tinystories.txt
  count: 2
repetitions: 1
warmup: 0
sweep:
  k: [2]
  max_new_tokens: 24
decoders:
  - ar
  - decoder: speculative
    draft: [layers=1]
  - decoder: self-spec
    draft_quant: [q8_0]
YAML
export OMP_WAIT_POLICY=passive
"$bin" --models "$models" --threads 1 run "$tmp/tiny_cluster.yaml" -o "$tmp/local" > "$tmp/local.out" 2>&1 ||
  { cat "$tmp/local.out"; fail "local run failed"; }

out=$("$bin" --models "$models" slurm "$tmp/tiny_cluster.yaml" -o "$tmp/cluster" --shards 2 --cpus-per-task 1 \
      --time 5 --submit) || fail "specsweep slurm --submit failed: $out"
echo "$out"
array=$(sed -n 's/^array job: \([0-9]*\).*/\1/p' <<<"$out")
merge=$(sed -n 's/^merge job: \([0-9]*\).*/\1/p' <<<"$out")
[ -n "$array" ] && [ -n "$merge" ] || fail "no job ids in the output of specsweep slurm"
jobs_submitted="$array $merge"

fmt='%.10i %.30j %.10T %.8M %.5C %.30E %R'
# Waits (bounded) until jobs $1 leave the queue, prints their squeue/scontrol/sacct lines,
# fails unless every one COMPLETED.
wait_jobs() {
  local ids=$1 deadline=$(( $(date +%s) + limit )) j bad
  echo "squeue after submission:"
  squeue -j "$ids" -o "$fmt"
  while squeue -h -j "$ids" 2>/dev/null | grep -q .; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      squeue --states=all -j "$ids" -o "$fmt"; show_logs
      fail "jobs $ids not finished within $limit s"
    fi
    sleep 1
  done
  echo "squeue --states=all after the jobs:"
  squeue --states=all -j "$ids" -o "$fmt"
  echo "scontrol show job:"
  for j in ${ids//,/ }; do
    scontrol show job -o "$j" | while read -r line; do
      tr ' ' '\n' <<<"$line" | grep -E '^(JobId|ArrayJobId|ArrayTaskId|JobName|JobState|ExitCode|RunTime|Dependency|NodeList)=' |
        paste -sd' '
    done
  done
  if sacct -n -j "$ids" -o JobID,JobName%26,State,ExitCode,Elapsed >"$tmp/sacct.out" 2>&1; then
    echo "sacct:"; cat "$tmp/sacct.out"
  else
    echo "sacct: not available here (no accounting storage configured): $(head -n 1 "$tmp/sacct.out")"
  fi
  bad=$(squeue --states=all -h -j "$ids" -o '%i %T' | grep -v COMPLETED || true)
  if [ -n "$bad" ]; then
    for f in "$tmp"/cluster/logs/*.log; do echo "--- $f"; tail -n 20 "$f"; done
    fail "jobs not COMPLETED: $bad"
  fi
}
wait_jobs "$array,$merge"

# --- merged vs local: same point set, same greedy acceptance figures.
merged=$tmp/cluster/tiny_cluster.json
figures='[.benchmarks[] | {key, acceptance_rate, mean_accepted_length, generated_tokens}] | sort_by(.key)'
jq -S "$figures" "$tmp/local/tiny_cluster.json" > "$tmp/local.fig"
compare_merged() {
  [ -f "$merged" ] || fail "merged results $merged missing"
  jq -S "$figures" "$merged" > "$tmp/merged.fig"
  n=$(jq length "$tmp/merged.fig")
  [ "$n" -eq 6 ] || fail "merged file has $n points, expected 6"
  diff -u "$tmp/local.fig" "$tmp/merged.fig" || fail "merged figures differ from the local run"
  local shards
  shards=$(jq '[.benchmarks[].shard] | unique | length' "$merged")
  [ "$shards" -eq 2 ] || fail "merged records come from $shards shard(s), expected 2"
  jq -e '.context.shards | length == 2' "$merged" >/dev/null || fail "context.shards does not hold 2 contexts"
}
compare_merged
echo "merged point set and acceptance figures equal the local run"

# --- a task that died mid-way: shard 1 has its group's records (a group is appended
# whole) plus half a line of the next write and no final .json; resubmitted alone, it
# resumes (reuses the group, drops the cut line), and a new merge follows.
jsonl=$tmp/cluster/tiny_cluster.shard-1-of-2.jsonl
{ cat "$jsonl"; head -n 1 "$jsonl" | head -c 60; } > "$jsonl.cut" && mv "$jsonl.cut" "$jsonl"
rm -f "$tmp/cluster/tiny_cluster.shard-1-of-2.json" "$merged"
array2=$(sbatch --parsable --array=1 "$tmp/cluster/tiny_cluster.array.sbatch") || fail "resubmitting task 1 failed"
array2=${array2%%;*}
merge2=$(sbatch --parsable --dependency=afterok:"$array2" "$tmp/cluster/tiny_cluster.merge.sbatch") ||
  fail "resubmitting the merge failed"
merge2=${merge2%%;*}
jobs_submitted="$jobs_submitted $array2 $merge2"
echo "resubmitted task 1 alone: array job $array2, merge job $merge2"
wait_jobs "$array2,$merge2"
log1=$tmp/cluster/logs/tiny_cluster.shard-1-of-2.job-$array2.log
grep -q '3 resumed, 0 measured' "$log1" || { cat "$log1"; fail "task 1 did not resume (expected 3 resumed, 0 measured)"; }
compare_merged
echo "resumed task 1 + new merge: figures still equal the local run"

echo "merged table:"
"$bin" table "$merged" --format md
"$bin" check "$merged" --baseline "$tmp/local/tiny_cluster.json" >/dev/null ||
  fail "check of the merged results against the local run failed"
echo "PASSED: slurm test: array $array (2 tasks) + merge $merge, $n points equal to the local run" \
     "($(( $(date +%s) - start )) s)"
