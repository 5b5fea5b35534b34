#!/usr/bin/env bash
# Builds the test bed binaries from Go modules into a cache outside the repository:
#   ${TRAINSCHED_TESTBED_CACHE:-$HOME/.cache/trainsched-testbed}/<k8s-version>/bin/
# Binaries already present are skipped, so a second run is a no-op.
#   required: etcd kube-apiserver kube-scheduler kube-controller-manager kubectl
#   optional: jobset-controller kwok helm (a failure is reported, not fatal; skip with TESTBED_OPTIONAL=0)
#   optional, asked for: kueue-controller-<KUEUE_VERSION> (Kueue's manager, only with TESTBED_KUEUE=1: a cold build
#   takes long, and only the Kueue e2e suite needs it); kai-scheduler and kai-binder (KAI Scheduler's
#   scheduler and binder from github.com/NVIDIA/KAI-scheduler, only with TESTBED_KAI=1: the same);
#   vc-scheduler and vc-controller-manager (Volcano's, only with TESTBED_VOLCANO=1), built from the
#   fetched source of github.com/volcano-sh/volcano at VOLCANO_VERSION (the proxy does not serve
#   it), into bin/ as vc-*-<version>, with the CRDs that tag ships under crds/volcano-<version>/
# Prints the bin directory on stdout at the end; progress goes to stderr.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v go >/dev/null || tb_die "go not found"
# -mod=mod: our go.mod/go.sum are committed and complete; -trimpath and -buildvcs=false keep
# paths and the repository revision out of the binaries (same bytes on every machine).
export GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath -buildvcs=false"
export CGO_ENABLED="${CGO_ENABLED:-0}"
NICE=(nice -n "${TESTBED_NICE:-10}")
# etcd and the optional peers do not depend on the Kubernetes version: built once, under the
# default version's cache dir, and linked into the other version's
OBIN="$TESTBED_BIN_DEFAULT"; [ -z "${TESTBED_BIN_GIVEN:-}" ] || OBIN="$TESTBED_BIN"
mkdir -p "$TESTBED_BIN" "$OBIN"
STATUS="$TESTBED_BIN/../build-status.txt"
tmp="$(mktemp -d "$TESTBED_BIN/../.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

t_all=$SECONDS
status() { echo "$(date -u +%FT%TZ) $*" >> "$STATUS"; }

# --- Kubernetes: one go build for all missing binaries (they share most packages) ---
kmajor="${K8S_VERSION#v}"; kmajor="${kmajor%%.*}"
kminor="${K8S_VERSION#v*.}"; kminor="${kminor%%.*}"
kv_flags=""
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  kv_flags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=$kmajor -X $pkg.gitMinor=$kminor"
  kv_flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
kpkgs=()
for b in kube-apiserver kube-scheduler kube-controller-manager kubectl; do
  if [ -x "$TESTBED_BIN/$b" ]; then tb_log "$b: present, skipped"; else kpkgs+=("k8s.io/kubernetes/cmd/$b"); fi
done
if [ "${#kpkgs[@]}" -gt 0 ]; then
  tb_log "building ${kpkgs[*]##*/} at k8s.io/kubernetes $K8S_VERSION (cold: tens of minutes on 2 cores)"
  t=$SECONDS
  (cd "$TESTBED_K8S_MODDIR" && "${NICE[@]}" go build -ldflags="-s -w$kv_flags" -o "$tmp/" "${kpkgs[@]}")
  for p in "${kpkgs[@]}"; do mv "$tmp/${p##*/}" "$TESTBED_BIN/"; done
  tb_log "kubernetes binaries built in $((SECONDS - t)) s"
  status "built ${kpkgs[*]##*/} $K8S_VERSION in $((SECONDS - t)) s"
fi

# --- etcd ---
if [ -x "$OBIN/etcd" ]; then tb_log "etcd: present, skipped"; else
  tb_log "building etcd from go.etcd.io/etcd/server/v3 $ETCD_VERSION"
  t=$SECONDS
  (cd "$TESTBED_DIR/etcd" && "${NICE[@]}" go build -ldflags="-s -w" -o "$tmp/etcd" .)
  mv "$tmp/etcd" "$OBIN/"
  tb_log "etcd built in $((SECONDS - t)) s"
  status "built etcd $ETCD_VERSION in $((SECONDS - t)) s"
fi

