#!/usr/bin/env bash
# HAProxy, for the load-balancer test of the gateway's shipped config
# (deploy/haproxy/haproxy.cfg, tested by internal/gateway/lbtest): Debian's
# haproxy package. Idempotent: skips the install when haproxy is on PATH.
set -euo pipefail
if command -v haproxy >/dev/null; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "70-haproxy: haproxy is missing; install it (as root: apt-get install haproxy, or your system's haproxy 2.4 or later) and run this again" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends haproxy
