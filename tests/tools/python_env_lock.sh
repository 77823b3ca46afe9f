#!/usr/bin/env bash
# python_env_lock.sh <python-env.sh> <work-dir>
# scripts/python-env.sh takes one environment's lock before it makes the environment or installs
# into it (the torch environment is shared by every checkout): while another process holds the
# lock, a second run says it waits, makes and installs nothing, and gives up after
# SHMEM_VENV_LOCK_WAIT seconds naming the lock.
set -euo pipefail
python_env=${1:?}; work=${2:?}
rm -rf "$work"
mkdir -p "$work"
holder=""
cleanup() {
    [[ -n $holder ]] && kill "$holder" 2>/dev/null
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
venv=$work/venv
(
    exec 9>"$venv.lock"
    flock 9
    touch "$work/held"
    exec sleep 60
) &
holder=$!
for _ in $(seq 100); do
    [[ -e $work/held ]] && break
    sleep 0.1
done
[[ -e $work/held ]] || { echo "FAIL: could not take the lock for the test"; exit 1; }

rc=0
start=$SECONDS
SHMEM_VENV_LOCK_WAIT=3 timeout 60 "$python_env" --venv "$venv" >"$work/out" 2>&1 || rc=$?
sed 's/^/    | /' "$work/out"
failures=0
((rc != 0)) || { echo "FAIL: python-env.sh went on while another run held $venv.lock"; failures=1; }
((SECONDS - start >= 3)) || { echo "FAIL: it did not wait SHMEM_VENV_LOCK_WAIT seconds"; failures=1; }
[[ ! -e $venv ]] || { echo "FAIL: it made $venv while another run held the lock"; failures=1; }
grep -q "waiting for it (lock $venv.lock" "$work/out" || { echo "FAIL: no line says it waits for the lock"; failures=1; }
grep -q "still locked" "$work/out" || { echo "FAIL: no line says why it gave up"; failures=1; }
((failures == 0)) || exit 1
echo "python-env.sh: waits for another run's lock, then gives up saying so"