# --- Volcano CRDs: volcano.sh/volcano (which ships the YAML) is not served by the module proxy,
# so generate the scheduling.volcano.sh CRDs (PodGroup, Queue) from volcano.sh/apis with
# controller-gen, the way Volcano itself produces them. Not fatal.
vdir="$TESTBED_CACHE_ROOT/$K8S_VERSION_DEFAULT/crds/volcano-$VOLCANO_APIS_VERSION"
if [ -n "${VOLCANO_APIS_VERSION:-}" ] && [ "${TESTBED_OPTIONAL:-1}" != 0 ]; then
  if ls "$vdir"/*.yaml >/dev/null 2>&1; then tb_log "volcano CRDs: present, skipped"; else
    tb_log "generating Volcano CRDs from volcano.sh/apis $VOLCANO_APIS_VERSION (controller-gen $CONTROLLER_TOOLS_VERSION)"
    t=$SECONDS
    if (cd "$TESTBED_DIR/volcano-crd" && "${NICE[@]}" go tool controller-gen crd:crdVersions=v1 \
          paths=volcano.sh/apis/pkg/apis/scheduling/v1beta1 output:crd:dir="$tmp/volcano") > "$tmp/volcano.log" 2>&1 \
       && ls "$tmp"/volcano/*.yaml >/dev/null 2>&1; then
      mkdir -p "$(dirname "$vdir")" && mv "$tmp/volcano" "$vdir"
      tb_log "volcano CRDs generated in $((SECONDS - t)) s: $(ls "$vdir" | tr '\n' ' ')"
      status "generated volcano CRDs $VOLCANO_APIS_VERSION in $((SECONDS - t)) s"
    else
      tb_log "volcano CRDs: generation FAILED (not fatal)"; tail -5 "$tmp/volcano.log" >&2 || true
      status "FAILED volcano CRDs $VOLCANO_APIS_VERSION"
    fi
  fi
fi

# --- optional binaries, each from its own small module (jobset/, kwok/, helm/) whose build list is
# upstream's own go.mod (no replace directives). `go install pkg@version` is not used: for
# sigs.k8s.io/jobset it fails, because the proxy refuses the module's version list.
opt_build() { # name  module-dir  package  version
  local name=$1 dir=$2 pkg=$3 ver=$4 t=$SECONDS
  if [ -x "$OBIN/$name" ]; then tb_log "$name: present, skipped"; return 0; fi
  if [ -e "$OBIN/../$name.failed" ]; then
    tb_log "$name: failed before (see $OBIN/../$name.failed; delete it to retry), skipped"; return 0
  fi
  tb_log "building optional $name from $pkg $ver"
  if (cd "$TESTBED_DIR/$dir" && "${NICE[@]}" go build -ldflags="-s -w" -o "$tmp/$name" "$pkg") \
       > "$tmp/$name.log" 2>&1; then
    mv "$tmp/$name" "$OBIN/$name"
    tb_log "$name built in $((SECONDS - t)) s"
    status "built $name $ver in $((SECONDS - t)) s"
  else
    cp "$tmp/$name.log" "$OBIN/../$name.failed"
    tb_log "$name: build FAILED (not fatal); log: $OBIN/../$name.failed"
    tail -5 "$tmp/$name.log" >&2 || true
    status "FAILED $name $ver"
  fi
}
if [ "${TESTBED_OPTIONAL:-1}" != 0 ]; then
  [ -z "${JOBSET_VERSION:-}" ] || opt_build jobset-controller jobset sigs.k8s.io/jobset "$JOBSET_VERSION"
  [ -z "${KWOK_VERSION:-}" ] || opt_build kwok kwok sigs.k8s.io/kwok/cmd/kwok "$KWOK_VERSION"
  [ -z "${HELM_VERSION:-}" ] || opt_build helm helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"
  if [ "${TESTBED_SCHEDPLUGINS:-0}" = 1 ] && [ -n "${SCHEDPLUGINS_VERSION:-}" ]; then
    opt_build schedplugins-scheduler schedplugins sigs.k8s.io/scheduler-plugins/cmd/scheduler "$SCHEDPLUGINS_VERSION"
    opt_build schedplugins-controller schedplugins sigs.k8s.io/scheduler-plugins/cmd/controller "$SCHEDPLUGINS_VERSION"
  fi
  if [ "${TESTBED_KUEUE:-0}" = 1 ] && [ -n "${KUEUE_VERSION:-}" ]; then
    opt_build "$KUEUE_BIN" kueue sigs.k8s.io/kueue/cmd/kueue "$KUEUE_VERSION"
  fi
  if [ "${TESTBED_KAI:-0}" = 1 ] && [ -n "${KAI_VERSION:-}" ]; then
    opt_build kai-scheduler kai github.com/NVIDIA/KAI-scheduler/cmd/scheduler "$KAI_VERSION"
    opt_build kai-binder kai github.com/NVIDIA/KAI-scheduler/cmd/binder "$KAI_VERSION"
  fi
fi

# --- peers the module proxy does not serve: built from their fetched source repository at a tag
# (tb_source_tree), their Go dependencies from the proxy. The binaries are named with the version
# (name-version), so a version change builds anew beside the old one.
SRC_MISSING=" "
src_build() { # name  owner/repo  tag  package(./cmd/...)  [ldflags]
  local name=$1 repo=$2 tag=$3 pkg=$4 ldflags=${5:-} t=$SECONDS src="$tmp/src-${2//\//+}-$3"
  if [ -x "$OBIN/$name-$tag" ]; then tb_log "$name $tag: present, skipped"; return 0; fi
  if [ -e "$OBIN/../$name-$tag.failed" ]; then
    tb_log "$name $tag: failed before (see $OBIN/../$name-$tag.failed; delete it to retry), skipped"; return 0
  fi
  case "$SRC_MISSING" in *" $repo@$tag "*) tb_log "$name $tag: no source (above), skipped"; return 0 ;; esac
  if [ ! -d "$src" ] && ! tb_source_tree "$repo" "$tag" "$src"; then
    SRC_MISSING+="$repo@$tag "; status "SKIPPED $name $tag: no source"; return 0
  fi
  tb_log "building optional $name from github.com/$repo $tag ($pkg)"
  if (cd "$src" && "${NICE[@]}" go build -ldflags="-s -w$ldflags" -o "$tmp/$name" "$pkg") > "$tmp/$name.log" 2>&1; then
    mv "$tmp/$name" "$OBIN/$name-$tag"
    tb_log "$name $tag built in $((SECONDS - t)) s"
    status "built $name $tag in $((SECONDS - t)) s"
  else
    # a dependency the proxy does not serve shows as "reading https://proxy.golang.org/...: 404"
    cp "$tmp/$name.log" "$OBIN/../$name-$tag.failed"
    tb_log "$name $tag: build FAILED (not fatal); log: $OBIN/../$name-$tag.failed"
    grep -E 'proxy.golang.org|not found|unknown revision' "$tmp/$name.log" | head -5 >&2 || true
    tail -5 "$tmp/$name.log" >&2 || true
    status "FAILED $name $tag"
  fi
}
if [ "${TESTBED_OPTIONAL:-1}" != 0 ] && [ "${TESTBED_VOLCANO:-0}" = 1 ] && [ -n "${VOLCANO_VERSION:-}" ]; then
  vflags=" -X volcano.sh/volcano/pkg/version.Version=$VOLCANO_VERSION -X volcano.sh/volcano/pkg/version.Built=1970-01-01"
  src_build vc-scheduler volcano-sh/volcano "$VOLCANO_VERSION" ./cmd/scheduler "$vflags"
  src_build vc-controller-manager volcano-sh/volcano "$VOLCANO_VERSION" ./cmd/controller-manager "$vflags"
  # the CRDs that tag ships (PodGroup, Queue, HyperNode, Job...), kept beside the binaries
  vcrd="$TESTBED_CACHE_ROOT/$K8S_VERSION_DEFAULT/crds/volcano-$VOLCANO_VERSION"
  vsrc="$tmp/src-volcano-sh+volcano-$VOLCANO_VERSION"
  if ls "$vcrd"/*.yaml >/dev/null 2>&1; then tb_log "volcano $VOLCANO_VERSION CRDs: present, skipped"
  elif [ -d "$vsrc/config/crd/volcano/bases" ] || tb_source_tree volcano-sh/volcano "$VOLCANO_VERSION" "$vsrc"; then
    mkdir -p "$vcrd.tmp" && cp "$vsrc"/config/crd/volcano/bases/*.yaml "$vcrd.tmp/" && mv "$vcrd.tmp" "$vcrd"
    tb_log "volcano $VOLCANO_VERSION CRDs: $(ls "$vcrd" | tr '\n' ' ')"
  fi
fi

# the second Kubernetes version's bed uses the same version-independent binaries: linked
if [ "$OBIN" != "$TESTBED_BIN" ]; then
  for f in "$OBIN"/*; do
    b=${f##*/}
    case "$b" in kube-apiserver|kube-scheduler|kube-controller-manager|kubectl) continue ;; esac
    if [ -x "$f" ] && [ ! -e "$TESTBED_BIN/$b" ]; then ln -sfn "$f" "$TESTBED_BIN/$b"; fi
  done
fi
tb_log "done in $((SECONDS - t_all)) s; binaries in $TESTBED_BIN:"
ls -l "$TESTBED_BIN" >&2
echo "$TESTBED_BIN"
