#!/bin/sh
# Installs the tlsproof command line `cli` for this machine.
#
#   curl -fsSL https://github.com/tlsproof/tlsproof/releases/latest/download/install.sh | sh
#   curl -fsSL .../install.sh | sh -s -- -q
#
# It picks the release binary for this OS and CPU, downloads it with SHA256SUMS, checks the
# checksum, and moves it into place in one step. Run with --help for the settings.
set -eu

usage() {
  cat <<'EOF'
Usage: install.sh [-q] [-h]

Installs the tlsproof command line as `cli`.

Options:
  -q, --quiet   print nothing unless something goes wrong
  -h, --help    show this help

Environment:
  CLI_VERSION       release to install, e.g. 0.1.0 or v0.1.0 (default: the latest)
  CLI_INSTALL_DIR   where to put `cli` (default: ~/.local/bin)
  CLI_DOWNLOAD_URL  releases base URL; files are fetched from <base>/latest/download/
                    or <base>/download/v<version>/
                    (default: https://github.com/tlsproof/tlsproof/releases)
  CLI_CPUINFO       file read for CPU flags on Linux x64 (default: /proc/cpuinfo)

Supported: Linux x64 (baseline build on CPUs without AVX2), Linux arm64,
macOS x64, macOS arm64 (also when the shell runs under Rosetta).
The binary is checked against SHA256SUMS (sha256sum or shasum) before it is installed.
EOF
}

# Colours only on a terminal: bold for stdout, red for stderr.
bold='' unbold='' red='' unred=''
if [ -t 1 ]; then bold=$(printf '\033[1m') unbold=$(printf '\033[0m'); fi
if [ -t 2 ]; then red=$(printf '\033[31m') unred=$(printf '\033[0m'); fi

say() { if [ "$quiet" = 0 ]; then printf '%s\n' "$*"; fi; }
die() { printf '%serror:%s %s\n' "$red" "$unred" "$*" >&2; exit 1; }

quiet=0
for arg in "$@"; do
  case $arg in
    -q | --quiet) quiet=1 ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown option: $arg (see --help)" ;;
  esac
done

# --- platform -------------------------------------------------------------------------------
os=$(uname -s)
arch=$(uname -m)
case $os in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) die "unsupported operating system: $os (supported: Linux and macOS, on x64 or arm64)" ;;
esac
case $arch in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "unsupported CPU architecture: $arch (supported: x64 and arm64)" ;;
esac
# A shell under Rosetta reports x86_64 on an arm64 Mac; the native build is the right one there.
if [ "$os" = darwin ] && [ "$arch" = x64 ] && [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || true)" = 1 ]; then
  arch=arm64
fi
asset="cli-$os-$arch"
# The default x64 Linux build needs AVX2; without it (or without readable flags) take the baseline build.
if [ "$os" = linux ] && [ "$arch" = x64 ]; then
  if ! grep -Eq '^flags[[:space:]]*:.*[[:space:]]avx2([[:space:]]|$)' "${CLI_CPUINFO:-/proc/cpuinfo}" 2>/dev/null; then
    asset="$asset-baseline"
  fi
fi

# --- where from, where to -------------------------------------------------------------------
base=${CLI_DOWNLOAD_URL:-https://github.com/tlsproof/tlsproof/releases}
base=${base%/}
case ${CLI_VERSION:-latest} in
  latest) url="$base/latest/download" ;;
  v*) url="$base/download/$CLI_VERSION" ;;
  *) url="$base/download/v$CLI_VERSION" ;;
esac
if [ -n "${CLI_INSTALL_DIR:-}" ]; then
  dir=$CLI_INSTALL_DIR
elif [ -n "${HOME:-}" ]; then
  dir=$HOME/.local/bin
else
  die "HOME is not set; set CLI_INSTALL_DIR to choose where to install"
fi
dir=${dir%/}

if command -v curl >/dev/null 2>&1; then
  download() { curl -fsL --retry 2 -o "$2" "$1"; }
elif command -v wget >/dev/null 2>&1; then
  download() { wget -q -O "$2" "$1"; }
else
  die "neither curl nor wget is installed; install one of them and try again"
fi
if command -v sha256sum >/dev/null 2>&1; then
  sha256() { sha256sum <"$1" | cut -d ' ' -f 1; }
elif command -v shasum >/dev/null 2>&1; then
  sha256() { shasum -a 256 <"$1" | cut -d ' ' -f 1; }
else
  die "neither sha256sum nor shasum is installed; cannot check the download"
fi

mkdir -p "$dir" 2>/dev/null || die "cannot create $dir"
# Temporary files live next to the target so that the final mv is one atomic rename.
tmp_bin='' tmp_sums=''
cleanup() { rm -f "$tmp_bin" "$tmp_sums"; }
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
tmp_sums=$(mktemp "$dir/.cli-sums.XXXXXX" 2>/dev/null) || die "cannot write to $dir"
tmp_bin=$(mktemp "$dir/.cli.XXXXXX" 2>/dev/null) || die "cannot write to $dir"

# --- download and check ---------------------------------------------------------------------
say "Downloading $asset from $url"
download "$url/SHA256SUMS" "$tmp_sums" || die "could not download $url/SHA256SUMS"
# sha256sum format: "<hex>  <name>", or "<hex> *<name>" in binary mode.
expected=$(awk -v f="$asset" '$2 == f || $2 == "*" f { print $1; exit }' "$tmp_sums")
case $expected in
  '') die "SHA256SUMS has no entry for $asset; refusing to install" ;;
  *[!0-9a-fA-F]*) die "SHA256SUMS entry for $asset is malformed; refusing to install" ;;
esac
[ ${#expected} -eq 64 ] || die "SHA256SUMS entry for $asset is malformed; refusing to install"
download "$url/$asset" "$tmp_bin" || die "could not download $url/$asset"
actual=$(sha256 "$tmp_bin")
expected=$(printf '%s' "$expected" | tr 'A-F' 'a-f')
[ "$actual" = "$expected" ] || die "checksum mismatch for $asset (expected $expected, got $actual); refusing to install"

# --- install --------------------------------------------------------------------------------
chmod 755 "$tmp_bin"
mv -f "$tmp_bin" "$dir/cli" || die "cannot move the binary to $dir/cli"
tmp_bin=''
version=$("$dir/cli" --version 2>/dev/null) || die "installed $dir/cli, but \`cli --version\` failed: it may not run on this machine"
say "Installed ${bold}cli $version${unbold} to $dir/cli"
case ":${PATH:-}:" in
  *":$dir:"*) ;;
  *) say "$dir is not on your PATH. Add it, e.g. in ~/.profile:"
     say "  export PATH=\"$dir:\$PATH\"" ;;
esac
