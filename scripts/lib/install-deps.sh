#!/usr/bin/env bash
# Installs the system packages cachefs needs on Debian (idempotent; quick when present).
# Needs root (or sudo): FUSE tools and headers, xattr tools, SQLite headers for GRDB,
# and the tools the tests and benchmark drive the mount with (util-linux and mount: unshare,
# setpriv, flock and bind mounts for the tests of users who are not root; procps: pgrep),
# and moto, the S3 server the S3 origin tests run, from PyPI into its own venv, nginx and
# redis-server with redis-tools (all skipped when CACHEFS_DEPS=run: the demo and the
# installer need no test tools).
set -euo pipefail

packages=(fuse3 libfuse3-dev pkg-config attr libsqlite3-dev fio inotify-tools strace util-linux bsdutils mount procps systemd coreutils python3 python3-venv rsync tar diffutils git)
# nginx: the HTTP origin of the freshness tests (conditional requests as users' servers answer
# them); the tests start their own on loopback, never the system's service.
[ "${CACHEFS_DEPS:-test}" = run ] || packages+=(nginx)
# redis-server and redis-tools (redis-cli): the RedisClient tests and the shared tier's
# (SharedTierTests) start their own servers and a three-node cluster on loopback
# (redis-cli --cluster create), never the system's service;
# they fail, not skip, without them. openssl: their TLS tests make a throwaway CA with it.
[ "${CACHEFS_DEPS:-test}" = run ] || packages+=(redis-server redis-tools openssl)
missing=()
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}"
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# Debian's own python3 makes the venv: pip may not install beside it (PEP 668).
export CACHEFS_TEST_VENV=/opt/cachefs-test-venv
if [ "${CACHEFS_DEPS:-test}" != run ] && ! "$CACHEFS_TEST_VENV/bin/python" -c "import moto.server, boto3, flask_cors" 2>/dev/null; then
    echo "installing moto[server] into $CACHEFS_TEST_VENV"
    "${sudo_cmd[@]}" /usr/bin/python3 -m venv "$CACHEFS_TEST_VENV"
    "${sudo_cmd[@]}" "$CACHEFS_TEST_VENV/bin/pip" install -q --disable-pip-version-check 'moto[server]>=5,<6'
fi
if ! command -v swift >/dev/null; then
    for candidate in /opt/swift/usr/bin /usr/share/swift/usr/bin; do
        [ -x "$candidate/swift" ] && export PATH="$candidate:$PATH"
    done
fi
command -v swift >/dev/null || { echo "swift (6.0 or later) is not on PATH" >&2; exit 1; }
[ -e /dev/fuse ] || { echo "/dev/fuse is missing: this machine cannot mount FUSE filesystems" >&2; exit 1; }
