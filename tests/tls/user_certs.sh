#!/usr/bin/env bash
# user_certs.sh RUN_SH PROGRAM MODE NPES: makes a CA, a certificate for 127.0.0.1 and an
# encrypted PKCS#8 key (openssl pkcs8 -topk8 -v2 aes-256-cbc), or a legacy encrypted key, and
# runs PROGRAM MODE as NPES copies under hand-set Slurm variables with PE 0 serving the store
# at tcp://127.0.0.1 on a port range of its own (tests/launchers/run.sh).
set -euo pipefail
. "$(dirname "$0")/test_ca.sh"
run_sh=$1 program=$2 mode=$3 npes=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
make_test_ca pe
password="secret-$$"
if [ "$mode" = legacy ]; then
    quiet openssl ec -in plain.key -aes256 -passout "pass:$password" -out pe.key
    grep -q 'Proc-Type: 4,ENCRYPTED' pe.key
else
    quiet openssl pkcs8 -topk8 -v2 aes-256-cbc -in plain.key -passout "pass:$password" -out pe.key
    grep -q 'BEGIN ENCRYPTED PRIVATE KEY' pe.key
fi
# A CRL from the CA that revokes nothing: CRLs are read and honoured.
printf '[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\ncrlnumber=crlnumber\ndefault_md=sha256\n' \
    >ca.cnf
: >index.txt
echo 01 >crlnumber
quiet openssl ca -config ca.cnf -gencrl -keyfile ca.key -cert ca.pem -crldays 2 -out crl.pem
info="tlsCaPath: $dir/; tlsCaFile: ca.pem; tlsCert: $dir/pe.pem; tlsCrlPath: $dir;"
info+=" tlsCrlFile: crl.pem; packagePath: /unused"
lo=$((20000 + ($$ % 4000) * 10))
want=ok regex="user_certs: $npes PEs over TLS"
case $mode in
legacy) want="$(printf '0 %.0s' $(seq "$npes") | sed 's/ $//')" \
    regex="legacy OpenSSL encryption \\(Proc-Type: 4,ENCRYPTED\\)" ;;
none) want=nonzero regex="no certificates were given.*SHMEM_TLS_DISABLE=1" ;;
esac
# A legacy run makes no job: run.sh's one-job check is for "ok" only.
"$run_sh" -e SHMEM_BOOTSTRAP_ADDR=tcp://127.0.0.1 -e "SHMEM_INSTANCE_PORT_RANGE=$lo-$((lo + 9))" \
    -e "TLS_TEST_INFO=$info" -e "TLS_TEST_KEY=$dir/pe.key" -e "TLS_TEST_PASSWORD=$password" \
    slurm "$npes" "$want" "$regex" -- "$program" "$mode"
