#!/usr/bin/env bash
# Fetch consecutive released versions of popular packages from the registries, for the
# context-recall benchmark (`cargo bench -p parley-code --bench recall -- DIR`):
# DIR/<package>/old and DIR/<package>/new, unpacked sources nobody here wrote.
set -euo pipefail
DIR=${1:-/tmp/parley-recall}
mkdir -p "$DIR"
cd "$DIR"
PIP=${PIP:-pip}

crate() { # name old new
  for v in "$2" "$3"; do
    side=$([ "$v" = "$2" ] && echo old || echo new)
    mkdir -p "$1/$side"
    curl -sfL "https://static.crates.io/crates/$1/$1-$v.crate" | tar -xz -C "$1/$side" --strip-components=1
  done
}
pypi() { # name old new
  for v in "$2" "$3"; do
    side=$([ "$v" = "$2" ] && echo old || echo new)
    mkdir -p "$1/$side" "$1/dl-$side"
    "$PIP" download -q --no-deps --no-binary :all: "$1==$v" -d "$1/dl-$side" >/dev/null
    tar -xzf "$1"/dl-"$side"/*.tar.gz -C "$1/$side" --strip-components=1
    rm -rf "$1/dl-$side"
  done
}
npmpkg() { # name old new
  for v in "$2" "$3"; do
    side=$([ "$v" = "$2" ] && echo old || echo new)
    mkdir -p "$1/$side"
    tarball=$(cd "$1" && npm pack -s "$1@$v")
    tar -xzf "$1/$tarball" -C "$1/$side" --strip-components=1
    rm -f "$1/$tarball"
  done
}

[ -d serde_json/new ] || crate serde_json 1.0.132 1.0.133
[ -d anyhow/new ] || crate anyhow 1.0.92 1.0.93
[ -d requests/new ] || pypi requests 2.32.2 2.32.3
[ -d click/new ] || pypi click 8.1.7 8.1.8
[ -d flask/new ] || pypi flask 3.0.3 3.1.0
[ -d express/new ] || npmpkg express 4.21.1 4.21.2
[ -d axios/new ] || npmpkg axios 1.7.8 1.7.9
ls "$DIR"
