#!/usr/bin/env bash
# Every tracked C++ and CUDA source follows the root .clang-format (clang-format
# --dry-run -Werror): the format test (meson test format) and a pre-commit check.
# Exit 77 (meson's skip) without clang-format or outside a git checkout.
#   scripts/check_format.sh          # report
#   scripts/check_format.sh --fix    # reformat the files that differ
set -uo pipefail
cd "$(dirname "$0")/.."
command -v clang-format > /dev/null || { echo "check_format.sh: no clang-format; skipped"; exit 77; }
files=$(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' 2> /dev/null) || { echo "check_format.sh: not a git checkout; skipped"; exit 77; }
bad=()
for f in $files; do
  clang-format --dry-run -Werror "$f" > /dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ] && [ "${1:-}" = --fix ]; then
  clang-format -i "${bad[@]}"
  echo "reformatted: ${bad[*]}"
  exit 0
fi
if [ ${#bad[@]} -gt 0 ]; then
  echo "not formatted as .clang-format says (scripts/check_format.sh --fix): ${bad[*]}"
  exit 1
fi
echo "$(echo "$files" | wc -l) files follow .clang-format ($(clang-format --version | head -1))"
