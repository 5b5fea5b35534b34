// claimdiff: the claim status trainsched writes, against kube-scheduler 1.36.3's own code and
// the API server's own validation (test tooling only; README.md).
//
// For each generated case (ResourceSlices on a node and shared ones, DeviceClasses with and
// without configs, a ResourceClaim of random shape) it:
//  1. makes the claim as the API server stores it (defaults, fields of disabled gates dropped,
//     ValidateResourceClaim) and hands it to trainsched's C path (claimstatus) for the status
//     trainsched writes on that node;
//  2. runs the upstream structured allocator, with the scheduler's own feature set, over slices
//     that hold only the devices trainsched chose: what kube-scheduler writes for those devices;
//     the two status.allocation must be equal (the timestamp taken from ours);
//  3. validates our write as the API server validates a status update of the unallocated claim;
//  4. applies kube-scheduler's reservation step (bindClaim, for a claim already allocated) on
//     the claim as we wrote it, and validates that update the same way: it must be accepted.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	resourceinternal "k8s.io/kubernetes/pkg/apis/resource"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	"k8s.io/kubernetes/pkg/apis/resource/validation"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/registry/resource/resourceclaim"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	sigsjson "sigs.k8s.io/json"
)

type pod struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

type testCase struct {
	Slices  []*resourceapi.ResourceSlice `json:"slices"`
	Classes []*resourceapi.DeviceClass   `json:"classes"`
	Claim   *resourceapi.ResourceClaim   `json:"claim"`
	Node    string                       `json:"node"`
	Pod     pod                          `json:"pod"`
	Time    int64                        `json:"time"`
}

type written struct {
	Claim json.RawMessage `json:"claim"`
	Error string          `json:"error"`
}

type classLister []*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) { return l, nil }
func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, c := range l {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("device class %s not found", name)
}

