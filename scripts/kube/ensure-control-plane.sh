#!/usr/bin/env bash
# Makes a real Kubernetes control plane available for the kube test suite (test/kube/):
# kube-apiserver, kube-controller-manager and kube-scheduler v1.20.2, plus etcd.
#
#   bash scripts/kube/ensure-control-plane.sh        # prints the bin dir on stdout
#
# Binaries live in ${KUBE_BIN_DIR:-$HOME/.cache/agent-accounts/kube/v1.20.2} (outside the repo) and
# are accepted only when their SHA-256 equals scripts/kube/SHA256SUMS. In order:
#   1. reuse the bin dir when every sum matches;
#   2. else decompress prebuilt binaries of exactly this build from ${KUBE_PREBUILT_DIR:-shared/kube in the checkout's parent dir}
#      (kube-*.xz) when present, verifying the sums;
#   3. else build them from Debian bookworm's own source package `kubernetes`
#      (1.20.5+really1.20.2-1.1+deb12u1): `apt-get source` through a private apt configuration (the
#      system's /etc/apt is left untouched), Go from `golang-1.19-go`, GOPATH mode, the OpenAPI
#      definitions generated with the vendored openapi-gen, linked with the v1.20.2 version flags.
#      About 15 minutes on one core; the work tree is kept in ${KUBE_BUILD_DIR:-$HOME/.cache/agent-accounts/kube/build}.
#      Go embeds source paths in binaries, so the build runs at the GOPATH the recorded binaries were
#      built at (${KUBE_BUILD_GOPATH:-/tmp/k8s-scout/gopath}, a symlink into the work tree), without
#      -trimpath, with the link flags they were built with: only then can the sums match.
#      A fresh build whose sums differ from SHA256SUMS is refused (set KUBE_ACCEPT_BUILD=1 to keep it
#      anyway, e.g. after a toolchain update; then update SHA256SUMS on purpose). Checked 2026-11-26:
#      this build runs through and its kube-apiserver reports the same version (v1.20.2, commit
#      faecb19…, go1.19.8) at the same size as the recorded one, but its SHA-256 still differs, so a
#      machine without the prebuilt binaries needs KUBE_ACCEPT_BUILD=1 for now.
# etcd comes from Debian (`etcd-server`), installed with apt-get when `etcd` is missing.
# Exits non-zero, with the reason on stderr, when any of this is impossible.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SUMS="$REPO_ROOT/scripts/kube/SHA256SUMS"
BIN_DIR="${KUBE_BIN_DIR:-$HOME/.cache/agent-accounts/kube/v1.20.2}"
PREBUILT_DIR="${KUBE_PREBUILT_DIR:-$(dirname "$REPO_ROOT")/shared/kube}"
BUILD_DIR="${KUBE_BUILD_DIR:-$HOME/.cache/agent-accounts/kube/build}"
DEB_VERSION="1.20.5+really1.20.2-1.1+deb12u1"
GIT_VERSION="v1.20.2"
COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler)

say() { echo "ensure-control-plane: $*" >&2; }
die() { say "$*"; exit 1; }

if [ "$(id -u)" -ne 0 ]; then SUDO="sudo -n"; else SUDO=; fi

# Every component present in $1 with the sum SHA256SUMS records.
sums_ok() {
  local dir="$1"
  for c in "${COMPONENTS[@]}"; do [ -x "$dir/$c" ] || return 1; done
  (cd "$dir" && sha256sum --check --quiet --status "$SUMS") 2>/dev/null
}

apt_installed() { dpkg-query -W -f '${Status}' "$1" 2>/dev/null | grep -q '^install ok installed'; }

apt_updated=
apt_install() {
  command -v apt-get >/dev/null 2>&1 || die "cannot install $*: no apt-get on this machine"
  if [ -z "$apt_updated" ]; then
    $SUDO apt-get update -qq >/dev/null || die "apt-get update failed (cannot install $*)"
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null || die "apt-get install $* failed"
}

ensure_etcd() {
  if ! command -v etcd >/dev/null 2>&1; then
    say "etcd not found: installing Debian's etcd-server (apt-get)"
    apt_install etcd-server
    command -v etcd >/dev/null 2>&1 || die "etcd-server installed but no etcd on PATH"
  fi
}

