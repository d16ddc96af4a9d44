#!/usr/bin/env bash
# Builds the pinned toolchain (tools/pins.env, tools/go/*) from Go modules into a cache outside the work tree, one
# tool set at a time, so that each command builds only what it runs.
#
#   tools/build-toolchain.sh [SET...]   build the named sets that are not built yet (default: demo), print bin/
#   tools/build-toolchain.sh all        every set (make setup, make test)
#   tools/build-toolchain.sh --dir      print the bin directory of this pin set (builds nothing)
#   tools/build-toolchain.sh --sets     print each set and the binaries it installs
#   tools/build-toolchain.sh --go-test  run the Go tests of our own Go programs (make go-test)
#
# The sets:
#   demo        what the demo, and so every embedded cluster, runs: the Pulumi CLI and plugins, the cluster's
#               components, istioctl, pilot-discovery and our proxy simulator
#   istio-next  a second Istio minor (istioctl-<v>, pilot-discovery-<v>, its charts in share/charts-<v>), for the
#               version-jump and upgrade tests only
#   helm        the Helm CLI and Istio's base and istiod charts from the pinned Istio module (share/charts), for
#               the hand-over to Helm
#   s3          versitygw, an S3-compatible server (Apache-2.0) on a posix directory, for Pulumi state shared by a
#               team (devcluster.statestore starts it)
#
# The cache key is a hash of everything under tools/ that affects the binaries (pins.env, build-steps.sh, go/,
# patches/; not this driver, nor build-times.tsv), so an unchanged pin set rebuilds nothing and a changed one builds
# beside the old. All sets of one pin set install into the same bin/ and each marks itself built with
# .complete-<set>. A build holds a lock on its pin set, so two test workers that need the same set at once build it
# once. Each build records the wall and CPU seconds of every step in logs/times-<set>.tsv, and prints after each step
# how far along its set is and about how long is left (weighing each step by tools/build-times.tsv).
# KFISTIO_CACHE overrides the cache root.
set -euo pipefail

tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=pins.env
source "$tools/pins.env"

# shellcheck source=build-steps.sh
source "$tools/build-steps.sh"

