# The build steps of the pinned toolchain: the tool sets, and how each binary is built from its wrapper module in
# tools/go (sourced by tools/build-toolchain.sh, which runs them). Everything here decides what the binaries are, so
# this file, tools/pins.env, tools/go and tools/patches are what the toolchain cache is keyed by; the driver (which
# sets to build, progress, locking, Go tests) can change without rebuilding anything.
# shellcheck shell=bash

SETS=(demo istio-next helm s3)
declare -A SET_BINARIES=(
  [demo]="pulumi pulumi-language-python pulumi-language-python-exec pulumi-resource-command pulumi-resource-kubernetes
          kube-apiserver kube-controller-manager kube-scheduler etcd kwok istioctl pilot-discovery proxysim"
  [istio-next]="istioctl-$ISTIO_NEXT_VERSION pilot-discovery-$ISTIO_NEXT_VERSION"
  [helm]="helm"
  [s3]="versitygw"
)

# module_dir MODULE@VERSION -> the read-only directory of that module in the Go module cache.
module_dir() { go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'; }

# writable_copy MODULE@VERSION DEST: a module's source where patches and generated files can be written.
writable_copy() {
  rm -rf "$2"
  cp -r "$(module_dir "$1")" "$2"
  chmod -R u+w "$2"
}

# Every package of every binary (and of our Go tests, which then reuse them from the Go build cache). The binaries
# are stripped (-s -w), so no package is compiled with debug information either (-dwarf=false): 11 % less CPU for
# the same binaries (kwok from an empty build cache, 2026-12-06: 175.6 s -> 156.2 s).
GO_BUILD_FLAGS="-trimpath -gcflags=all=-dwarf=false"

# build TOOL_DIR LDFLAGS OUTPUT PACKAGE...: go build packages of one wrapper module into OUTPUT (bin/ or a file).
build() {
  local dir=$1 ldflags=$2 output=$3
  shift 3
  say "building $dir: $*"
  if ! (cd "$work/$dir" && go build $GO_BUILD_FLAGS -ldflags "-s -w $ldflags" -o "$output" "$@") \
      >"$work/logs/$dir.log" 2>&1; then
    tail -n 30 "$work/logs/$dir.log" >&2
    echo "build-toolchain: building $dir failed; full log: $work/logs/$dir.log" >&2
    return 1
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

istio_ldflags() {
  echo "-X istio.io/istio/pkg/version.buildVersion=$1 -X istio.io/istio/pkg/version.buildGitRevision=${2##*-} \
    -X istio.io/istio/pkg/version.buildStatus=Clean"
}

# download DIR...: every module the wrapper modules DIR... need, one `go mod download` per wrapper, all at once.
download() {
  local dir pids=()
  for dir in "$@"; do
    (cd "$work/$dir" && go mod download) &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
}

# lanes "STEP STEP..." "STEP...": run two lists of build steps side by side, each list in order. One `go build` keeps
# two cores busy only while it compiles; its link, and the packages a large binary waits on, leave one idle.
lanes() {
  local lane pids=() failed=0
  for lane in "$@"; do
    (for step in $lane; do timed "$step" "build_$step" || exit 1; done) &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  return $failed
}

build_pulumi() {
  build pulumi "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION" "$work/bin/" \
    github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
}
build_langhost() {
  build langhost "-X main.version=$PULUMI_VERSION" "$work/bin/pulumi-language-python" .
  install -m 0755 "$(module_dir "github.com/pulumi/pulumi/sdk/v3@v$PULUMI_VERSION")/python/cmd/pulumi-language-python-exec" "$work/bin/"
}
build_command-provider() {
  build command-provider "-X main.version=$COMMAND_PROVIDER_VERSION" "$work/bin/pulumi-resource-command" .
}
build_kubernetes-provider() {
  build kubernetes-provider \
    "-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$KUBERNETES_PROVIDER_VERSION" "$work/bin/" \
    github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes
}
build_kubernetes() {
  local k8s_minor k8s_ldflags="" pkg
  k8s_minor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    k8s_ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor"
    k8s_ldflags+=" -X $pkg.gitTreeState=clean"
  done
  build kubernetes "$k8s_ldflags" "$work/bin/" k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
}
build_etcd() { build etcd "" "$work/bin/etcd" .; }
build_kwok() { build kwok "" "$work/bin/" sigs.k8s.io/kwok/cmd/kwok; }
# proxysim (tools/go/istio/proxysim): our proxy simulator, built from the pinned Istio module's ADS and CA clients.
build_istio() {
  build istio "$(istio_ldflags "$ISTIO_VERSION" "$ISTIO_MODULE")" "$work/bin/" \
    istio.io/istio/istioctl/cmd/istioctl istio.io/istio/pilot/cmd/pilot-discovery ./proxysim
}
# The second build is named by its version (istioctl-1.31-dev): what the program looks for on PATH.
build_istio-next() {
  local tool
  build istio-next "$(istio_ldflags "$ISTIO_NEXT_VERSION" "$ISTIO_NEXT_MODULE")" "$work/istio-next/bin/" \
    istio.io/istio/istioctl/cmd/istioctl istio.io/istio/pilot/cmd/pilot-discovery
  for tool in istioctl pilot-discovery; do
    mv "$work/istio-next/bin/$tool" "$work/bin/$tool-$ISTIO_NEXT_VERSION"
  done
}

# The builds start at once: each `go build` fetches the modules it lacks, and a download of every module runs beside
# them so that later builds find theirs (the module cache takes concurrent downloads). The provider's generated
# embeds (a go run) are the first step of its lane.
set_demo() {
  istio_source "$work/istio/istio-src" "$ISTIO_MODULE"
  download pulumi langhost command-provider kubernetes etcd kwok istio &
  local downloads=$!
  # Balanced by each build's time alone on 2 cores (cold, 2026-12-06): pulumi 385 s, istio 240, langhost 32,
  # etcd 19, command-provider 19 | provider source ~60, kubernetes-provider 398, kubernetes 225, kwok 56.
  lanes "pulumi istio langhost etcd command-provider" "provider-source kubernetes-provider kubernetes kwok"
  wait "$downloads"
  kwok_share
}
build_provider-source() {
  local provider_src=$work/kubernetes-provider/provider-src
  say "preparing pulumi-kubernetes provider source ($KUBERNETES_PROVIDER_MODULE) with its generated embeds"
  writable_copy "github.com/pulumi/pulumi-kubernetes/provider/v4@$KUBERNETES_PROVIDER_MODULE" "$provider_src"
  (cd "$provider_src/cmd/pulumi-resource-kubernetes" && VERSION=$KUBERNETES_PROVIDER_VERSION go run ./generate.go) \
    >"$work/logs/provider-source.log" 2>&1
}
# kwok simulates node and pod lifecycles from Stage objects: take upstream's own stage sets from the pinned module
# (the ones kwokctl uses by default), in the order their kustomization.yaml lists them, and its PortForward CRD
# (per-pod port-forward rules, what `istioctl proxy-status` needs to reach each istiod).
kwok_share() {
  local kwok_src set file
  kwok_src=$(module_dir "sigs.k8s.io/kwok@$KWOK_VERSION")
  mkdir -p "$out/share"
  for set in node/fast node/heartbeat-with-lease pod/general; do
    for file in $(sed -n 's/^- //p' "$kwok_src/kustomize/stage/$set/kustomization.yaml"); do
      printf -- '---\n'
      cat "$kwok_src/kustomize/stage/$set/$file"
    done
  done >"$out/share/kwok-stages.yaml"
  cp "$kwok_src/kustomize/crd/bases/kwok.x-k8s.io_portforwards.yaml" "$out/share/kwok-portforward-crd.yaml"
}

# copy_charts MODULE_VERSION DIR: the charts an Istio module's istioctl renders from, as Helm reads them:
# manifests/charts/base and manifests/charts/istio-control/istio-discovery (the chart named istiod), into DIR.
copy_charts() {
  local charts
  charts=$(module_dir "istio.io/istio@$1")/manifests/charts
  mkdir -p "$2"
  rm -rf "$2/base" "$2/istiod"
  cp -r "$charts/base" "$2/base"
  cp -r "$charts/istio-control/istio-discovery" "$2/istiod"
  chmod -R u+w "$2"
}

# The second minor's charts too (share/charts-<version>/): the next owner's upgrade to it, by Helm.
set_istio-next() {
  istio_source "$work/istio-next/istio-src" "$ISTIO_NEXT_MODULE"
  lanes "istio-next"
  copy_charts "$ISTIO_NEXT_MODULE" "$out/share/charts-$ISTIO_NEXT_VERSION"
}

# The pinned Istio's charts, into share/charts/.
set_helm() {
  lanes "helm"
  copy_charts "$ISTIO_MODULE" "$out/share/charts"
}
set_s3() { lanes "versitygw"; }
build_versitygw() {
  build versitygw "-X main.Version=$VERSITYGW_VERSION -X main.Build=$VERSITYGW_VERSION" "$work/bin/" \
    github.com/versity/versitygw/cmd/versitygw
}
build_helm() { build helm "-X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" "$work/bin/" helm.sh/helm/v4/cmd/helm; }
