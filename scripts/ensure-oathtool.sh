#!/usr/bin/env bash
# The second-factor tests compute their codes with Debian's oathtool (OATH Toolkit): an
# authenticator nobody here wrote (test/support/authenticator.ts). Installs it when missing.
set -euo pipefail
if command -v oathtool >/dev/null 2>&1; then exit 0; fi
echo "oathtool not found: installing Debian's oathtool (apt-get)..." >&2
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq oathtool >/dev/null
command -v oathtool >/dev/null 2>&1 || { echo "oathtool install failed" >&2; exit 1; }