// toInternal converts a v1 claim to the API server's internal type, with the v1 defaults.
func toInternal(c *resourceapi.ResourceClaim) (*resourceinternal.ResourceClaim, error) {
	c = c.DeepCopy()
	legacyscheme.Scheme.Default(c)
	out := &resourceinternal.ResourceClaim{}
	if err := legacyscheme.Scheme.Convert(c, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// stored: the claim as the API server stores it on create, or why it refuses it.
func stored(c *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error) {
	in, err := toInternal(c)
	if err != nil {
		return nil, err
	}
	resourceclaim.NewStrategy(nil, nil).PrepareForCreate(context.Background(), in)
	if errs := validation.ValidateResourceClaim(in); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	out := &resourceapi.ResourceClaim{}
	if err := legacyscheme.Scheme.Convert(in, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// statusUpdate: the API server's validation of a status update from old to new (the status
// strategy keeps the spec and metadata of old, then ValidateResourceClaimStatusUpdate).
func statusUpdate(newClaim, oldClaim *resourceapi.ResourceClaim) error {
	n, err := toInternal(newClaim)
	if err != nil {
		return err
	}
	o, err := toInternal(oldClaim)
	if err != nil {
		return err
	}
	n.Spec = o.Spec
	metav1.ResetObjectMetaForStatus(&n.ObjectMeta, &o.ObjectMeta)
	if errs := validation.ValidateResourceClaimStatusUpdate(n, o); len(errs) > 0 {
		return errs.ToAggregate()
	}
	return nil
}

// reserve: kube-scheduler's PreBind for a claim that is allocated already (dynamicresources.go
// bindClaim, k8s.io/kubernetes v1.36.3: allocation == nil in its state, so only these lines
// run before UpdateStatus).
func reserve(claim *resourceapi.ResourceClaim, p pod, fts plfeature.Features) (*resourceapi.ResourceClaim, error) {
	claim = claim.DeepCopy()
	binding := resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: types.UID(p.UID)}
	claim.Status.ReservedFor = append(claim.Status.ReservedFor, binding)
	if fts.EnableDRADeviceBindingConditions && fts.EnableDRAResourceClaimDeviceStatus {
		if claim.Status.Allocation == nil {
			return nil, fmt.Errorf("claim %s got deallocated elsewhere in the meantime", claim.Name)
		}
		if claim.Status.Allocation.AllocationTimestamp == nil {
			claim.Status.Allocation.AllocationTimestamp = &metav1.Time{Time: time.Now()}
		}
	}
	return claim, nil
}

// upstream: what the scheduler's allocator writes for the devices of ours: slices reduced to
// those devices (order kept), the scheduler's feature set.
func upstream(tc *testCase, claim *resourceapi.ResourceClaim, ours *resourceapi.AllocationResult, fts plfeature.Features) (*resourceapi.AllocationResult, error) {
	var keep map[string]bool // nil: every device
	if ours != nil {
		keep = map[string]bool{}
		for _, r := range ours.Devices.Results {
			keep[r.Driver+"/"+r.Pool+"/"+r.Device] = true
		}
	}
	var slices []*resourceapi.ResourceSlice
	for _, s := range tc.Slices {
		s = s.DeepCopy()
		var devs []resourceapi.Device
		for _, d := range s.Spec.Devices {
			if keep == nil || keep[s.Spec.Driver+"/"+s.Spec.Pool.Name+"/"+d.Name] {
				devs = append(devs, d)
			}
		}
		s.Spec.Devices = devs
		slices = append(slices, s)
	}
	if ours != nil {
		// the same firstAvailable choice: with only our devices left, an earlier subrequest
		// (allocationMode All, a constraint) may fit where it did not on the whole node, so
		// the subrequests before the one we chose are left out (names and classes unchanged)
		claim = claim.DeepCopy()
		for i := range claim.Spec.Devices.Requests {
			r := &claim.Spec.Devices.Requests[i]
			for k, sub := range r.FirstAvailable {
				chosen := r.Name + "/" + sub.Name
				used := false
				for _, res := range ours.Devices.Results {
					used = used || res.Request == chosen
				}
				if used {
					r.FirstAvailable = r.FirstAvailable[k:]
					break
				}
			}
		}
	}
	af := dynamicresources.AllocatorFeatures(fts)
	cache := cel.NewCache(100, cel.Features{EnableConsumableCapacity: fts.EnableDRAConsumableCapacity})
	alloc, err := structured.NewAllocator(context.Background(), af, structured.AllocatedState{}, classLister(tc.Classes), slices, cache)
	if err != nil {
		return nil, err
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: tc.Node}}
	res, err := alloc.Allocate(context.Background(), node, []*resourceapi.ResourceClaim{claim})
	if err != nil {
		return nil, err
	}
	if len(res) != 1 {
		return nil, fmt.Errorf("the upstream allocator does not place the claim on trainsched's devices")
	}
	return &res[0], nil
}

func main() {
	tool := flag.String("claimstatus", "", "trainsched's claimstatus binary (built by CMake)")
	n := flag.Int("n", 500, "generated cases")
	seed := flag.Int64("seed", 1, "random seed")
	verbose := flag.Bool("v", false, "print every case")
	flag.Parse()
	if *tool == "" {
		fmt.Fprintln(os.Stderr, "claimdiff: -claimstatus is required")
		os.Exit(2)
	}
	fts := plfeature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	if !utilfeature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation) {
		fmt.Fprintln(os.Stderr, "claimdiff: DynamicResourceAllocation is off by default?")
		os.Exit(2)
	}
	rng := rand.New(rand.NewSource(*seed))
	var cases []*testCase
	refused := 0
	for len(cases) < *n {
		tc := generate(rng)
		c, err := stored(tc.Claim)
		if err != nil {
			refused++
			if refused > 20*(*n) {
				fmt.Fprintf(os.Stderr, "claimdiff: the generator makes invalid claims: %v\n", err)
				os.Exit(2)
			}
			continue
		}
		tc.Claim = c
		cases = append(cases, tc)
	}
	in, err := json.Marshal(cases)
	if err != nil {
		panic(err)
	}
	cmd := exec.Command(*tool)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "claimdiff: %s: %v\n", *tool, err)
		os.Exit(2)
	}
	var got []written
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cases) {
		fmt.Fprintf(os.Stderr, "claimdiff: %s answered %d cases for %d (%v)\n", *tool, len(got), len(cases), err)
		os.Exit(2)
	}
	failed, placed := 0, 0
	shapes := map[string]int{}
	for i, tc := range cases {
		fail := func(format string, a ...any) {
			failed++
			if failed <= 10 {
				c, _ := json.MarshalIndent(tc.Claim.Spec, "", "  ")
				fmt.Printf("DIFF case %d: %s\nclaim spec: %s\nwritten: %s\n\n", i, fmt.Sprintf(format, a...), c, got[i].Claim)
			}
		}
		if got[i].Error != "" {
			// trainsched's allocator finds no devices: the upstream one must not find any
			// either on the whole node (the search is complete on both sides)
			if res, err := upstream(tc, tc.Claim, nil, fts); err == nil && res != nil {
				fail("trainsched found no devices (%s), the upstream allocator did", got[i].Error)
			} else if *verbose {
				fmt.Printf("case %d: no fit: %s\n", i, got[i].Error)
			}
			continue
		}
		placed++
		ours := &resourceapi.ResourceClaim{}
		if strictErrs, err := sigsjson.UnmarshalStrict(got[i].Claim, ours); err != nil || len(strictErrs) > 0 {
			fail("the written claim does not decode strictly: %v %v", err, strictErrs)
			continue
		}
		if ours.Status.Allocation == nil {
			fail("no status.allocation")
			continue
		}
		for _, k := range shapeOf(tc.Claim, ours.Status.Allocation) {
			shapes[k]++
		}
		exp, err := upstream(tc, tc.Claim, ours.Status.Allocation, fts)
		if err != nil {
			fail("upstream allocator on trainsched's devices: %v", err)
			continue
		}
		exp.AllocationTimestamp = ours.Status.Allocation.AllocationTimestamp
		if !apiequality.Semantic.DeepEqual(exp, ours.Status.Allocation) {
			fail("status.allocation differs from kube-scheduler's (-scheduler +trainsched):\n%s", cmp.Diff(exp, ours.Status.Allocation))
			continue
		}
		if err := statusUpdate(ours, tc.Claim); err != nil {
			fail("the API server refuses trainsched's write: %v", err)
			continue
		}
		next, err := reserve(ours, pod{Name: tc.Pod.Name + "-2", UID: tc.Pod.UID + "-2"}, fts)
		if err == nil {
			err = statusUpdate(next, ours)
		}
		if err != nil {
			fail("the API server refuses kube-scheduler's reservation after trainsched's write: %v", err)
			continue
		}
		if *verbose {
			fmt.Printf("case %d: same\n", i)
		}
	}
	var keys []string
	for k := range shapes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, " %s=%d", k, shapes[k])
	}
	fmt.Printf("claimdiff: %d cases (%d placed by trainsched), %d differ; generated claims the API server refused: %d\nshapes:%s\n",
		len(cases), placed, failed, refused, sb.String())
	if failed > 0 {
		os.Exit(1)
	}
}

