#!/usr/bin/env bash
# Installs the Debian packages trainsched builds and tests with. Idempotent: packages already
# installed are skipped, so a warm machine pays only a dpkg query.
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config git
  libjansson-dev libyaml-dev libssl-dev libcurl4-openssl-dev libmicrohttpd-dev
  libprotobuf-c-dev protobuf-c-compiler check
  clang libclang-rt-14-dev clang-format
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
