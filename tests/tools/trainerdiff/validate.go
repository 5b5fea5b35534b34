package main

// Admission: Trainer's TrainJob webhook (its runtime's ValidateObjects, which runs the plugins'
// Validate) and, when the webhook admits the TrainJob, its controller's NewObjects, against the
// errors `trainsched render` prints for the same TrainJob. Where both refuse, every field error
// of Trainer's must appear word for word in trainsched's errors; where only trainsched refuses,
// the refusal must be one docs/compatibility.md lists (documented below).

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// documented: refusals of trainsched alone that docs/compatibility.md lists, by a text their
// message holds, with the row they come from
var documented = []struct{ text, row string }{
	{"is merged over the resources of the runtime's node container",
		"a runtime container's request above the TrainJob's limit (pods the API server refuses)"},
	{"will exceed 63 characters", "a pod or Job name over 63 characters"},
	{"is given twice", "render's own input: one object given twice in its files (no cluster holds two)"},
	{"doesn't exist in the runtime job", "a runtime patch naming a container or init container the runtime job lacks"},
	{"must not have replicated job that doesn't exist", "a runtime patch naming a replicated job the runtime lacks"},
	{"Only one of the policy can be configured", "a runtime with both coscheduling and volcano"},
	{"must fit a 32-bit integer", "GPU counts larger than a 32-bit integer"},
	{"a TrainJob on a Flux runtime must set numNodes", "Flux TrainJob without numNodes"},
}

// documentedAdmits: refusals of Trainer's (or the API server's) that trainsched's render does
// not make, as docs/compatibility.md lists them, by a text the refusal holds
var documentedAdmits = []struct{ text, row string }{
	{"in body must be of type integer,string", "render reads a quantity written as a YAML number with a fraction (cpu: 2.5); the API server refuses it before any webhook"},
	{"doesn't exist: priorityclasses.scheduling.k8s.io", "Volcano priorityClassName: render sees no cluster and warns"},
}

type outcome struct {
	class string // what happened, for the summary
	diff  bool   // not as docs/compatibility.md describes
}

// ourErrors: the "error:" lines of render's standard error that belong to TrainJob ns/name (all
// of them when the file holds one TrainJob)
func ourErrors(stderr, ns, name string, trainjobs int) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(l, "error: ") {
			continue
		}
		if trainjobs == 1 || strings.Contains(l, " TrainJob "+ns+"/"+name+": ") {
			out = append(out, l)
		}
	}
	return out
}

