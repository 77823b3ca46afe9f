#!/usr/bin/env bash
# bm_tls.sh PROGRAM: makes a CA, a certificate for 127.0.0.1 and an encrypted PKCS#8 key with
# its password in a file, and runs bm_pool's basic scenario with the config store over TLS
# (smem_bm_config_t.storeTlsConfig), forked and as separate processes; a rank without TLS is
# refused by a store served over TLS.
set -euo pipefail
. "$(dirname "$0")/../tls/test_ca.sh"
program=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
make_test_ca rank
printf 'secret-%s\n' "$$" >pass
quiet openssl pkcs8 -topk8 -v2 aes-256-cbc -in plain.key -passout "file:pass" -out pe.key
grep -q 'BEGIN ENCRYPTED PRIVATE KEY' pe.key
"$program" spawn 2 explicit basic "$dir"
"$program" fork 3 auto basic "$dir"
"$program" spawn 2 explicit tlsrefused "$dir"
