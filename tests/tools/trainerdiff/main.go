// Command trainerdiff compares `trainsched render` with Kubeflow Trainer v2.3.0's own runtime
// framework (its NewObjects, with the fake client its unit tests use) for the same TrainJobs
// and runtimes, after the API server's structural defaulting from the CRDs.
//
//	go run . -trainsched ../../../build/trainsched -repo ../../.. [case dirs or input files...]
//
// With no arguments it takes every tests/fixtures/render case without existing.yaml. For each
// TrainJob it compares admission first (validate.go: Trainer's webhook against render's
// errors), then, when both admit it, prints "same" or the paths where the objects differ;
// then a summary. Test tooling only: nothing here is built into trainsched.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configapi "github.com/kubeflow/trainer/v2/pkg/apis/config/v1alpha1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/features"
	"github.com/kubeflow/trainer/v2/pkg/runtime"
	"github.com/kubeflow/trainer/v2/pkg/runtime/core"
	testingutil "github.com/kubeflow/trainer/v2/pkg/util/testing"
)

var (
	binary   = flag.String("trainsched", "build/trainsched", "the trainsched binary")
	repo     = flag.String("repo", ".", "the trainsched repository (CRDs, built-in runtimes, fixtures)")
	show     = flag.Int("show", 8, "differences printed per TrainJob")
	random   = flag.Int("random", 0, "also compare this many generated TrainJobs (random.go)")
	fluxOnly = flag.Bool("flux", false, "make every generated TrainJob a Flux one (flux.go)")
	seed     = flag.Int64("seed", 1, "seed of the generated TrainJobs")
	// Trainer's alpha TrainJobStatus gate on both sides: Trainer with its feature gate and a
	// webhook certificate Secret holding the CA, trainsched with render --trainjob-status
	trainJobStatus = flag.Bool("trainjob-status", false,
		"compare with the TrainJobStatus feature on (render --trainjob-status)")
)

// The TrainJobStatus mode's settings: Trainer's status server Service is the webhook Service in
// the operator namespace (kubeflow-system outside a pod) on port 10443.
const (
	statusService = "trainsched-controller"
	statusSecret  = "trainsched-webhook-certs"
	statusURL     = "https://trainsched-controller.kubeflow-system.svc:10443"
)

// statusCA is the CA both sides put into <name>-tls-config: a fixture certificate.
func statusCA() (file string, pem []byte) {
	file = filepath.Join(*repo, "tests/fixtures/render",
		"trainjob-status-gives-every-trainer-container-the-status-server-url-ca-and-token", "ca.crt")
	pem, err := os.ReadFile(file)
	must(err)
	return file, pem
}

// statusConfig turns the gate on and returns the Configuration and the Secret Trainer's plugin
// reads; both nil when the mode is off.
func statusConfig() (*configapi.Configuration, *corev1.Secret) {
	if !*trainJobStatus {
		return nil, nil
	}
	must(features.SetEnable(features.TrainJobStatus, true))
	_, pem := statusCA()
	port := int32(10443)
	cfg := &configapi.Configuration{
		StatusServer: &configapi.StatusServer{Port: &port},
		CertManagement: &configapi.CertManagement{
			WebhookServiceName: statusService,
			WebhookSecretName:  statusSecret,
		},
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: statusSecret, Namespace: "kubeflow-system"},
		Data:       map[string][]byte{"ca.crt": pem},
	}
	return cfg, secret
}

// structural: the structural schema of the CRD in crdFile (its first version), and the schema
// it is made from
func structural(crdFile string) *structuralschema.Structural {
	s, _ := crdSchema(crdFile)
	return s
}

func crdSchema(crdFile string) (*structuralschema.Structural, *apiextensionsinternal.JSONSchemaProps) {
	raw, err := os.ReadFile(crdFile)
	must(err)
	var crd apiextensionsv1.CustomResourceDefinition
	must(yaml.Unmarshal(raw, &crd))
	var internal apiextensionsinternal.JSONSchemaProps
	must(apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema, &internal, nil))
	s, err := structuralschema.NewStructural(&internal)
	must(err)
	return s, &internal
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "trainerdiff:", err)
		os.Exit(1)
	}
}