// shapeOf names what a case covers, for the summary.
func shapeOf(c *resourceapi.ResourceClaim, a *resourceapi.AllocationResult) []string {
	var s []string
	for _, r := range c.Spec.Devices.Requests {
		if len(r.FirstAvailable) > 0 {
			s = append(s, "firstAvailable")
		} else if r.Exactly != nil {
			if r.Exactly.AllocationMode == resourceapi.DeviceAllocationModeAll {
				s = append(s, "all")
			}
			if r.Exactly.AdminAccess != nil && *r.Exactly.AdminAccess {
				s = append(s, "adminAccess")
			}
		}
	}
	for _, r := range a.Devices.Results {
		if len(r.Tolerations) > 0 {
			s = append(s, "tolerations")
			break
		}
	}
	if len(c.Spec.Devices.Constraints) > 0 {
		s = append(s, "matchAttribute")
	}
	for _, cfg := range a.Devices.Config {
		s = append(s, "config:"+string(cfg.Source))
	}
	if a.NodeSelector == nil {
		s = append(s, "allNodes")
	} else {
		s = append(s, "nodeLocal")
	}
	if len(c.Spec.Devices.Requests) > 1 {
		s = append(s, "multiRequest")
	}
	return dedup(s)
}

func dedup(s []string) []string {
	sort.Strings(s)
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
