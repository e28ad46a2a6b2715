#!/bin/sh
# Regenerates the asn1c codecs in this directory from ../asn1/DIS.asn.
# Needs Debian's asn1c 0.9.28 (apt-get install asn1c). The generated C is
# committed so that building needs only gcc; gen_test.go fails when this
# script's output differs from the committed copy.
#   usage: ./gen.sh [OUTDIR]   (default: this directory)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
want="ASN.1 Compiler, v0.9.28"
got=$(asn1c -v 2>&1 | head -1)
[ "$got" = "$want" ] || { echo "gen.sh: need $want, have: $got" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# from a copy in the temporary directory: the generated files name their source ("found in"), which must
# not be this checkout's absolute path
cp "$here/../asn1/DIS.asn" "$tmp/"
(cd "$tmp" && asn1c -fcompound-names -gen-PER DIS.asn >/dev/null 2>&1)
rm -f "$tmp/converter-sample.c" "$tmp/Makefile.am.sample" "$tmp/DIS.asn"
find "$out" -maxdepth 1 \( -name '*.c' -o -name '*.h' \) ! -name 'bridge.*' -delete
cp "$tmp"/*.c "$tmp"/*.h "$out"/
