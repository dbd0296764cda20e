#!/usr/bin/env bash
# Checks the documentation (README.md, ARCHITECTURE.md, docs/**/*.md):
#   - README.md is at most 300 lines (it is the front door; the rest lives in docs/);
#   - every relative markdown link points at a file or folder that exists;
#   - every anchor (#section), in the same file or in another markdown file,
#     names a heading that exists there (GitHub's rule: lowercase, spaces to
#     '-', punctuation dropped but '-' and '_'; a repeated heading gets -1, -2).
# Links inside fenced code blocks and inline code are not links. Prints
# file:line: what for each problem and exits 1 when there is any.
# Needs bash, coreutils, grep and sed only.
#
# Usage: scripts/check_docs.sh [repository root, default: this script's parent]
set -euo pipefail

root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
cd "$root"
# Unicode-aware [:alnum:] for headings with accented letters; C.UTF-8 is in every Debian.
export LC_ALL=C.UTF-8

max_readme_lines=300


problems=0
report() {
  echo "$1" >&2
  problems=$((problems + 1))
}

# Normalises a path: resolves '.' and '..' segments without touching the disk.
normalize() {
  local IFS=/ part out=()
  read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    case "$part" in
      '' | .) ;;
      ..) if ((${#out[@]})); then unset 'out[-1]'; else out+=(..); fi ;;
      *) out+=("$part") ;;
    esac
  done
  local joined
  joined="$(printf '%s/' "${out[@]}")"
  echo "${joined%/}"
}

# The GitHub anchor of a heading's text.
anchor_of() {
  printf '%s' "$1" | sed -e 's/[[:space:]]*#*[[:space:]]*$//' -e 's/.*/\L&/' -e 's/[^[:alnum:] _-]//g' -e 's/ /-/g'
}

# Prints the anchors of a markdown file's headings, one a line (code blocks skipped).
declare -A anchors_cache=()
anchors_of_file() {
  local file="$1"
  if [[ -z "${anchors_cache[$file]+set}" ]]; then
    local line in_fence=0 text a list=''
    declare -A seen=()
    while IFS= read -r line || [[ -n "$line" ]]; do
      if [[ "$line" =~ ^[[:space:]]*\`\`\` ]]; then
        in_fence=$((1 - in_fence))
        continue
      fi
      ((in_fence)) && continue
      if [[ "$line" =~ ^#{1,6}[[:space:]]+(.*)$ ]]; then
        text="${BASH_REMATCH[1]}"
        a="$(anchor_of "$text")"
        if [[ -n "${seen[$a]+set}" ]]; then
          seen[$a]=$((seen[$a] + 1))
          a="$a-${seen[$a]}"
        else
          seen[$a]=0
        fi
        list+="$a"$'\n'
      fi
    done <"$file"
    anchors_cache[$file]="$list"
  fi
  printf '%s' "${anchors_cache[$file]}"
}

has_anchor() {
  # Not grep -q: it would stop reading early, and pipefail would count the writer's SIGPIPE as a miss.
  anchors_of_file "$1" | grep -xF -- "$2" >/dev/null
}

# 1. README's length.
readme_lines=$(wc -l <README.md)
if ((readme_lines > max_readme_lines)); then
  report "README.md:$readme_lines: README.md has $readme_lines lines, more than $max_readme_lines (move detail to docs/)"
fi

# 2. Links.
files=(README.md ARCHITECTURE.md)
while IFS= read -r f; do files+=("$f"); done < <(find docs -name '*.md' -type f | sort)

for file in "${files[@]}"; do
  dir="$(dirname "$file")"
  lineno=0
  in_fence=0
  while IFS= read -r line || [[ -n "$line" ]]; do
    lineno=$((lineno + 1))
    if [[ "$line" =~ ^[[:space:]]*\`\`\` ]]; then
      in_fence=$((1 - in_fence))
      continue
    fi
    ((in_fence)) && continue
    [[ "$line" == *']('* ]] || continue
    # Drop inline code, then take each ](target).
    stripped="$(printf '%s' "$line" | sed -e 's/`[^`]*`//g')"
    while IFS= read -r target; do
      [[ -z "$target" ]] && continue
      target="${target#](}"
      target="${target%)}"
      target="${target%% *}" # a link title after the target
      case "$target" in
        http://* | https://* | mailto:* | ftp://*) continue ;;
      esac
      path="${target%%#*}"
      frag=''
      [[ "$target" == *'#'* ]] && frag="${target#*#}"
      if [[ -z "$path" ]]; then
        dest="$file"
      else
        dest="$(normalize "$dir/$path")"
        if [[ ! -e "$dest" ]]; then
          report "$file:$lineno: broken link: $target ($dest does not exist)"
          continue
        fi
      fi
      [[ -z "$frag" ]] && continue
      [[ -d "$dest" ]] && continue
      [[ "$dest" == *.md ]] || continue
      if ! has_anchor "$dest" "$frag"; then
        report "$file:$lineno: broken anchor: $target (no heading '#$frag' in $dest)"
      fi
    done < <(printf '%s\n' "$stripped" | grep -o '\]([^)]*)' || true)
  done <"$file"
done

if ((problems)); then
  echo "check_docs: $problems problem(s)" >&2
  exit 1
fi
echo "check_docs: README.md $readme_lines lines (at most $max_readme_lines); links and anchors in ${#files[@]} files resolve"
