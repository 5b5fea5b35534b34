package main

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// randomInputs writes n generated cases (a TrainingRuntime derived from a built-in one plus a
// TrainJob) into dir and returns their files. The generator varies what the differences found
// so far were about: node counts, resources written in non-canonical forms, env, runtime
// patches that add list items, gang policies, failure policies and ports; one in five is a
// TorchTune TrainJob (torchtune.go).
func randomInputs(repo, dir string, n int, seed int64) []string {
	r := rand.New(rand.NewSource(seed))
	bases := []string{"torch-distributed", "deepspeed-distributed", "mlx-distributed",
		"jax-distributed", "xgboost-distributed", "torch-distributed-with-cache"}
	cpus := []any{"1000m", "2", 4, "500m", "1.5"}
	mems := []any{"1024Mi", "2Gi", "1536Mi", "512Mi", "1G"}
	var files []string
	for i := 0; i < n; i++ {
		base := bases[r.Intn(len(bases))]
		if *fluxOnly {
			base = "torch-distributed"
		}
		// one case in five a TorchTune one (torchtune.go): Trainer reads the model from the
		// runtime's name, so the runtime keeps the built-in one's
		tune := !*fluxOnly && r.Intn(5) == 0
		if tune {
			base = tuneBases[r.Intn(len(tuneBases))]
		}
		rt := docs(filepath.Join(repo, "manifests/runtimes", base+".yaml"))[0]
		name := fmt.Sprintf("rt-%d", i)
		if tune {
			name = base
		}
		rt["kind"] = "TrainingRuntime"
		rt["metadata"] = map[string]any{"name": name, "namespace": "default"}
		spec := rt["spec"].(map[string]any)
		js := spec["template"].(map[string]any)["spec"].(map[string]any)
		switch r.Intn(3) {
		case 1:
			spec["podGroupPolicy"] = map[string]any{"coscheduling": map[string]any{}}
		case 2:
			spec["podGroupPolicy"] = map[string]any{"volcano": map[string]any{}}
		}
		if r.Intn(2) == 0 {
			js["failurePolicy"] = map[string]any{"maxRestarts": r.Intn(2)}
		}
		for _, rj := range js["replicatedJobs"].([]any) {
			pod := rj.(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			for _, c := range pod["containers"].([]any) {
				cm := c.(map[string]any)
				if r.Intn(3) == 0 {
					cm["ports"] = []any{map[string]any{"containerPort": 8000 + r.Intn(100)}}
				}
				if r.Intn(3) == 0 {
					cm["resources"] = map[string]any{"requests": map[string]any{
						"cpu": cpus[r.Intn(len(cpus))], "memory": mems[r.Intn(len(mems))]}}
				}
				if r.Intn(3) == 0 {
					cm["volumeMounts"] = []any{map[string]any{"name": "data", "mountPath": "/data"}}
					pod["volumes"] = []any{map[string]any{"name": "data", "emptyDir": map[string]any{}}}
				}
			}
		}
		trainer := map[string]any{"numNodes": 1 + r.Intn(4)}
		if r.Intn(2) == 0 {
			trainer["resourcesPerNode"] = map[string]any{"limits": map[string]any{
				"cpu": cpus[r.Intn(len(cpus))], "memory": mems[r.Intn(len(mems))]}}
		}
		if r.Intn(2) == 0 {
			trainer["env"] = []any{map[string]any{"name": "MY_ENV", "value": "x"}}
		}
		if *fluxOnly {
			fluxCase(r, spec, js, trainer)
		}
		if tune {
			tuneCase(r, trainer)
		}
		tjspec := map[string]any{
			"runtimeRef": map[string]any{"name": name, "kind": "TrainingRuntime"},
			"trainer":    trainer,
		}
		if r.Intn(4) == 0 {
			tjspec["suspend"] = true
		}
		if r.Intn(2) == 0 {
			first := js["replicatedJobs"].([]any)[0].(map[string]any)
			tjspec["runtimePatches"] = []any{map[string]any{
				"manager": "test.io/manager",
				"trainingRuntimeSpec": map[string]any{"template": map[string]any{"spec": map[string]any{
					"replicatedJobs": []any{map[string]any{"name": first["name"], "template": map[string]any{
						"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
							"nodeSelector": map[string]any{"pool": "a"},
							"volumes":      []any{map[string]any{"name": "cache", "emptyDir": map[string]any{}}},
							"tolerations":  []any{map[string]any{"key": "k", "operator": "Exists"}},
						}}}}}}}}}}}
		}
		tj := map[string]any{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
			"metadata": map[string]any{"name": fmt.Sprintf("job-%d", i), "namespace": "default",
				"uid": fmt.Sprintf("00000000-0000-0000-0000-%012d", i)},
			"spec": tjspec}
		a, err := yaml.Marshal(rt)
		must(err)
		b, err := yaml.Marshal(tj)
		must(err)
		f := filepath.Join(dir, fmt.Sprintf("case-%03d.yaml", i))
		must(os.WriteFile(f, append(append(a, []byte("---\n")...), b...), 0o644))
		files = append(files, f)
	}
	return files
}
