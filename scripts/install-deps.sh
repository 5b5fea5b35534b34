#!/usr/bin/env bash
# Installs what trainsched builds and tests with. Idempotent: what is already there is skipped,
# so a warm machine pays only a dpkg query and a `go version`.
#   - Debian packages: the C toolchain and libraries, Check, clang, python3 (test tooling), and
#     Slurm 22.05 with munge, slurmrestd and its JWT plugin (tests/tools/slurm/slurm-up.sh starts
#     a throwaway cluster from them for the Slurm backend's tests);
#   - Go >= 1.26 for the test bed (demo and end-to-end tests build Kubernetes from Go modules).
#     Debian 12's golang-go is 1.19, too old. When no Go >= 1.26 is on PATH: take a Go >= 1.21
#     (Debian's newest golang-1.2x, from bookworm-backports when the main suite has none), and
#     let it fetch Go's own toolchain module (golang.org/toolchain, through the Go module proxy)
#     with GOTOOLCHAIN; the toolchain is copied to $TRAINSCHED_GO_ROOT and linked as `go` and
#     `gofmt` into $TRAINSCHED_GO_BIN_DIR.
# Settings (environment): TRAINSCHED_GO_VERSION (default go1.26.8), TRAINSCHED_GO_ROOT (default
# /usr/local/lib/trainsched-go), TRAINSCHED_GO_BIN_DIR (default /usr/local/bin),
# INSTALL_GO=0 to skip Go.
set -euo pipefail

GO_WANT="${TRAINSCHED_GO_VERSION:-go1.26.8}"
GO_ROOT="${TRAINSCHED_GO_ROOT:-/usr/local/lib/trainsched-go}"
GO_BIN_DIR="${TRAINSCHED_GO_BIN_DIR:-/usr/local/bin}"

pkgs=(
  build-essential cmake pkg-config git ca-certificates
  libjansson-dev libyaml-dev libssl-dev libcurl4-openssl-dev libmicrohttpd-dev
  libprotobuf-c-dev protobuf-c-compiler check
  clang libclang-rt-14-dev clang-format
  python3 python3-yaml
  munge slurmctld slurmd slurmrestd slurm-client slurm-wlm-jwt-plugin
)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
updated=0
apt_update() {
  [ $updated -eq 1 ] || { $SUDO apt-get update -qq; updated=1; }
}

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  apt_update
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[ "${INSTALL_GO:-1}" = 0 ] && exit 0

# "go1.26.8" -> 1026008, for comparisons; 0 when not a Go version
go_num() {
  local v="${1#go}" a b c
  IFS=. read -r a b c <<<"$v"
  [[ "$a" =~ ^[0-9]+$ && "${b:-0}" =~ ^[0-9]+$ ]] || { echo 0; return; }
  c="${c%%[!0-9]*}"
  echo $((a * 1000000 + ${b:-0} * 1000 + ${c:-0}))
}
go_version_of() { "$1" env GOVERSION 2>/dev/null || echo none; }

if command -v go >/dev/null && [ "$(go_num "$(go_version_of go)")" -ge "$(go_num go1.26)" ]; then
  echo "install-deps: $(go_version_of go) present"
  exit 0
fi

# A Go that can fetch toolchains (>= 1.21): on PATH, or one of Debian's golang-1.2x.
boot=""
for g in "$(command -v go || true)" /usr/lib/go-1.2[1-9]/bin/go; do
  [ -x "$g" ] && [ "$(go_num "$(go_version_of "$g")")" -ge "$(go_num go1.21)" ] && boot="$g"
done
if [ -z "$boot" ]; then
  apt_update
  pkg=$(apt-cache pkgnames golang-1.2 | grep -E '^golang-1\.2[1-9]-go$' | sort -V | tail -1 || true)
  if [ -z "$pkg" ] && grep -qs 'bookworm' /etc/os-release; then
    # bookworm-backports from the same mirror as the main suite (no host named here)
    uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
    [ -n "$uri" ] || uri=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' \
      /etc/apt/sources.list 2>/dev/null)
    [ -n "$uri" ] || { echo "install-deps: no Debian mirror found for bookworm-backports" >&2; exit 1; }
    echo "install-deps: enabling bookworm-backports ($uri) for a newer golang"
    echo "deb $uri bookworm-backports main" | $SUDO tee /etc/apt/sources.list.d/trainsched-backports.list >/dev/null
    updated=0
    apt_update
    pkg=$(apt-cache pkgnames golang-1.2 | grep -E '^golang-1\.2[1-9]-go$' | sort -V | tail -1 || true)
  fi
  [ -n "$pkg" ] || { echo "install-deps: no golang-1.21 or newer in Debian's packages" >&2; exit 1; }
  echo "install-deps: installing $pkg (to fetch Go's own $GO_WANT toolchain)"
  $SUDO apt-get install -y -qq --no-install-recommends "$pkg"
  boot=$(ls -d /usr/lib/go-1.2[1-9]/bin/go | sort -V | tail -1)
fi

echo "install-deps: fetching the $GO_WANT toolchain through the Go module proxy (with $(go_version_of "$boot"))"
# GOTOOLCHAIN in the environment wins over Debian's go.env (GOTOOLCHAIN=local)
root=$(cd / && GOTOOLCHAIN="$GO_WANT" GOFLAGS= "$boot" env GOROOT)
[ -x "$root/bin/go" ] || { echo "install-deps: $GO_WANT did not install ($root)" >&2; exit 1; }
$SUDO rm -rf "$GO_ROOT.tmp"
$SUDO mkdir -p "$(dirname "$GO_ROOT")" "$GO_BIN_DIR"
$SUDO cp -a "$root" "$GO_ROOT.tmp"
$SUDO chmod -R u+w "$GO_ROOT.tmp"
$SUDO rm -rf "$GO_ROOT"
$SUDO mv "$GO_ROOT.tmp" "$GO_ROOT"
$SUDO ln -sf "$GO_ROOT/bin/go" "$GO_BIN_DIR/go"
$SUDO ln -sf "$GO_ROOT/bin/gofmt" "$GO_BIN_DIR/gofmt"
echo "install-deps: $("$GO_BIN_DIR/go" env GOVERSION) at $GO_BIN_DIR/go"
case ":$PATH:" in
*":$GO_BIN_DIR:"*) ;;
*) echo "install-deps: add $GO_BIN_DIR to PATH" ;;
esac
