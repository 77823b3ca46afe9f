#!/usr/bin/env bash
# build_sh_deps.sh <build.sh> <work-dir>
# scripts/build.sh --deps-only on a pretend fresh Debian machine: stand-ins for dpkg-query (every
# package missing), apt-get and sudo come first in PATH, and apt-get takes the two locks the
# real one takes, as files here: the package lists' lock (apt-get update, which fails at once
# when it is held) and dpkg's lock (apt-get install, which waits for it up to
# -o DPkg::Lock::Timeout, else fails at once). Checks that
#   1. -examples installs the build tools only, no test tools; -uttests all of them;
#      -python_extension the build tools and python3-venv;
#   2. dpkg's lock held for a few seconds (unattended-upgrades on a fresh machine): it waits;
#   3. the lists' lock held for a few seconds: apt-get update is tried again until it works;
#   4. a lock that is never released: it stops after --apt-wait seconds, saying so.
set -euo pipefail
build_sh=${1:?}; work=${2:?}
if [[ ! -r /etc/debian_version ]]; then
    echo "SKIP: build.sh installs packages on Debian only"
    exit 77
fi

rm -rf "$work"
mkdir -p "$work/bin"
stub=$work/bin
holder=""
cleanup() {
    if [[ -n $holder ]]; then
        kill "$holder" 2>/dev/null || true
        wait "$holder" 2>/dev/null || true
    fi
}
trap cleanup EXIT

cat >"$stub/dpkg-query" <<'EOF'
#!/bin/sh
exit 1
EOF
cat >"$stub/sudo" <<'EOF'
#!/bin/sh
exec "$@"
EOF
cat >"$stub/apt-get" <<EOF
#!/usr/bin/env bash
# apt-get stand-in: takes the lock of the command and logs the command line.
wait=0
for arg; do
    case \$arg in DPkg::Lock::Timeout=*) wait=\${arg#*=} ;; esac
done
case " \$* " in
    *" update "*)
        if ! flock -n "$work/lists.lock" true; then
            echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1 (apt-get)" >&2
            echo "E: Unable to lock directory /var/lib/apt/lists/" >&2
            exit 100
        fi ;;
    *" install "*)
        if ! flock -w "\$wait" "$work/dpkg.lock" true; then
            echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 1 (apt-get)" >&2
            echo "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?" >&2
            exit 100
        fi ;;
esac
echo "apt-get \$*" >>"$work/apt.log"
EOF
chmod +x "$stub"/*
touch "$work/lists.lock" "$work/dpkg.lock"

failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
# hold <lock> <seconds>: another process holds the lock from now on for that long.
hold() {
    rm -f "$work/held"
    (
        exec 9>"$work/$1"
        flock 9
        touch "$work/held"
        exec sleep "$2"
    ) &
    holder=$!
    for _ in $(seq 100); do
        [[ -e $work/held ]] && return 0
        sleep 0.1
    done
    echo "FAIL: could not take $1 for the test"
    exit 1
}
release() {
    cleanup
    holder=""
}
# deps <args>...: build.sh --deps-only with the stand-ins; output in $work/out, status in $rc.
deps() {
    rm -f "$work/apt.log"
    rc=0
    PATH=$stub:$PATH timeout 120 "$build_sh" --deps-only "$@" >"$work/out" 2>&1 || rc=$?
    sed 's/^/    | /' "$work/out"
}
installed() { grep ' install ' "$work/apt.log" 2>/dev/null || true; }

echo "--- 1. -examples: build tools only"
deps -examples
((rc == 0)) || fail "-examples --deps-only exited $rc"
line=$(installed)
for pkg in cmake ninja-build g++ ca-certificates; do
    [[ " $line " == *" $pkg "* ]] || fail "-examples does not install $pkg: $line"
done
for pkg in clang-format libgtest-dev openmpi-bin iproute2 libucx0 pkg-config; do
    [[ " $line " != *" $pkg "* ]] || fail "-examples installs $pkg, which only the tests need"
done

echo "--- 1. -uttests: build and test tools"
deps -uttests
((rc == 0)) || fail "-uttests --deps-only exited $rc"
line=$(installed)
for pkg in cmake ninja-build g++ ca-certificates libgtest-dev pkg-config clang-format \
    openmpi-bin libopenmpi-dev make iproute2 libucx0 git; do
    [[ " $line " == *" $pkg "* ]] || fail "-uttests does not install $pkg: $line"
done

echo "--- 1. -python_extension: build tools and the wheel's Python, no test tools"
deps -python_extension
((rc == 0)) || fail "-python_extension --deps-only exited $rc"
line=$(installed)
for pkg in cmake ninja-build g++ python3 python3-venv; do
    [[ " $line " == *" $pkg "* ]] || fail "-python_extension does not install $pkg: $line"
done
for pkg in clang-format libgtest-dev openmpi-bin; do
    [[ " $line " != *" $pkg "* ]] || fail "-python_extension installs $pkg, which only the tests need"
done
deps -uttests
[[ " $(installed) " == *" python3-venv "* ]] || fail "-uttests does not install python3-venv"

# 2 and 3: each of apt's locks held for 4 s; build.sh must wait (dpkg's) or try again (the
# package lists') and then install.
case_no=2
for lock in "dpkg.lock:dpkg's lock" "lists.lock:the package lists' lock"; do
    file=${lock%%:*} what=${lock#*:}
    echo "--- $case_no. $what held for 4 s"
    hold "$file" 4
    deps -examples
    release
    ((rc == 0)) || fail "with $what held for 4 s, build.sh exited $rc instead of waiting"
    [[ -n $(installed) ]] || fail "with $what held for 4 s, nothing was installed"
    case_no=$((case_no + 1))
done

echo "--- 4. dpkg's lock never released, --apt-wait 3"
hold dpkg.lock 300
start=$SECONDS
deps -examples --apt-wait 3
release
((rc != 0)) || fail "with dpkg's lock held, build.sh succeeded"
grep -q 'another apt or dpkg process still holds its lock after 3s' "$work/out" ||
    fail "the failure does not say that another apt or dpkg holds the lock"
((SECONDS - start < 60)) || fail "build.sh took $((SECONDS - start)) s to give up after --apt-wait 3"

if ((failures)); then
    echo "FAIL: $failures check(s) above"
    exit 1
fi
rm -rf "$work"
echo "OK: build.sh installs what the mode needs and waits for apt's locks"