func docs(file string) []map[string]any {
	raw, err := os.ReadFile(file)
	must(err)
	var out []map[string]any
	for _, d := range bytes.Split(raw, []byte("\n---")) {
		var m map[string]any
		if yaml.Unmarshal(d, &m) == nil && m != nil {
			if m["kind"] == "List" {
				for _, it := range m["items"].([]any) {
					out = append(out, it.(map[string]any))
				}
				continue
			}
			out = append(out, m)
		}
	}
	return out
}

func convert(in map[string]any, out any) {
	must(decode(in, out))
}

// decode: in into the Go type out, as the API server's decoding of a stored object; an error
// is a type the schema refuses too
func decode(in map[string]any, out any) error {
	raw, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// diff lists the paths where a and b differ.
func diff(p string, a, b any, out *[]string) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: trainer %s, trainsched %s", p, js(a), js(b)))
			return
		}
		keys := map[string]bool{}
		for k := range av {
			keys[k] = true
		}
		for k := range bv {
			keys[k] = true
		}
		ks := make([]string, 0, len(keys))
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			diff(p+"."+k, av[k], bv[k], out)
		}
	case []any:
		bv, ok := b.([]any)
		// the lists several plugins upsert into, in Go map order: env (xgboost, PlainML, and
		// TrainJobStatus with any ML policy), volumes and volumeMounts (TrainJobStatus with MPI
		// or Flux)
		orderFree := strings.HasSuffix(p, ".env") ||
			(*trainJobStatus && (strings.HasSuffix(p, ".volumes") || strings.HasSuffix(p, ".volumeMounts")))
		if ok && len(av) == len(bv) && orderFree && !reflect.DeepEqual(a, b) &&
			sameItems(av, bv) {
			*out = append(*out, p+": same items, another order")
			return
		}
		if !ok || len(av) != len(bv) {
			*out = append(*out, fmt.Sprintf("%s: trainer %s, trainsched %s", p, js(a), js(b)))
			return
		}
		for i := range av {
			diff(fmt.Sprintf("%s[%d]", p, i), av[i], bv[i], out)
		}
	default:
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, fmt.Sprintf("%s: trainer %s, trainsched %s", p, js(a), js(b)))
		}
	}
}

func js(v any) string {
	if v == nil {
		return "(absent)"
	}
	raw, _ := json.Marshal(v)
	s := string(raw)
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}

func key(o map[string]any) string {
	m, _ := o["metadata"].(map[string]any)
	return fmt.Sprintf("%v/%v", o["kind"], m["name"])
}

