package main

// Flux: trainsched writes its own entrypoint.sh and init.sh (same paths, broker settings, flags
// and resource spec as Trainer's, different text), so the ConfigMap's scripts are compared by
// the values Trainer fills into its templates, and the CURVE certificate by its two keys.

import (
	"encoding/base64"
	"fmt"
	"math/rand"
	"regexp"
	"strings"
)

var fluxFacts = map[string]*regexp.Regexp{
	"resource spec":   regexp.MustCompile(`(--cores=[^>\n]*?) > /tmp/R`),
	"main host":       regexp.MustCompile(`(?:mainHost="|\$\(hostname\)" = ")([^"$]+)"`),
	"flux run flags":  regexp.MustCompile(`(?:flags="|flux run )(-N [^"$]*?)\s*(?:"|\$\{command\})`),
	"broker host":     regexp.MustCompile(`host\s*=\s*"([^"]*)"`),
	"default_bind":    regexp.MustCompile(`default_bind = "([^"]*)"`),
	"default_connect": regexp.MustCompile(`default_connect = "([^"]*)"`),
	"queue-policy":    regexp.MustCompile(`queue-policy = "([^"]*)"`),
	"curve keys":      regexp.MustCompile(`((?:public|secret)-key = "[^"]*")`),
}

// fluxNormalize replaces the data of the Flux ConfigMap and Secret by the facts both sides
// must agree on
func fluxNormalize(o map[string]any) {
	m, _ := o["metadata"].(map[string]any)
	name, _ := m["name"].(string)
	data, _ := o["data"].(map[string]any)
	if data == nil {
		return
	}
	var text string
	switch {
	case o["kind"] == "ConfigMap" && strings.HasSuffix(name, "-flux-entrypoint"):
		for _, k := range []string{"entrypoint.sh", "init.sh"} {
			s, _ := data[k].(string)
			text += s + "\n"
		}
	case o["kind"] == "Secret" && strings.HasSuffix(name, "-flux-curve"):
		s, _ := data["curve.cert"].(string)
		raw, _ := base64.StdEncoding.DecodeString(s)
		text = string(raw)
	default:
		return
	}
	facts := map[string]any{}
	for k, re := range fluxFacts {
		var vals []string
		seen := map[string]bool{}
		for _, sm := range re.FindAllStringSubmatch(text, -1) {
			if !seen[sm[1]] {
				seen[sm[1]] = true
				vals = append(vals, sm[1])
			}
		}
		if len(vals) > 0 {
			facts[k] = strings.Join(vals, " | ")
		}
	}
	o["data"] = facts
}

// fluxCase turns a generated case into a Flux one: the runtime's policy becomes flux with a
// random numProcPerNode, its node container gets a command, maybe args and broker env; the
// TrainJob maybe numProcPerNode, GPUs, a command, args and broker env
func fluxCase(r *rand.Rand, spec, js, trainer map[string]any) {
	spec["mlPolicy"] = map[string]any{"numNodes": 1, "flux": map[string]any{"numProcPerNode": 1 + r.Intn(4)}}
	for _, rj := range js["replicatedJobs"].([]any) {
		pod := rj.(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		for _, c := range pod["containers"].([]any) {
			cm := c.(map[string]any)
			cm["command"] = []any{"lmp", "-in"}
			if r.Intn(2) == 0 {
				cm["args"] = []any{"in.reaxff"}
			}
			if r.Intn(2) == 0 {
				cm["env"] = []any{map[string]any{"name": "FLUX_QUEUE_POLICY", "value": "easy"},
					map[string]any{"name": "FLUX_VIEW_IMAGE", "value": "flux-view:rocky"}}
			}
			if r.Intn(3) == 0 {
				cm["resources"] = map[string]any{"limits": map[string]any{"nvidia.com/gpu": 1 + r.Intn(4)}}
			}
		}
	}
	if r.Intn(2) == 0 {
		trainer["numProcPerNode"] = 1 + r.Intn(8)
	}
	if r.Intn(3) == 0 {
		trainer["resourcesPerNode"] = map[string]any{"limits": map[string]any{"nvidia.com/gpu": 1 + r.Intn(8)}}
	}
	if r.Intn(2) == 0 {
		trainer["command"] = []any{"python3", "train.py"}
	}
	if r.Intn(2) == 0 {
		trainer["args"] = []any{"--epochs", fmt.Sprint(1 + r.Intn(9))}
	}
	if r.Intn(2) == 0 {
		trainer["env"] = []any{map[string]any{"name": "FLUX_NETWORK_DEVICE", "value": "eth1"}}
	}
}
