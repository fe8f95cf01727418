#!/usr/bin/env bash
# Local agents run inside bubblewrap (server/account/agents/provisioners/local/sandbox.ts). Installs Debian's
# bubblewrap when it is missing. Never fatal: without it the account service still starts and
# runs agents without the exec tool (fail closed), and says so in its log.
set -uo pipefail
BWRAP="${AGENT_SANDBOX_BWRAP:-bwrap}"
if command -v "$BWRAP" >/dev/null 2>&1; then exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "bubblewrap ($BWRAP) not found and no apt-get: install bubblewrap to sandbox agents (they run without exec until then)" >&2
  exit 0
fi
echo "bubblewrap not found: installing Debian's bubblewrap (apt-get)..." >&2
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo -n"; else SUDO=; fi
{ $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq bubblewrap; } >/dev/null 2>&1 \
  || echo "bubblewrap install failed: agents will run without exec until it is installed" >&2
exit 0
