#!/usr/bin/env bash
# Formats te4j's C, C++ and CUDA sources with the project's style (.clang-format at the root;
# clang-format from Debian's package, scripts/ensure-deps.sh installs it).
#   scripts/format.sh          rewrites every tracked source in place
#   scripts/format.sh --check  changes nothing; lists each file the style would change and exits 1
#                              when there is one (scripts/test.sh runs it first)
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format=${CLANG_FORMAT:-clang-format}
if ! command -v "$clang_format" >/dev/null; then
  echo "format.sh: $clang_format not found: run scripts/ensure-deps.sh (Debian package clang-format)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.cu' '*.cuh')
if [ "${1:-}" = "--check" ]; then
  bad=0
  for f in "${files[@]}"; do
    if ! "$clang_format" --style=file "$f" | cmp -s - "$f"; then
      echo "not formatted: $f" >&2
      bad=1
    fi
  done
  if [ $bad -ne 0 ]; then
    echo "format.sh: run scripts/format.sh to apply .clang-format ($("$clang_format" --version))" >&2
  fi
  exit $bad
fi
"$clang_format" --style=file -i "${files[@]}"
