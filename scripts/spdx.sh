#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Check that every source file of the tree carries its SPDX licence line in
# its first two lines (the second when the first is a #! line). Source here
# means code, build and packaging files; docs, data and fuzz corpora are not.
# The test suite runs it with the format check (scripts/test.sh format).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.lua' '*.sh' '*.py' '*.mjs' \
  '*.cmake' '*.in' 'CMakeLists.txt' '*/CMakeLists.txt' '.ci/run' 'debian/rules')
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  head -n 2 "$f" | grep -q 'SPDX-License-Identifier: ' || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  printf 'no SPDX-License-Identifier line: %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "==> spdx: ${#files[@]} files carry a licence line"
