#!/usr/bin/env bash
# Formats the C and C++ sources of mq with clang-format and the repository's .clang-format.
#
#   scripts/format.sh           formats every file in place
#   scripts/format.sh --check   changes nothing; fails (and names the files) if any file is not
#                               formatted (clang-format --dry-run -Werror)
#
# The files: every *.c, *.h, *.cpp and *.hpp that git tracks or would track (new files not yet
# added included; ignored ones such as build trees not), except generated ones (those whose first
# lines say "Code generated" or "DO NOT EDIT", such as the Go binding's copies of the core):
# their generator owns their layout. Installs clang-format with apt if it is missing. The style
# was measured with clang-format 14 (Debian 12); other versions may differ in details.
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")/.."
source scripts/lib/setup.sh

check=0
for arg in "$@"; do
    case $arg in
        --check) check=1 ;;
        -h | --help)
            sed -n '2,12p' "$0"
            exit 0
            ;;
        *)
            echo "unknown argument: $arg (try --help)" >&2
            exit 2
            ;;
    esac
done

ensure_tools clang-format
clang-format --version

files=()
while IFS= read -r -d '' f; do
    if head -n 5 "$f" | grep -qE 'Code generated|DO NOT EDIT'; then continue; fi
    files+=("$f")
done < <(git ls-files -z --cached --others --exclude-standard -- '*.c' '*.h' '*.cpp' '*.hpp')

if [ ${#files[@]} -eq 0 ]; then
    echo "format.sh: no C or C++ files found (not a git checkout?)" >&2
    exit 1
fi

if [ "$check" = 1 ]; then
    # One run over all files, so every unformatted one is reported, not only the first.
    if ! clang-format --dry-run -Werror "${files[@]}"; then
        echo "format.sh: the files above are not formatted; run scripts/format.sh" >&2
        exit 1
    fi
    echo "format.sh: ${#files[@]} files formatted as .clang-format says"
else
    clang-format -i "${files[@]}"
    echo "format.sh: formatted ${#files[@]} files"
fi
