#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   1. lint (banned libc calls, clang-format);
#   2. a build with AddressSanitizer + UBSan and every unit test through ctest;
#   3. the end-to-end tests against a real control plane (etcd, kube-apiserver, kube-scheduler,
#      kube-controller-manager built from Go modules by tests/e2e/testbed/build.sh on first use
#      and cached in ~/.cache/trainsched-testbed; a cold build takes 10-20 minutes), then the
#      backend suite again on a bed with Kubernetes' native gang scheduling switched on
#      (TESTBED_NATIVE_GANG=1, about two more minutes), then the Kueue suite (label kueue) on a
#      bed restarted with Kueue's controller manager (built from its Go module on first use),
#      then the KAI suite (label kai) on a bed restarted with KAI Scheduler's scheduler and
#      binder (built from its Go module on first use: cold, with the modules downloaded and an
#      empty build cache, 366 s wall and 493 s CPU on 2 cores; the suite itself under a minute),
#      then the Volcano suite (label volcano) on a bed restarted with Volcano's vc-scheduler and
#      vc-controller-manager (built from the fetched source of github.com/volcano-sh/volcano on
#      first use: cold, empty build cache, 749 s wall under a load of 11-13 and 362 s CPU on 2
#      cores; the suite itself about 25 s);
#      between the native bed and the Kueue bed, a bed on Kubernetes 1.37.2 (versions.env's second
#      version, TESTBED_K8S_VERSION) with its workload-aware scheduling on runs the backend suite
#      and the core extender suites; the later beds' binaries build in the background while the
#      first bed's suites run;
#   4. each fuzz target for FUZZ_SECONDS (default 20).
# E2E=0 skips step 3.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-test}

scripts/lint.sh
cmake -S . -B "$BUILD" -DTS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
(cd "$BUILD" && ctest --output-on-failure -j"$(nproc)" -LE e2e)

if [ "${E2E:-1}" != 0 ]; then
  export TRAINSCHED_TESTBED_RUN=${TRAINSCHED_TESTBED_RUN:-/tmp/trainsched-testbed-tests}
  # bed VAR=VALUE...: a fresh bed with exactly these settings, then its env file sourced; the
  # settings the previous bed's env file exported are not inherited by up.sh
  bed() {
    tests/e2e/testbed/down.sh >/dev/null 2>&1 || true
    env -u TESTBED_BIN -u TESTBED_NATIVE_GANG -u TESTBED_CRDS -u TESTBED_K8S_VERSION "$@" \
      tests/e2e/testbed/up.sh >/dev/null
    # shellcheck disable=SC1091
    . "$TRAINSCHED_TESTBED_RUN/env"
  }
  trap 'tests/e2e/testbed/down.sh >/dev/null 2>&1 || true' EXIT
  # a short compaction interval, and no watch cache for Secrets, let the tests see 410 Gone
  bed TESTBED_JOBSET=1 TESTBED_KWOK=1 TESTBED_HELM=1 \
    APISERVER_EXTRA_ARGS="--etcd-compaction-interval=10s --watch-cache-sizes=secrets#0"
  # On a cold machine the binaries of the later beds (Kubernetes 1.37.2, Kueue, KAI, Volcano)
  # build in the background, niced, while the first bed's suites run: those mostly wait on the bed, so the two
  # overlap instead of adding up. Warm, it finds everything present and ends at once. Waited for
  # before the first bed that needs it; its log is $BUILD/prebuild.log.
  (env -u TESTBED_BIN TESTBED_NICE=19 TESTBED_K8S_VERSION="$(. tests/e2e/testbed/versions.env && echo "$K8S_VERSION_SECOND")" \
     tests/e2e/testbed/build.sh \
   && env -u TESTBED_BIN TESTBED_NICE=19 TESTBED_KUEUE=1 TESTBED_KAI=1 TESTBED_VOLCANO=1 \
     tests/e2e/testbed/build.sh) \
    > "$BUILD/prebuild.log" 2>&1 &
  prebuild=$!
  (cd "$BUILD" && ctest --output-on-failure -L e2e -LE 'kueue|kai|volcano')
  # Kubernetes 1.36's own gang scheduling is alpha (its API group and feature gates are off by
  # default): a second bed with them on, for the backend suite alone (the first run above
  # checked the same suite on a cluster without the API). It has no Volcano, coscheduling or
  # Kueue CRDs, so the suite also checks that a backend whose API is missing writes nothing
  # (the first run checked the same backends with their APIs).
  bed TESTBED_NATIVE_GANG=1 TESTBED_JOBSET=1 TESTBED_KWOK=1 TESTBED_CRDS="jobset trainer"
  (cd "$BUILD" && ctest --output-on-failure -R '^e2e_test_backends$')
  # Kubernetes 1.37.2 (the second version of versions.env, built and cached beside the first)
  # with its workload-aware scheduling on (scheduling.k8s.io/v1beta1, GenericWorkload,
  # TopologyAwareWorkloadScheduling, DRAWorkloadResourceClaims): the backend suite (the native
  # backend writes v1beta1 there) and the core extender suites on kube-scheduler 1.37.2
  wait "$prebuild" || { echo "test.sh: the background build of the later beds failed:" >&2; tail -20 "$BUILD/prebuild.log" >&2; }
  bed TESTBED_K8S_VERSION="$(. tests/e2e/testbed/versions.env && echo "$K8S_VERSION_SECOND")" \
    TESTBED_NATIVE_GANG=1 TESTBED_JOBSET=1 TESTBED_KWOK=1
  (cd "$BUILD" && ctest --output-on-failure -R '^e2e_test_(backends|extender|extender_flow|extender_dra|webhook)$')
  # the Kueue suite on a bed that also runs Kueue's controller manager (built from its Go module
  # on first use, cached with the other bed binaries)
  bed TESTBED_JOBSET=1 TESTBED_KWOK=1 TESTBED_KUEUE=1
  (cd "$BUILD" && TS_REQUIRE_KUEUE=1 ctest --output-on-failure -L kueue)
  # the KAI suite on a bed that also runs KAI Scheduler's scheduler and binder (built from its Go
  # module on first use, cached with the other bed binaries); TS_REQUIRE_KAI=1 makes a failed
  # build or a KAI that does not start fail up.sh, and the suite fail instead of saying SKIP
  bed TS_REQUIRE_KAI=1 TESTBED_KAI=1 TESTBED_JOBSET=1 TESTBED_KWOK=1 TESTBED_CRDS="jobset trainer kai"
  (cd "$BUILD" && TS_REQUIRE_KAI=1 ctest --output-on-failure -L kai)
  # the Volcano suite on a bed that also runs Volcano's vc-scheduler and vc-controller-manager
  # (built from the fetched source of github.com/volcano-sh/volcano at VOLCANO_VERSION on first
  # use, cached with the other bed binaries; the source is looked for under TESTBED_SOURCE_MIRRORS);
  # TS_REQUIRE_VOLCANO=1 makes a missing source, a failed build or a Volcano that does not start
  # fail up.sh, and the suite fail instead of saying SKIP
  bed TS_REQUIRE_VOLCANO=1 TESTBED_VOLCANO=1 TESTBED_JOBSET=1 TESTBED_KWOK=1 TESTBED_CRDS="jobset trainer volcano"
  (cd "$BUILD" && TS_REQUIRE_VOLCANO=1 ctest --output-on-failure -L volcano)
fi

scripts/fuzz.sh
