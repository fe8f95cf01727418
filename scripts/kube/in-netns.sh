#!/usr/bin/env bash
# Runs a command in a new, private network namespace for the kube test suite:
#
#   bash scripts/kube/in-netns.sh <command…>       # exit code of the command passes through
#
# The namespace has only `lo`, brought up, with 10.244.0.1/24 on it and the whole 10.244.0.0/16
# routed as local, so the control plane listens on 10.244.0.1 (Endpoints refuse loopback addresses)
# and each pod the test kubelet starts binds its own 10.244.X.y (each test kubelet takes a /24 of
# its own, so test files running side by side never share a pod IP). It has no other interface:
# nothing sent to 10.244.0.0/16 (or anywhere) inside it can leave the namespace, and nothing on the
# host's network (PostgreSQL, Redis on 127.0.0.1) is reachable from inside: tests there use the
# embedded stores (test/support/postgres.ts finds no server and says so in its result).
# As root: `unshare --net`; otherwise `unshare --user --map-root-user --net` (user namespaces).
set -euo pipefail
KUBE_NETNS_CIDR=10.244.0.0/16
KUBE_NETNS_ADDR=10.244.0.1/24

if [ "${1:-}" = "--inside-netns" ]; then
  shift
  ip link set lo up
  ip addr add "$KUBE_NETNS_ADDR" dev lo
  ip route replace local "$KUBE_NETNS_CIDR" dev lo table local
  export KUBE_NETNS=1
  exec "$@"
fi

[ "$#" -gt 0 ] || { echo "usage: $0 <command…>" >&2; exit 2; }
command -v unshare >/dev/null 2>&1 || { echo "in-netns: unshare (util-linux) is missing" >&2; exit 1; }
command -v ip >/dev/null 2>&1 || { echo "in-netns: ip (iproute2) is missing" >&2; exit 1; }
if [ "$(id -u)" -eq 0 ]; then
  exec unshare --net -- bash "${BASH_SOURCE[0]}" --inside-netns "$@"
fi
exec unshare --user --map-root-user --net -- bash "${BASH_SOURCE[0]}" --inside-netns "$@"
