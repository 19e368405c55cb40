#!/bin/sh
# Restart the PostgreSQL server under test with a chosen TLS 1.3 cipher suite and with or
# without AES-NI in its OpenSSL: the system_shell of catalog entries 01 and 02.
#
# PostgreSQL 15 has no setting for the TLS 1.3 suites (ssl_ciphers covers TLS 1.2 and older;
# ssl_tls13_ciphers arrives in PostgreSQL 18), and OpenSSL reads its capability mask once per
# process, so both go into the server's environment and need a restart:
#
#   01-restart-postgres.sh suite TLS_AES_128_GCM_SHA256   writes the OpenSSL configuration that
#                                                         allows only that suite (no restart)
#   01-restart-postgres.sh suite any                      OpenSSL's default suites (plain TCP)
#   01-restart-postgres.sh aesni off                      restarts with OPENSSL_ia32cap masking
#                                                         AES-NI and PCLMULQDQ, and that config
#   01-restart-postgres.sh aesni on                       restarts without the mask
#   01-restart-postgres.sh state                          prints what the running server has
#                                                         (a before-sample hook: kept per sample)
#
# An experiment's factors run their system_shell in the order they are written, so the
# encryption factor (suite) comes before the aesni factor (restart): one restart per switch.
#
# It reads PGDATA (the server's data directory; required), PG_CTL (default: pg_ctl on the PATH),
# PG_RUNAS (a user to run pg_ctl as, through runuser, when the hook runs as root) and PG_LOG
# (the server's log after the restart; default $PGDATA/catalog-restart.log). pg_ctl restart
# keeps the options the server was started with (postmaster.opts).
set -eu

: "${PGDATA:?set PGDATA to the data directory of the server under test}"
PG_CTL=${PG_CTL:-pg_ctl}
PG_LOG=${PG_LOG:-$PGDATA/catalog-restart.log}
CONF=$PGDATA/catalog-openssl.cnf
# OpenSSL's x86 capability vector: bit 57 is AES-NI, bit 33 PCLMULQDQ (GHASH); "~" clears them.
MASK='~0x200000200000000'

as_server() {
    if [ -n "${PG_RUNAS:-}" ]; then runuser -u "$PG_RUNAS" -- "$@"; else "$@"; fi
}

case "${1:-} ${2:-}" in
suite\ TLS_* | suite\ any)
    # OpenSSL's configuration for every SSL_CTX the server makes; PostgreSQL then applies its
    # ssl_ciphers, which touches only TLS 1.2 and older.
    {
        printf '%s\n' 'openssl_conf = openssl_init' '[openssl_init]' 'ssl_conf = ssl_sect' \
            '[ssl_sect]' 'system_default = system_default_sect' '[system_default_sect]'
        [ "$2" = any ] || echo "Ciphersuites = $2"
    } > "$CONF.tmp"
    chmod 644 "$CONF.tmp" && mv "$CONF.tmp" "$CONF"
    echo "next restart allows $2"
    ;;
aesni\ on | aesni\ off)
    [ -f "$CONF" ] || { echo "no $CONF: run '$0 suite SUITE' first" >&2; exit 2; }
    if [ "$2" = off ]; then
        as_server env OPENSSL_CONF="$CONF" OPENSSL_ia32cap="$MASK" \
            "$PG_CTL" -D "$PGDATA" -l "$PG_LOG" -w -t 60 -m fast restart >/dev/null
    else
        as_server env -u OPENSSL_ia32cap OPENSSL_CONF="$CONF" \
            "$PG_CTL" -D "$PGDATA" -l "$PG_LOG" -w -t 60 -m fast restart >/dev/null
    fi
    echo "restarted with AES-NI $2, suites: $(sed -n 's/^Ciphersuites = //p' "$CONF")"
    ;;
state\ )
    # The running postmaster's own environment, not what was asked for: the proof per sample.
    # (The suites are read from the configuration file it names; only a restart follows a
    # change of that file, in the same switch of condition.)
    pid=$(head -n 1 "$PGDATA/postmaster.pid")
    env_of=$(tr '\0' '\n' < "/proc/$pid/environ")
    mask=$(printf '%s\n' "$env_of" | sed -n 's/^OPENSSL_ia32cap=//p')
    conf=$(printf '%s\n' "$env_of" | sed -n 's/^OPENSSL_CONF=//p')
    suites=""
    [ -z "$conf" ] || suites=$(sed -n 's/^Ciphersuites = //p' "$conf")
    [ "$mask" = "$MASK" ] && aesni=off || aesni=on
    echo "server pid $pid: AES-NI $aesni (OPENSSL_ia32cap=${mask:-unset}), TLS 1.3 suites: ${suites:-OpenSSL's default}"
    ;;
*)
    echo "usage: $0 suite TLS_AES_128_GCM_SHA256|TLS_AES_256_GCM_SHA384|any | aesni on|off | state" >&2
    exit 2
    ;;
esac
