#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Format every C and C++ file of the tree with clang-format and .clang-format.
#
#   scripts/format.sh           rewrite the files in place
#   scripts/format.sh --check   list the files that differ; exit 1 if any
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || scripts/deps.sh
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp')
if [ "${1:-}" = --check ]; then
  bad=()
  for f in "${files[@]}"; do
    clang-format --style=file "$f" | cmp -s - "$f" || bad+=("$f")
  done
  if [ ${#bad[@]} -gt 0 ]; then
    printf 'not formatted (run scripts/format.sh): %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "==> format: ${#files[@]} files follow .clang-format"
else
  clang-format --style=file -i "${files[@]}"
fi
