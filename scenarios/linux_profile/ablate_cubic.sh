#!/usr/bin/env bash
# Which of the differences between Linux's CUBIC and RFC 9438 moves the model's goodput on
# geo.toml: each ablation puts one RFC rule back into `cubic_variant = "linux"` and reruns the
# simulator beside the same Linux runs.
#   scenarios/linux_profile/ablate_cubic.sh LINUX_DIR OUT [CASE] [ABLATIONS...]
# LINUX_DIR: a run.sh output holding the emulator runs (emu-*) to pair with; CASE: the case
# directory to rerun (default cubic-per0.01); ABLATIONS (default: srtt alpha1 noreset
# rounddelta) are the names in cubic_ablation.patch. The patch is applied to a throw-away git
# worktree of HEAD; nothing in this checkout changes. Prints compare.py's table per ablation
# (before = the model as committed, after = the ablation).
set -euo pipefail
cd "$(dirname "$0")/../.."
here=scenarios/linux_profile
linux=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
case_dir=${3:-cubic-per0.01}
shift $(( $# < 3 ? $# : 3 ))
ablations=("${@:-}")
[ -n "${ablations[0]}" ] || ablations=(srtt alpha1 noreset rounddelta)
cc=${case_dir%%-per*}
per=${case_dir#*-per}

build() { # $1: worktree, $2: patch or "", $3: binary to write
    git worktree add -q --detach "$1" HEAD
    if [ -n "$2" ]; then git -C "$1" apply "$PWD/$2"; fi
    (cd "$1" && CARGO_TARGET_DIR="$PWD/../target-ablate" cargo build --release -q -p satpep)
    cp "$1/../target-ablate/release/satpep" "$3"
    git worktree remove --force "$1"
}
build "$out/wt" "" "$out/satpep-head"
build "$out/wt" "$here/cubic_ablation.patch" "$out/satpep-ablate"

run() { # $1: name, $2: binary, $3: SATPEP_ABL
    local d="$out/$1"
    mkdir -p "$d/$case_dir"
    cp -r "$linux/$case_dir"/emu-* "$d/$case_dir/"
    local n
    n=$(find "$d/$case_dir" -maxdepth 1 -name 'emu-*' -type d | wc -l)
    SATPEP_ABL="$3" SATPEP_BIN="$2" SIM_RUNS="$n" CASES="$cc:$per" MAX_LOAD=100 \
        "$here/run.sh" "$n" "$d" >"$d.log" 2>&1
}
run head "$out/satpep-head" ""
for a in "${ablations[@]}"; do
    run "abl-$a" "$out/satpep-ablate" "$a"
    echo "## SATPEP_ABL=$a"
    python3 "$here/compare.py" "$linux" "$out/head" "$out/abl-$a" | grep -E "^\| (cc|---|$cc \| )"
done
