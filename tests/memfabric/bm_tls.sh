#!/usr/bin/env bash
# bm_tls.sh PROGRAM: makes a CA, a certificate for 127.0.0.1 and an encrypted PKCS#8 key with
# its password in a file, and runs bm_pool's basic scenario with the config store over TLS
# (smem_bm_config_t.storeTlsConfig), forked and as separate processes; a rank without TLS is
# refused by a store served over TLS.
set -euo pipefail
program=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
quiet() { "$@" >/dev/null 2>&1 || { echo "bm_tls.sh: failed: $*"; "$@"; exit 1; }; }
quiet openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=test-ca -keyout ca.key -out ca.pem
quiet openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=rank \
    -keyout plain.key -out pe.csr
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >ext.cnf
quiet openssl x509 -req -in pe.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile ext.cnf -out pe.pem
printf 'secret-%s\n' "$$" >pass
quiet openssl pkcs8 -topk8 -v2 aes-256-cbc -in plain.key -passout "file:pass" -out pe.key
grep -q 'BEGIN ENCRYPTED PRIVATE KEY' pe.key
"$program" spawn 2 explicit basic "$dir"
"$program" fork 3 auto basic "$dir"
"$program" spawn 2 explicit tlsrefused "$dir"
