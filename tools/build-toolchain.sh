#!/usr/bin/env bash
# Builds the pinned toolchain (tools/pins.env, tools/go/*) from Go modules into a cache outside the work tree.
#
#   tools/build-toolchain.sh          build what is missing, print the bin directory
#   tools/build-toolchain.sh --dir    print the bin directory this pin set builds into (builds nothing)
#
# The cache key is a hash of everything under tools/ that affects the binaries, so an unchanged pin set rebuilds
# nothing and a changed one builds beside the old. KFISTIO_CACHE overrides the cache root.
set -euo pipefail

tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=pins.env
source "$tools/pins.env"

# Go test files are left out: they do not change a binary (`make go-test` runs them).
pin_hash=$(cd "$tools" && find pins.env build-toolchain.sh go patches -type f ! -name '*_test.go' \
  ! -path '*/istio-src/*' ! -path '*/provider-src/*' | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
cache=${KFISTIO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kf-istio-migrate}
out=$cache/toolchain/$pin_hash

started=$(date +%s)

say() { printf '[build-toolchain %4ss] %s\n' "$(($(date +%s) - started))" "$*" >&2; }

# module_dir MODULE@VERSION -> the read-only directory of that module in the Go module cache.
module_dir() { go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'; }

# writable_copy MODULE@VERSION DEST: a module's source where patches and generated files can be written.
writable_copy() {
  rm -rf "$2"
  cp -r "$(module_dir "$1")" "$2"
  chmod -R u+w "$2"
}

# build TOOL_DIR LDFLAGS OUTPUT PACKAGE...: go build packages of one wrapper module into OUTPUT (bin/ or a file).
build() {
  local dir=$1 ldflags=$2 output=$3
  shift 3
  say "building $dir: $*"
  if ! (cd "$work/$dir" && go build -trimpath -ldflags "-s -w $ldflags" -o "$output" "$@") \
      >"$work/logs/$dir.log" 2>&1; then
    tail -n 30 "$work/logs/$dir.log" >&2
    echo "build-toolchain: building $dir failed; full log: $work/logs/$dir.log" >&2
    exit 1
  fi
}

# istio_source DEST MODULE: DEST, istio.io/istio at MODULE without the agentgateway controller.
istio_source() {
  say "preparing Istio source ($2) without the agentgateway controller"
  writable_copy "istio.io/istio@$2" "$1"
  rm -f "$1/pilot/pkg/config/kube/agentgateway/"*.go
  cp "$tools/patches/istio/agentgateway_disabled.go" "$1/pilot/pkg/config/kube/agentgateway/"
  (cd "$1" && go mod edit -droprequire=github.com/agentgateway/agentgateway/api)
}

# `--go-test-istio`: the Go tests of our code in the istio wrapper module (proxysim), against the pinned, patched
# Istio source, kept beside the toolchain (per Istio module and patch) so only the first run copies it.
if [[ ${1:-} == --go-test-istio ]]; then
  src=$cache/go-test/$ISTIO_MODULE-$(sha256sum "$tools/patches/istio/agentgateway_disabled.go" | cut -c1-8)
  if [[ ! -f $src/.complete ]]; then
    rm -rf "$src" && mkdir -p "$src/istio" && istio_source "$src/istio/istio-src" "$ISTIO_MODULE" && touch "$src/.complete"
  fi
  cp -r "$tools/go/istio/." "$src/istio/"
  cd "$src/istio" && exec go test ./proxysim/...
fi

if [[ ${1:-} == --dir ]]; then
  echo "$out/bin"
  exit 0
fi
if [[ -f $out/.complete ]]; then
  echo "$out/bin"
  exit 0
fi
command -v go >/dev/null || { echo "build-toolchain: 'go' is not on PATH; install Go >= 1.26 first" >&2; exit 1; }

work=$cache/build/$pin_hash
rm -rf "$work"
mkdir -p "$work/bin" "$work/share" "$work/logs"
cp -r "$tools/go/." "$work/"

say "downloading modules (cache: $(go env GOMODCACHE))"
for dir in pulumi langhost command-provider kubernetes etcd kwok; do
  (cd "$work/$dir" && go mod download) &
done
wait

istio_source "$work/istio/istio-src" "$ISTIO_MODULE"
istio_source "$work/istio-next/istio-src" "$ISTIO_NEXT_MODULE"

say "preparing pulumi-kubernetes provider source ($KUBERNETES_PROVIDER_MODULE) with its generated embeds"
provider_src=$work/kubernetes-provider/provider-src
writable_copy "github.com/pulumi/pulumi-kubernetes/provider/v4@$KUBERNETES_PROVIDER_MODULE" "$provider_src"
(cd "$provider_src/cmd/pulumi-resource-kubernetes" && VERSION=$KUBERNETES_PROVIDER_VERSION go run ./generate.go)

build pulumi "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION" "$work/bin/" \
  github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
build langhost "-X main.version=$PULUMI_VERSION" "$work/bin/pulumi-language-python" .
install -m 0755 "$(module_dir "github.com/pulumi/pulumi/sdk/v3@v$PULUMI_VERSION")/python/cmd/pulumi-language-python-exec" "$work/bin/"
build command-provider "-X main.version=$COMMAND_PROVIDER_VERSION" "$work/bin/pulumi-resource-command" .
build kubernetes-provider \
  "-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$KUBERNETES_PROVIDER_VERSION" "$work/bin/" \
  github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes

k8s_minor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)
k8s_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor"
  k8s_ldflags+=" -X $pkg.gitTreeState=clean"
done
build kubernetes "$k8s_ldflags" "$work/bin/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler
build etcd "" "$work/bin/etcd" .
build kwok "" "$work/bin/" sigs.k8s.io/kwok/cmd/kwok
istio_ldflags() {
  echo "-X istio.io/istio/pkg/version.buildVersion=$1 -X istio.io/istio/pkg/version.buildGitRevision=${2##*-} \
    -X istio.io/istio/pkg/version.buildStatus=Clean"
}
# proxysim (tools/go/istio/proxysim): our proxy simulator, built from the pinned Istio module's ADS and CA clients.
build istio "$(istio_ldflags "$ISTIO_VERSION" "$ISTIO_MODULE")" "$work/bin/" \
  istio.io/istio/istioctl/cmd/istioctl istio.io/istio/pilot/cmd/pilot-discovery ./proxysim
# The second build is named by its version (istioctl-1.31-dev): what the program looks for on PATH.
build istio-next "$(istio_ldflags "$ISTIO_NEXT_VERSION" "$ISTIO_NEXT_MODULE")" "$work/istio-next/bin/" \
  istio.io/istio/istioctl/cmd/istioctl istio.io/istio/pilot/cmd/pilot-discovery
for tool in istioctl pilot-discovery; do
  mv "$work/istio-next/bin/$tool" "$work/bin/$tool-$ISTIO_NEXT_VERSION"
done

# kwok simulates node and pod lifecycles from Stage objects: take upstream's own stage sets from the pinned module
# (the ones kwokctl uses by default), in the order their kustomization.yaml lists them.
kwok_stages=$(module_dir "sigs.k8s.io/kwok@$KWOK_VERSION")/kustomize/stage
for set in node/fast node/heartbeat-with-lease pod/general; do
  for file in $(sed -n 's/^- //p' "$kwok_stages/$set/kustomization.yaml"); do
    printf -- '---\n'
    cat "$kwok_stages/$set/$file"
  done
done >"$work/share/kwok-stages.yaml"
# kwok's PortForward CRD (per-pod port-forward rules, what `istioctl proxy-status` needs to reach each istiod).
cp "$(module_dir "sigs.k8s.io/kwok@$KWOK_VERSION")/kustomize/crd/bases/kwok.x-k8s.io_portforwards.yaml" \
  "$work/share/kwok-portforward-crd.yaml"

rm -rf "$out"
mkdir -p "$out"
mv "$work/bin" "$work/share" "$work/logs" "$out/"
echo "built in $(($(date +%s) - started))s on $(nproc) cores" >"$out/.complete"
rm -rf "$work"
say "done: $out/bin"
echo "$out/bin"
