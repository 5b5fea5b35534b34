package main

import (
	"fmt"
	"math/rand"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const (
	gpuDriver = "gpu.example.com"
	nicDriver = "nic.example.com"
)

var caseNo int

// generate: one case of random shape within what trainsched's DRA core supports (node-local
// and allNodes slices, exactly/firstAvailable, All, adminAccess, tolerations, matchAttribute,
// class and claim configs).
func generate(rng *rand.Rand) *testCase {
	caseNo++
	tc := &testCase{Node: "n1", Pod: pod{Name: fmt.Sprintf("w-%d", caseNo), UID: fmt.Sprintf("00000000-0000-0000-0000-%012d", caseNo)}, Time: 1796000000 + int64(caseNo)}
	models := []string{"H100", "A100"}
	gpus := func(prefix string, n int) []resourceapi.Device {
		var d []resourceapi.Device
		for i := 0; i < n; i++ {
			m := models[rng.Intn(2)]
			mem := "80Gi"
			if m == "A100" && rng.Intn(2) == 0 {
				mem = "40Gi"
			}
			d = append(d, resourceapi.Device{
				Name: fmt.Sprintf("%s-%d", prefix, i),
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					"model": {StringValue: ptr.To(m)},
					"index": {IntValue: ptr.To(int64(i))},
				},
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
					"memory": {Value: resource.MustParse(mem)},
				},
			})
		}
		return d
	}
	slice := func(name, driver, pool, node string, devs []resourceapi.Device) *resourceapi.ResourceSlice {
		s := &resourceapi.ResourceSlice{
			TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceSlice"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourceapi.ResourceSliceSpec{
				Driver:  driver,
				Pool:    resourceapi.ResourcePool{Name: pool, Generation: 1, ResourceSliceCount: 1},
				Devices: devs,
			},
		}
		if node == "" {
			s.Spec.AllNodes = ptr.To(true)
		} else {
			s.Spec.NodeName = ptr.To(node)
		}
		return s
	}
	tc.Slices = append(tc.Slices, slice("n1-gpus", gpuDriver, "n1", "n1", gpus("gpu", 2+rng.Intn(7))))
	tc.Slices = append(tc.Slices, slice("n2-gpus", gpuDriver, "n2", "n2", gpus("gpu", 8)))
	if rng.Intn(3) == 0 {
		var nics []resourceapi.Device
		for i := 0; i < 2+rng.Intn(3); i++ {
			nics = append(nics, resourceapi.Device{Name: fmt.Sprintf("nic-%d", i), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"pcieRoot": {StringValue: ptr.To(fmt.Sprintf("pci-%d", i%2))},
			}})
		}
		tc.Slices = append(tc.Slices, slice("n1-nics", nicDriver, "n1-nic", "n1", nics))
	}
	if rng.Intn(3) == 0 {
		tc.Slices = append(tc.Slices, slice("shared-gpus", gpuDriver, []string{"a-shared", "shared"}[rng.Intn(2)], "", gpus("sgpu", 1+rng.Intn(4))))
	}

	opaque := func(driver string) resourceapi.DeviceConfiguration {
		return resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
			Driver:     driver,
			Parameters: runtime.RawExtension{Raw: []byte(fmt.Sprintf(`{"kind":"Config","sharing":"s%d"}`, rng.Intn(100)))},
		}}
	}
	class := func(name, driver string, sels ...string) *resourceapi.DeviceClass {
		c := &resourceapi.DeviceClass{
			TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "DeviceClass"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
		}
		for _, s := range sels {
			c.Spec.Selectors = append(c.Spec.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: s}})
		}
		for i := rng.Intn(3); i > 0; i-- {
			c.Spec.Config = append(c.Spec.Config, resourceapi.DeviceClassConfiguration{DeviceConfiguration: opaque(driver)})
		}
		return c
	}
	tc.Classes = []*resourceapi.DeviceClass{
		class("gpu.example.com", gpuDriver, "device.driver == 'gpu.example.com'"),
		class("gpu-h100.example.com", gpuDriver, "device.driver == 'gpu.example.com'", "device.attributes['gpu.example.com'].model == 'H100'"),
		class("nic.example.com", nicDriver, "device.driver == 'nic.example.com'"),
	}
	classNames := []string{"gpu.example.com", "gpu.example.com", "gpu-h100.example.com", "nic.example.com"}
	selectors := []string{
		"device.capacity['gpu.example.com'].memory.compareTo(quantity('80Gi')) >= 0",
		"device.attributes['gpu.example.com'].model in ['H100', 'A100']",
		"device.attributes['gpu.example.com'].index >= 1",
	}
	tolerations := func() []resourceapi.DeviceToleration {
		if rng.Intn(4) != 0 {
			return nil
		}
		t := []resourceapi.DeviceToleration{{Key: "gpu.example.com/unhealthy", Operator: resourceapi.DeviceTolerationOpExists, Effect: resourceapi.DeviceTaintEffectNoSchedule}}
		if rng.Intn(2) == 0 {
			t = append(t, resourceapi.DeviceToleration{Key: "gpu.example.com/maintenance", Operator: resourceapi.DeviceTolerationOpEqual, Value: "planned", Effect: resourceapi.DeviceTaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))})
		}
		return t
	}
	exact := func(cls string) resourceapi.ExactDeviceRequest {
		e := resourceapi.ExactDeviceRequest{DeviceClassName: cls, Tolerations: tolerations()}
		if rng.Intn(10) == 0 {
			e.AllocationMode = resourceapi.DeviceAllocationModeAll
		} else {
			e.AllocationMode = resourceapi.DeviceAllocationModeExactCount
			e.Count = int64(1 + rng.Intn(3))
		}
		if cls != "nic.example.com" && rng.Intn(4) == 0 {
			e.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: selectors[rng.Intn(len(selectors))]}}}
		}
		return e
	}

	claim := &resourceapi.ResourceClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaim"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: fmt.Sprintf("c-%d", caseNo), UID: types.UID(fmt.Sprintf("11111111-0000-0000-0000-%012d", caseNo)), ResourceVersion: "1"},
	}
	var names []string
	for r := 0; r < 1+rng.Intn(3); r++ {
		req := resourceapi.DeviceRequest{Name: fmt.Sprintf("r%d", r)}
		if rng.Intn(10) < 7 {
			e := exact(classNames[rng.Intn(len(classNames))])
			if rng.Intn(8) == 0 {
				e.AdminAccess = ptr.To(true)
			}
			req.Exactly = &e
			names = append(names, req.Name)
		} else {
			for s := 0; s < 2+rng.Intn(2); s++ {
				e := exact(classNames[rng.Intn(len(classNames))])
				req.FirstAvailable = append(req.FirstAvailable, resourceapi.DeviceSubRequest{
					Name: fmt.Sprintf("s%d", s), DeviceClassName: e.DeviceClassName, Selectors: e.Selectors,
					AllocationMode: e.AllocationMode, Count: e.Count, Tolerations: e.Tolerations,
				})
				names = append(names, req.Name+"/"+fmt.Sprintf("s%d", s))
			}
			names = append(names, req.Name)
		}
		claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, req)
	}
	if rng.Intn(5) == 0 {
		c := resourceapi.DeviceConstraint{MatchAttribute: ptr.To(resourceapi.FullyQualifiedName("gpu.example.com/model"))}
		if rng.Intn(2) == 0 {
			c.Requests = []string{claim.Spec.Devices.Requests[0].Name}
		}
		claim.Spec.Devices.Constraints = append(claim.Spec.Devices.Constraints, c)
	}
	for i := rng.Intn(3); i > 0; i-- {
		cfg := resourceapi.DeviceClaimConfiguration{DeviceConfiguration: opaque(gpuDriver)}
		for k := rng.Intn(3); k > 0; k-- {
			n := names[rng.Intn(len(names))]
			dup := false
			for _, have := range cfg.Requests {
				dup = dup || have == n
			}
			if !dup {
				cfg.Requests = append(cfg.Requests, n)
			}
		}
		claim.Spec.Devices.Config = append(claim.Spec.Devices.Config, cfg)
	}
	tc.Claim = claim
	return tc
}
