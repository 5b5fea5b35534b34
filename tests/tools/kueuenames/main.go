// Command kueuenames writes Workload-name test vectors computed by Kueue's own function
// (sigs.k8s.io/kueue v0.17.0, pkg/controller/jobframework GetWorkloadNameForOwnerWithGVK),
// for generated owner names, UIDs and kinds, with the ShortWorkloadNames gate off and on:
//
//	go run . -n 2000 -seed 1 > ../../fixtures/kueue/workload-names.tsv
//
// Each line: short(0|1) TAB kind TAB group TAB name TAB uid TAB workload-name. The unit test
// tests/unit/test_kueue.c checks integrations/kueue.c's kueue_workload_name against every line.
// Test tooling only: nothing here is built into trainsched.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"sigs.k8s.io/kueue/pkg/controller/jobframework"
)

var kinds = []schema.GroupVersionKind{
	{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "TrainJob"},
	{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"},
	{Group: "batch", Version: "v1", Kind: "Job"},
	{Group: "ray.io", Version: "v1", Kind: "RayJob"},
	{Group: "", Version: "v1", Kind: "Pod"},
}

const dns = "abcdefghijklmnopqrstuvwxyz0123456789"

// name: a DNS-1123 subdomain of 1..253 characters, lengths biased to the truncation edges
func name(r *rand.Rand) string {
	var n int
	switch r.Intn(4) {
	case 0:
		n = 1 + r.Intn(20)
	case 1:
		n = 40 + r.Intn(30) // around the 63 limit of short names
	case 2:
		n = 230 + r.Intn(24) // around the 253 limit
	default:
		n = 1 + r.Intn(253)
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		c := dns[r.Intn(len(dns))]
		if i > 0 && i < n-1 && r.Intn(8) == 0 {
			c = "-."[r.Intn(2)]
		}
		b.WriteByte(c)
	}
	return b.String()
}

func uid(r *rand.Rand) string {
	if r.Intn(10) == 0 {
		return ""
	}
	b := make([]byte, 16)
	r.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func main() {
	n := flag.Int("n", 2000, "vectors per setting of ShortWorkloadNames")
	seed := flag.Int64("seed", 1, "random seed")
	flag.Parse()
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for _, short := range []bool{false, true} {
		if err := utilfeature.DefaultMutableFeatureGate.Set(fmt.Sprintf("ShortWorkloadNames=%v", short)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		r := rand.New(rand.NewSource(*seed))
		for i := 0; i < *n; i++ {
			gvk := kinds[r.Intn(len(kinds))]
			nm, u := name(r), uid(r)
			s := 0
			if short {
				s = 1
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", s, gvk.Kind, gvk.Group, nm, u,
				jobframework.GetWorkloadNameForOwnerWithGVK(nm, types.UID(u), gvk))
		}
	}
}
