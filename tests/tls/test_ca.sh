# test_ca.sh, sourced by the TLS tests' scripts: `quiet CMD...` runs CMD without its output
# unless it fails; `make_test_ca CN` makes, in the current directory, a throw-away CA (ca.key,
# ca.pem) and a certificate for 127.0.0.1 signed by it for both ends of a connection (pe.pem,
# its unencrypted key plain.key; the subject's CN is CN).
quiet() { "$@" >/dev/null 2>&1 || { echo "$(basename "$0"): failed: $*"; "$@"; exit 1; }; }
make_test_ca() {
    quiet openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=test-ca -keyout ca.key -out ca.pem
    quiet openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
        -keyout plain.key -out pe.csr
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >ext.cnf
    quiet openssl x509 -req -in pe.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
        -extfile ext.cnf -out pe.pem
}