func short(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

// words: what trainsched must print for Trainer's error e. A runtimePatches error is compared by
// its detail alone: trainsched names the entry at fault where Trainer names the whole list
// (docs/compatibility.md, "Path of a runtimePatches error"). The fake client of Trainer's unit
// tests says "trainingruntimes.<group>" where the cache its webhook reads in a cluster says
// "TrainingRuntime.<group>" (controller-runtime's cache reader puts the kind there).
func words(e *field.Error) string {
	if strings.HasPrefix(e.Field, "spec.runtimePatches") {
		return ": " + e.Detail
	}
	t := e.Error()
	t = strings.Replace(t, "clustertrainingruntimes.trainer.kubeflow.org", "ClusterTrainingRuntime.trainer.kubeflow.org", 1)
	return strings.Replace(t, "trainingruntimes.trainer.kubeflow.org", "TrainingRuntime.trainer.kubeflow.org", 1)
}

// admitted: the row of docs/compatibility.md that lists a refusal render does not make
func admitted(theirs []string) string {
	for _, d := range documentedAdmits {
		for _, t := range theirs {
			if strings.Contains(t, d.text) {
				return d.row
			}
		}
	}
	return ""
}

// verdict: nil when both sides admit and build the TrainJob (the objects are compared then),
// else what happened, printed
func verdict(file, name string, verrs field.ErrorList, buildErr error, ours []string) *outcome {
	joined := strings.Join(ours, "\n")
	report := func(o *outcome, details []string) *outcome {
		tag := "refused"
		if o.diff {
			tag = "DIFF   "
		}
		fmt.Printf("%s %s %s: %s\n", tag, file, name, o.class)
		if o.diff {
			for i, d := range details {
				if i < *show {
					fmt.Println("      ", short(d))
				}
			}
		}
		return o
	}
	switch {
	case len(verrs) > 0 && len(ours) == 0:
		var d []string
		for _, e := range verrs {
			d = append(d, "Trainer: "+e.Error())
		}
		if row := admitted(d); row != "" {
			return report(&outcome{class: "Trainer's webhook refuses, trainsched admits (documented: " +
				row + ")"}, nil)
		}
		return report(&outcome{class: "Trainer's webhook refuses, trainsched admits: " +
			short(verrs[0].Error()), diff: true}, d)
	case len(verrs) > 0:
		var missing []string
		for _, e := range verrs {
			if !strings.Contains(joined, words(e)) {
				missing = append(missing, "Trainer: "+e.Error())
			}
		}
		if len(missing) > 0 {
			o := &outcome{class: "both refuse, other words: " + short(missing[0]), diff: true}
			return report(o, append(missing, ours...))
		}
		return report(&outcome{class: "both refuse, in Trainer's words"}, nil)
	case buildErr != nil && len(ours) == 0:
		return report(&outcome{class: "Trainer's controller fails building it, trainsched builds " +
			"it: " + short(buildErr.Error()), diff: true}, nil)
	case buildErr != nil:
		for _, d := range documented {
			if strings.Contains(joined, d.text) {
				return report(&outcome{class: "Trainer's controller fails building it, trainsched " +
					"refuses it at admission (documented: " + d.row + ")"}, nil)
			}
		}
		return report(&outcome{class: "Trainer's controller fails building it (" +
			short(buildErr.Error()) + "), trainsched refuses it at admission", diff: true}, ours)
	case len(ours) > 0:
		for _, d := range documented {
			if strings.Contains(joined, d.text) {
				return report(&outcome{class: "trainsched alone refuses (documented: " + d.row + ")"},
					nil)
			}
		}
		return report(&outcome{class: "trainsched alone refuses: " + short(ours[0]), diff: true}, ours)
	}
	return nil
}

// refusedBy: who (the API server, Trainer's runtime webhook) refuses with theirs; trainsched
// must refuse too, and with words, print every one of theirs word for word (the API server's
// schema messages are worded by trainsched's own schema check: only the verdict counts there)
func refusedBy(file, name, who string, theirs, ours []string, words bool) *outcome {
	o := &outcome{class: who + " refuses, trainsched too"}
	var details []string
	if len(ours) == 0 {
		if row := admitted(theirs); row != "" {
			o = &outcome{class: who + " refuses, trainsched admits (documented: " + row + ")"}
		} else {
			o = &outcome{class: who + " refuses, trainsched admits: " + short(theirs[0]), diff: true}
			details = theirs
		}
	} else if words {
		joined := strings.Join(ours, "\n")
		for _, t := range theirs {
			if !strings.Contains(joined, t) {
				details = append(details, "Trainer: "+t)
			}
		}
		if len(details) > 0 {
			o = &outcome{class: who + " and trainsched refuse, other words: " + short(details[0]),
				diff: true}
			details = append(details, ours...)
		} else {
			o.class += ", in Trainer's words"
		}
	}
	tag := "refused"
	if o.diff {
		tag = "DIFF   "
	}
	fmt.Printf("%s %s %s: %s\n", tag, file, name, o.class)
	for i, d := range details {
		if i < *show {
			fmt.Println("      ", short(d))
		}
	}
	return o
}

func printVerdicts(v map[string]int) {
	var ks []string
	for k := range v {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return v[ks[i]] > v[ks[j]] || v[ks[i]] == v[ks[j]] && ks[i] < ks[j] })
	for _, k := range ks {
		fmt.Printf("%5d %s\n", v[k], k)
	}
}