# What decides the binaries (this driver does not): the pins, the build steps, the wrapper modules and the patches.
# Go test files are left out: they do not change a binary (`make go-test` runs them).
pin_hash=$(cd "$tools" && find pins.env build-steps.sh go patches -type f ! -name '*_test.go' \
  ! -path '*/istio-src/*' ! -path '*/provider-src/*' | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
cache=${KFISTIO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kf-istio-migrate}
out=$cache/toolchain/$pin_hash

started=$(date +%s)

say() { printf '[build-toolchain %4ss] %s\n' "$(($(date +%s) - started))" "$*" >&2; }

# cpu_now VAR: the user + system CPU seconds of this shell's finished children, into VAR. bash's `times` is read in
# this shell and written to a file: in a command substitution's subshell the counts would start again at zero.
cpu_now() {
  local m1 s1 m2 s2 file=$work/logs/.times.$BASHPID
  times >"$file"
  read -r m1 s1 m2 s2 < <(sed -n '2s/[ms]/ /gp' "$file")
  printf -v "$1" '%s' "$(echo "$m1 * 60 + $s1 + $m2 * 60 + $s2" | bc)"
}

# timed NAME COMMAND...: run COMMAND, append "NAME<TAB>wall s<TAB>CPU s" to the set's times file.
timed() {
  local name=$1 t0 c0 c1
  shift
  t0=$(date +%s.%N)
  cpu_now c0
  "$@"
  cpu_now c1
  printf '%s\t%.1f\t%.1f\n' "$name" "$(echo "$(date +%s.%N) - $t0" | bc)" "$(echo "$c1 - $c0" | bc)" \
    >>"$work/logs/times.tsv"
  progress "$name"
}

# progress STEP: after a step of the set being built, how far along the set is and about how long is left. Each
# step weighs its CPU seconds in tools/build-times.tsv (a cold build on 2 cores); the time left is the time so far
# scaled by the work left, so it follows this machine's speed.
progress() {
  local line
  line=$(awk -F'\t' -v set="$building" -v elapsed="$(($(date +%s) - set_started))" '
    NR == FNR { if ($1 == set) { weight[$2] = $3; total += $3; steps++ } next }
    $1 in weight { done += weight[$1]; finished++ }
    END {
      if (total == 0 || done == 0) exit
      left = elapsed * (total - done) / done
      printf "%d of %d steps, about %d %% of the %s set", finished, steps, 100 * done / total, set
      if (finished < steps) printf left < 60 ? "; under a minute left" : "; about %d min left", (left + 30) / 60
    }' "$tools/build-times.tsv" "$work/logs/times.tsv")
  [[ -z $line ]] || say "$1 built: $line"
}

# plan SET...: what building these sets from empty Go caches takes on the machine tools/build-times.tsv was measured
# on (one at about 1.9 of its 2 cores busy).
plan() {
  awk -F'\t' -v sets=" $* " 'index(sets, " " $1 " ") { cpu += $3 }
    END { if (cpu) printf "%d CPU s of work, about %d min on the 2-core machine it was measured on, %s\n", cpu,
      int(cpu / 1.9 / 60 + 0.99), "longer on a slower one" }' "$tools/build-times.tsv"
}


# build_set SET: build one set into $out unless it is built; under the pin set's lock.
build_set() {
  local set=$1 name
  [[ -f $out/.complete-$set ]] && return 0
  work=$cache/build/$pin_hash-$set
  rm -rf "$work"
  mkdir -p "$work/bin" "$work/logs" "$out/bin" "$out/logs"
  cp -r "$tools/go/." "$work/"
  local set_started set_cpu set_cpu_end building=$set
  set_started=$(date +%s)
  cpu_now set_cpu
  say "building the $set tools (module cache: $(go env GOMODCACHE)): $(plan "$set")"
  "set_$set"
  for name in ${SET_BINARIES[$set]}; do
    [[ -x $work/bin/$name ]] || { echo "build-toolchain: the $set build made no $name" >&2; return 1; }
  done
  cpu_now set_cpu_end
  printf 'total\t%s\t%.1f\n' "$(($(date +%s) - set_started))" "$(echo "$set_cpu_end - $set_cpu" | bc)" \
    >>"$work/logs/times.tsv"
  mv "$work/bin/"* "$out/bin/"
  for name in "$work/logs/"*; do mv "$name" "$out/logs/$(basename "${name%.*}")-$set.${name##*.}"; done
  touch "$out/.complete-$set"
  rm -rf "$work"
  say "built the $set tools: step, wall s, CPU s"
  column -t -s $'\t' "$out/logs/times-$set.tsv" >&2
}

# `--go-test`: the Go tests of our own Go programs: the Command provider, the language host, and proxysim in the
# istio wrapper module, against the pinned, patched Istio source kept beside the toolchain (per Istio module and
# patch, so only the first run copies it). With the build's flags, every package a test imports that the build
# compiled comes from the Go build cache (-trimpath keeps the source directory out of each package's cache key):
# only our own packages compile.
if [[ ${1:-} == --go-test ]]; then
  (cd "$tools/go/command-provider" && go test $GO_BUILD_FLAGS ./...)
  (cd "$tools/go/langhost" && go test $GO_BUILD_FLAGS ./...)
  src=$cache/go-test/$ISTIO_MODULE-$(sha256sum "$tools/patches/istio/agentgateway_disabled.go" | cut -c1-8)
  if [[ ! -f $src/.complete ]]; then
    rm -rf "$src" && mkdir -p "$src/istio" && istio_source "$src/istio/istio-src" "$ISTIO_MODULE" && touch "$src/.complete"
  fi
  cp -r "$tools/go/istio/." "$src/istio/"
  cd "$src/istio" && exec go test $GO_BUILD_FLAGS ./proxysim/...
fi
case ${1:-} in
  --dir) echo "$out/bin"; exit 0 ;;
  --sets) for set in "${SETS[@]}"; do echo "$set:" ${SET_BINARIES[$set]}; done; exit 0 ;;
esac

wanted=("${@:-demo}")
[[ ${wanted[*]} == all ]] && wanted=("${SETS[@]}")
for set in "${wanted[@]}"; do
  [[ -n ${SET_BINARIES[$set]+x} ]] || { echo "build-toolchain: no tool set '$set' (sets: ${SETS[*]} all)" >&2; exit 2; }
done
missing=()
for set in "${wanted[@]}"; do [[ -f $out/.complete-$set ]] || missing+=("$set"); done
if ((${#missing[@]})); then
  command -v go >/dev/null || { echo "build-toolchain: 'go' is not on PATH; install Go >= 1.26 first" >&2; exit 1; }
  mkdir -p "$cache/toolchain"
  exec 9>"$out.lock"
  say "to build: ${missing[*]}, $(plan "${missing[@]}")"
  flock 9  # another build of this pin set (a second test worker) finishes first; its sets are then skipped
  for set in "${missing[@]}"; do build_set "$set"; done
fi
echo "$out/bin"