func main() {
	flag.Parse()
	// Trainer's webhooks log through controller-runtime: quiet, as its unit tests run them
	ctrllog.SetLogger(logr.Discard())
	rtSchema := structural(filepath.Join(*repo, "manifests/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml"))
	tjSchema := structural(filepath.Join(*repo, "manifests/crds/trainer.kubeflow.org_trainjobs.yaml"))
	tjCRD := newCRDCheck(filepath.Join(*repo, "manifests/crds/trainer.kubeflow.org_trainjobs.yaml"))
	rtCRDs := map[string]*crdCheck{
		"TrainingRuntime": newCRDCheck(filepath.Join(*repo,
			"manifests/crds/trainer.kubeflow.org_trainingruntimes.yaml")),
		"ClusterTrainingRuntime": newCRDCheck(filepath.Join(*repo,
			"manifests/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml")),
	}
	total, same, almost, skipped, refusedOK, refusedDiff := 0, 0, 0, 0, 0, 0
	classes := map[string]int{}
	verdicts := map[string]int{}
	tally := func(v *outcome) {
		if v.diff {
			refusedDiff++
			classes[v.class]++
		} else {
			refusedOK++
			verdicts[v.class]++
		}
	}
	inputs := flag.Args()
	if len(inputs) == 0 {
		// the refused cases too: admission is compared (validate.go)
		cases, _ := filepath.Glob(filepath.Join(*repo, "tests/fixtures/render/*"))
		for _, c := range cases {
			if _, err := os.Stat(filepath.Join(c, "existing.yaml")); err == nil {
				continue
			}
			if _, err := os.Stat(filepath.Join(c, "input.yaml")); err != nil {
				continue
			}
			inputs = append(inputs, c)
		}
		ex, _ := filepath.Glob(filepath.Join(*repo, "examples/*.yaml"))
		inputs = append(inputs, ex...)
	}
	if *random > 0 {
		dir, err := os.MkdirTemp("", "trainerdiff")
		must(err)
		if os.Getenv("TRAINERDIFF_KEEP") == "" {
			defer os.RemoveAll(dir)
		} else {
			fmt.Println("generated cases kept in", dir)
		}
		inputs = append(inputs, randomInputs(*repo, dir, *random, *seed)...)
	}
	for _, in := range inputs {
		file := in
		if st, err := os.Stat(in); err == nil && st.IsDir() {
			file = filepath.Join(in, "input.yaml")
		}
		all := docs(file)
		var trainjobs, runtimes []map[string]any
		for _, d := range all {
			switch d["kind"] {
			case "TrainJob":
				trainjobs = append(trainjobs, d)
			case "TrainingRuntime", "ClusterTrainingRuntime":
				runtimes = append(runtimes, d)
			}
		}
		args := []string{"render", "-f", file, "-o", "json"}
		if *trainJobStatus {
			caFile, _ := statusCA()
			args = append(args, "--trainjob-status", "--trainjob-status-url", statusURL,
				"--trainjob-status-ca-file", caFile)
		}
		cmd := exec.Command(*binary, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		outRaw, err := cmd.Output()
		if _, exit := err.(*exec.ExitError); err != nil && !exit {
			fmt.Printf("%s: trainsched render failed: %v\n", file, err)
			continue
		}
		var list struct{ Items []map[string]any }
		if len(bytes.TrimSpace(outRaw)) > 0 {
			must(json.Unmarshal(outRaw, &list))
		}
		ours := map[string]map[string]any{}
		for _, o := range list.Items {
			ours[key(o)] = o
		}
		for _, tjm := range trainjobs {
			total++
			structuraldefaulting.Default(tjm, tjSchema)
			meta, _ := tjm["metadata"].(map[string]any)
			tjName, _ := meta["name"].(string)
			tjNs, _ := meta["namespace"].(string)
			if tjNs == "" {
				tjNs = "default"
			}
			ourErrs := ourErrors(stderr.String(), tjNs, tjName, len(trainjobs))
			var tj trainer.TrainJob
			apiErrs := tjCRD.errors(tjm)
			if err := decode(tjm, &tj); err != nil {
				apiErrs = append(apiErrs, "decoding the TrainJob: "+err.Error())
			}
			if len(apiErrs) > 0 {
				tally(refusedBy(file, tjName, "the API server (TrainJob CRD schema and CEL)",
					apiErrs, ourErrs, false))
				continue
			}
			if tj.Spec.ManagedBy != nil && *tj.Spec.ManagedBy != "trainer.kubeflow.org/trainjob-controller" {
				// Trainer's reconciler builds nothing for a TrainJob another controller manages
				total--
				skipped++
				continue
			}
			if tj.Namespace == "" {
				tj.Namespace = "default"
			}
			if tj.UID == "" {
				tj.UID = "uid"
			}
			ref := tj.Spec.RuntimeRef
			kind := "ClusterTrainingRuntime"
			if ref.Kind != nil {
				kind = *ref.Kind
			}
			var rtm map[string]any
			for _, r := range runtimes {
				if m, _ := r["metadata"].(map[string]any); m["name"] == ref.Name && r["kind"] == kind {
					rtm = r
				}
			}
			builtin := filepath.Join(*repo, "manifests/runtimes", ref.Name+".yaml")
			if _, err := os.Stat(builtin); err == nil && rtm == nil && kind == "ClusterTrainingRuntime" {
				if b := docs(builtin); len(b) > 0 {
					rtm = b[0]
				}
			}
			if rtm == nil {
				tally(refusedBy(file, tjName, "Trainer's webhook (runtime "+ref.Name+" not found)",
					[]string{"spec.runtimeRef: runtime " + ref.Name + " not found"}, ourErrs, false))
				continue
			}
			if m, _ := rtm["metadata"].(map[string]any); m != nil {
				if a, _ := m["annotations"].(map[string]any); a["trainsched.io/backend"] != nil &&
					a["trainsched.io/backend"] != "coscheduling" {
					// a trainsched backend Trainer does not have (native, kai, kueue, slurm,
					// trainsched's volcano, none): nothing to compare
					total--
					skipped++
					continue
				}
			}
			rtm = deepCopy(rtm)
			structuraldefaulting.Default(rtm, rtSchema)
			if crd := rtCRDs[kind]; crd != nil {
				if errs := crd.errors(rtm); len(errs) > 0 {
					tally(refusedBy(file, tjName, "the API server ("+kind+" CRD schema and CEL)",
						errs, ourErrs, false))
					continue
				}
			}
			cb := testingutil.NewClientBuilder()
			var obj client.Object
			var rt runtime.Runtime
			ctx := context.Background()
			if kind == "TrainingRuntime" {
				var r trainer.TrainingRuntime
				convert(rtm, &r)
				if r.Namespace == "" {
					r.Namespace = tj.Namespace
				}
				obj = &r
			} else {
				var r trainer.ClusterTrainingRuntime
				convert(rtm, &r)
				obj = &r
			}
			// Trainer's runtime webhook admitted the runtime before any TrainJob names it
			if errs := runtimeWebhookErrors(obj, obj.GetLabels()); len(errs) > 0 {
				tally(refusedBy(file, tjName, "Trainer's "+kind+" webhook", errs, ourErrs, true))
				continue
			}
			cb.WithObjects(obj)
			cfg, caSecret := statusConfig()
			if caSecret != nil {
				cb.WithObjects(caSecret)
			}
			c := cb.Build()
			if kind == "TrainingRuntime" {
				rt, err = core.NewTrainingRuntime(ctx, c, testingutil.AsIndex(cb), cfg)
			} else {
				_, err = core.NewTrainingRuntime(ctx, c, testingutil.AsIndex(cb), cfg)
				if err == nil {
					rt, err = core.NewClusterTrainingRuntime(ctx, c, testingutil.AsIndex(cb), cfg)
				}
			}
			must(err)
			// admission first: Trainer's TrainJob webhook (ValidateObjects) against the
			// errors trainsched render prints for this TrainJob (validate.go)
			_, verrs := rt.ValidateObjects(ctx, nil, &tj)
			var objs []any
			var buildErr error
			if len(verrs) == 0 {
				// Trainer's controller may panic on what its webhook admits (Flux without
				// numNodes): a failure to build, as its reconciler's recover makes it
				func() {
					defer func() {
						if p := recover(); p != nil {
							buildErr = fmt.Errorf("panic: %v", p)
						}
					}()
					applied, err := rt.NewObjects(ctx, &tj)
					buildErr = err
					for _, o := range applied {
						objs = append(objs, o)
					}
				}()
			}
			if v := verdict(file, tj.Name, verrs, buildErr, ourErrs); v != nil {
				tally(v)
				continue
			}
			var diffs []string
			for _, o := range objs {
				var m map[string]any
				raw, _ := json.Marshal(o)
				must(json.Unmarshal(raw, &m))
				fluxNormalize(m)
				if m["kind"] == "Secret" && !strings.HasSuffix(key(m), "-flux-curve") {
					delete(m, "data")
				}
				k := key(m)
				ourObj := deepCopy(ours[k])
				if ourObj == nil {
					diffs = append(diffs, k+": only Trainer writes it")
					continue
				}
				fluxNormalize(ourObj)
				if ourObj["kind"] == "Secret" && !strings.HasSuffix(k, "-flux-curve") {
					delete(ourObj, "data")
				}
				// the TrainJob's uid: ours is a placeholder when the input has none
				fixOwner(ourObj, string(tj.UID))
				diff(k, m, ourObj, &diffs)
			}
			if len(diffs) == 0 {
				same++
				fmt.Printf("same  %s %s\n", file, tj.Name)
				continue
			}
			if allAccepted(diffs) {
				almost++
				fmt.Printf("same* %s %s (apart from %d Go empty objects or documented differences)\n",
					file, tj.Name, len(diffs))
				continue
			}
			fmt.Printf("DIFF  %s %s (%d)\n", file, tj.Name, len(diffs))
			for i, d := range diffs {
				cls := d
				if j := strings.Index(d, ": trainer"); j > 0 {
					cls = d[strings.Index(d, ":")+1:]
				}
				classes[strings.SplitN(cls, ",", 2)[0]]++
				if i < *show {
					fmt.Println("      ", d)
				}
			}
		}
	}
	built := total - refusedOK - refusedDiff
	fmt.Printf("\n%d TrainJobs (%d more skipped: managed by another controller, or on a "+
		"trainsched backend Trainer does not have).\n"+
		"Refused by at least one side: %d, %d of them as docs/compatibility.md describes, %d differ.\n"+
		"Built by both: %d, %d identical, %d identical apart from Go's empty {} objects and the "+
		"differences docs/compatibility.md lists, %d differ\n",
		total, skipped, refusedOK+refusedDiff, refusedOK, refusedDiff, built, same, almost,
		built-same-almost)
	printVerdicts(verdicts)
	type kv struct {
		k string
		n int
	}
	var cl []kv
	for k, n := range classes {
		cl = append(cl, kv{k, n})
	}
	sort.Slice(cl, func(i, j int) bool { return cl[i].n > cl[j].n })
	for i, c := range cl {
		if i >= 15 {
			break
		}
		fmt.Printf("%5d %s\n", c.n, c.k)
	}
}

func deepCopy(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	raw, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}

func fixOwner(o map[string]any, uid string) {
	m, _ := o["metadata"].(map[string]any)
	refs, _ := m["ownerReferences"].([]any)
	for _, r := range refs {
		if rm, ok := r.(map[string]any); ok {
			rm["uid"] = uid
		}
	}
}

// allAccepted: every difference is an empty object Go writes and we leave out ("{}" vs
// absent, no meaning to the API server), or an intentional difference (docs/compatibility.md).
func allAccepted(diffs []string) bool {
	for _, d := range diffs {
		if strings.HasSuffix(d, ": trainer {}, trainsched (absent)") ||
			strings.Contains(d, `trainsched {"trainsched.io/phased-replicated-jobs"`) ||
			// gang marks and topology annotations of coscheduling gangs (docs/compatibility.md)
			gangMark(d) || topologyAnnotations(d) ||
			// Volcano gangs' pods go to the volcano scheduler (docs/compatibility.md, "Volcano
			// pods' spec.schedulerName")
			strings.HasSuffix(d, `.schedulerName: trainer (absent), trainsched "volcano"`) ||
			// Trainer's plugin order (xgboost, PlainML) is Go map order: it varies per run
			strings.HasSuffix(d, ".env: same items, another order") ||
			// the same with the TrainJobStatus plugin beside MPI or Flux
			strings.HasSuffix(d, ".volumes: same items, another order") ||
			strings.HasSuffix(d, ".volumeMounts: same items, another order") ||
			// Trainer's port upsert takes two unnamed ports for the same one and drops the
			// runtime's; trainsched keeps it
			extraRuntimePorts(d) {
			continue
		}
		return false
	}
	return true
}

func sameItems(a, b []any) bool {
	key := func(l []any) []string {
		out := make([]string, len(l))
		for i, v := range l {
			raw, _ := json.Marshal(v)
			out[i] = string(raw)
		}
		sort.Strings(out)
		return out
	}
	return reflect.DeepEqual(key(a), key(b))
}

// extraRuntimePorts: a ports difference where trainsched's list is Trainer's with the
// runtime's own unnamed ports before it (Trainer's upsert replaced them)
func extraRuntimePorts(d string) bool {
	i := strings.Index(d, ".ports: trainer [")
	j := strings.Index(d, "], trainsched [")
	if i < 0 || j < i {
		return false
	}
	t := d[i+len(".ports: trainer [") : j]
	return strings.HasSuffix(d, ","+t+"]")
}

// gangMark: a difference that is only trainsched's gang marks in a pod template (the label
// trainsched.io/gang-marked, the resource trainsched.io/gang in the first container's requests
// and limits)
func gangMark(d string) bool {
	return strings.HasSuffix(d, `.labels.trainsched.io/gang-marked: trainer (absent), trainsched "true"`) ||
		strings.HasSuffix(d, `.trainsched.io/gang: trainer (absent), trainsched "1"`) ||
		strings.HasSuffix(d, `: trainer (absent), trainsched {"trainsched.io/gang":"1"}`)
}

// topologyAnnotations: PodGroup annotations trainsched adds (the phased replicated jobs and the
// topology request the extender reads), none of Trainer's
func topologyAnnotations(d string) bool {
	i := strings.Index(d, "PodGroup/")
	j := strings.Index(d, ".metadata.annotations: trainer (absent), trainsched {")
	if i != 0 || j < 0 {
		return false
	}
	var m map[string]string
	if json.Unmarshal([]byte(d[j+len(".metadata.annotations: trainer (absent), trainsched "):]), &m) != nil {
		return false
	}
	for k := range m {
		if !strings.HasPrefix(k, "trainsched.io/") && !strings.Contains(k, "topology") {
			return false
		}
	}
	return true
}
