#!/usr/bin/env bash
# Installs the system packages cachefs needs on Debian (idempotent; quick when present).
# Needs root (or sudo): FUSE tools and headers, xattr tools, SQLite headers for GRDB,
# and the tools the tests and benchmark drive the mount with (util-linux and mount: unshare,
# setpriv, flock and bind mounts for the tests of users who are not root; procps: pgrep).
set -euo pipefail

packages=(fuse3 libfuse3-dev pkg-config attr libsqlite3-dev fio inotify-tools util-linux bsdutils mount procps systemd coreutils python3 rsync tar diffutils git)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}"
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! command -v swift >/dev/null; then
    for candidate in /opt/swift/usr/bin /usr/share/swift/usr/bin; do
        [ -x "$candidate/swift" ] && export PATH="$candidate:$PATH"
    done
fi
command -v swift >/dev/null || { echo "swift (6.0 or later) is not on PATH" >&2; exit 1; }
[ -e /dev/fuse ] || { echo "/dev/fuse is missing: this machine cannot mount FUSE filesystems" >&2; exit 1; }