from_prebuilt() {
  local dir="$1" tmp
  for c in "${COMPONENTS[@]}"; do [ -f "$dir/$c.xz" ] || return 1; done
  command -v xz >/dev/null 2>&1 || apt_install xz-utils
  mkdir -p "$BIN_DIR"
  tmp="$(mktemp -d "$BIN_DIR/.unpack.XXXXXX")"
  for c in "${COMPONENTS[@]}"; do
    xz -dc "$dir/$c.xz" >"$tmp/$c" || { rm -rf "$tmp"; die "cannot decompress $dir/$c.xz"; }
    chmod 0755 "$tmp/$c"
  done
  if ! sums_ok "$tmp"; then
    rm -rf "$tmp"
    die "the prebuilt binaries in $dir do not match scripts/kube/SHA256SUMS (refusing them)"
  fi
  for c in "${COMPONENTS[@]}"; do mv -f "$tmp/$c" "$BIN_DIR/$c"; done
  rm -rf "$tmp"
}

# Build from Debian's source package. Steps are idempotent: a rerun resumes from what is done.
build_from_source() {
  say "building kube-apiserver, kube-controller-manager, kube-scheduler $GIT_VERSION from Debian's source package (about 15 min); work tree: $BUILD_DIR"
  mkdir -p "$BUILD_DIR"
  # One build at a time in a work tree (two test runs may start together).
  exec 9>"$BUILD_DIR/.lock"
  if ! flock -n 9; then
    say "another build holds $BUILD_DIR: waiting for it"
    flock 9
  fi
  local apt="$BUILD_DIR/apt" src="$BUILD_DIR/src" gopath out="$BUILD_DIR/out"

  # 1. Toolchain: Debian's Go 1.19 (no module proxy is reachable; everything comes from vendor/).
  local go=/usr/lib/go-1.19/bin/go
  [ -x "$go" ] || { say "installing golang-1.19-go (apt-get)"; apt_install golang-1.19-go; }
  [ -x "$go" ] || die "golang-1.19-go installed but $go is missing"
  command -v dpkg-source >/dev/null 2>&1 || apt_install dpkg-dev

  # 2. Source: a private apt configuration that adds bookworm's deb-src lines.
  if [ ! -d "$src/kubernetes/vendor" ]; then
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/etc" "$src"
    cat >"$apt/etc/sources.list" <<'EOF'
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-updates main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main
EOF
    local aptopts=(-o "Dir::Etc::SourceList=$apt/etc/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o "Debug::NoLocking=1")
    say "fetching the source package kubernetes=$DEB_VERSION"
    apt-get "${aptopts[@]}" -qq update >/dev/null || die "apt-get update (private deb-src configuration) failed"
    (cd "$src" && apt-get "${aptopts[@]}" -qq source --download-only "kubernetes=$DEB_VERSION" >/dev/null) \
      || die "apt-get source kubernetes=$DEB_VERSION failed"
    rm -rf "$src/kubernetes"
    (cd "$src" && dpkg-source --no-check -x kubernetes_*.dsc kubernetes >/dev/null) || die "dpkg-source -x failed"
    [ -d "$src/kubernetes/vendor" ] || die "the source package has no vendor/ directory"
  fi

  # 3. GOPATH mode: module mode with -mod=vendor fails on this tree ("updates to go.mod needed").
  #    The GOPATH is the one SHA256SUMS's binaries were built at (Go records source paths).
  gopath="${KUBE_BUILD_GOPATH:-/tmp/k8s-scout/gopath}"
  mkdir -p "$gopath/src/k8s.io" "$out"
  ln -sfn "$src/kubernetes" "$gopath/src/k8s.io/kubernetes"
  export GOPATH="$gopath" GO111MODULE=off GOPROXY=off GOFLAGS= CGO_ENABLED=0 GOCACHE="$BUILD_DIR/gocache"
  local pkg="$gopath/src/k8s.io/kubernetes"
  cd "$pkg"

  # 4. The tarball lacks the generated OpenAPI definitions that kube-apiserver needs.
  local openapi="pkg/generated/openapi/zz_generated.openapi.go"
  if [ ! -s "$openapi" ]; then
    say "generating $openapi (openapi-gen)"
    nice -n 10 "$go" build -o "$out/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen \
      || die "building openapi-gen failed"
    # The packages that ask for OpenAPI definitions (+k8s:openapi-gen=), named as the upstream
    # Makefile names them: staging repositories by their vendor/ path, the rest under k8s.io/kubernetes.
    local inputs
    inputs="$(
      { grep --color=never -rl --include='*.go' '+k8s:openapi-gen=' pkg cmd plugin 2>/dev/null || true
        grep --color=never -rl --include='*.go' '+k8s:openapi-gen=' staging/src/k8s.io 2>/dev/null | sed 's,^staging/src/,vendor/,' || true
      } | xargs -n1 dirname | LC_ALL=C sort -u \
        | grep -v -e '^vendor/k8s.io/code-generator' -e '^vendor/k8s.io/sample-apiserver' -e '^pkg/generated/openapi$' \
        | sed 's,^,k8s.io/kubernetes/,' | paste -sd, -
    )"
    [ -n "$inputs" ] || die "found no package tagged +k8s:openapi-gen="
    say "openapi-gen over $(echo "$inputs" | tr ',' '\n' | wc -l) packages"
    nice -n 10 "$out/openapi-gen" --logtostderr -i "$inputs" -p k8s.io/kubernetes/pkg/generated/openapi \
      -O zz_generated.openapi -o "$gopath/src" -h hack/boilerplate/boilerplate.generatego.txt \
      -r "$out/openapi-violations.list" >"$out/openapi-gen.log" 2>&1 \
      || { tail -20 "$out/openapi-gen.log" >&2; die "openapi-gen failed"; }
    [ -s "$openapi" ] || die "openapi-gen wrote no $openapi"
    if ! diff -q "$out/openapi-violations.list" api/api-rules/violation_exceptions.list >/dev/null 2>&1; then
      say "warning: the OpenAPI rule violations differ from api/api-rules/violation_exceptions.list ($out/openapi-violations.list)"
    fi
  fi

  # 5. The three binaries, reporting version v1.20.2 (the source's other version fields, commit
  #    faecb19… and build date 1970-01-01, are already right).
  local v=k8s.io/kubernetes/vendor/k8s.io/component-base/version
  local ldflags="-s -w -X $v.gitVersion=$GIT_VERSION -X $v.gitMajor=1 -X $v.gitMinor=20"
  for c in "${COMPONENTS[@]}"; do
    if [ ! -x "$out/$c" ]; then
      say "go build $c"
      nice -n 10 "$go" build -ldflags "$ldflags" -o "$out/$c.tmp" "./cmd/$c" || die "go build ./cmd/$c failed"
      mv -f "$out/$c.tmp" "$out/$c"
    fi
  done

  mkdir -p "$BIN_DIR"
  # A copy renamed into place: a control plane running from the old files keeps running.
  for c in "${COMPONENTS[@]}"; do install -m 0755 "$out/$c" "$BIN_DIR/.$c.new" && mv -f "$BIN_DIR/.$c.new" "$BIN_DIR/$c"; done
  if ! sums_ok "$BIN_DIR"; then
    if [ "${KUBE_ACCEPT_BUILD:-}" = 1 ]; then
      say "warning: the fresh build differs from scripts/kube/SHA256SUMS; kept because KUBE_ACCEPT_BUILD=1:"
      (cd "$BIN_DIR" && sha256sum "${COMPONENTS[@]}") >&2
    else
      (cd "$BIN_DIR" && sha256sum "${COMPONENTS[@]}") >&2
      for c in "${COMPONENTS[@]}"; do rm -f "$BIN_DIR/$c"; done
      die "the fresh build's SHA-256 differs from scripts/kube/SHA256SUMS (kept in $out; KUBE_ACCEPT_BUILD=1 accepts it)"
    fi
  fi
}

[ -f "$SUMS" ] || die "missing $SUMS"
ensure_etcd
if ! sums_ok "$BIN_DIR" || [ "${KUBE_FORCE_BUILD:-}" = 1 ]; then
  if [ "${KUBE_FORCE_BUILD:-}" != 1 ] && from_prebuilt "$PREBUILT_DIR"; then
    :
  else
    build_from_source
  fi
  sums_ok "$BIN_DIR" || [ "${KUBE_ACCEPT_BUILD:-}" = 1 ] || die "no verified control-plane binaries in $BIN_DIR"
fi
echo "$BIN_DIR"
