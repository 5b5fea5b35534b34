package main

// The API server's part of admission, which comes before any webhook: the CRD's structural
// schema and its CEL rules (apiextensions-apiserver's own validators, with manifests/crds), and
// Trainer's (Cluster)TrainingRuntime webhook for the runtime the TrainJob names. trainsched
// checks the same in render; where the API server or Trainer's runtime webhook refuses, render
// must refuse too.

import (
	"context"
	"errors"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	apivalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/webhooks"
)

type crdCheck struct {
	s   *structuralschema.Structural
	v   apivalidation.SchemaValidator
	cel *cel.Validator
}

func newCRDCheck(crdFile string) *crdCheck {
	s, internal := crdSchema(crdFile)
	v, _, err := apivalidation.NewSchemaValidator(internal)
	must(err)
	return &crdCheck{s: s, v: v, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
}

// integers: a copy of v with the whole numbers YAML gave as float64 made int64, as the API
// server's JSON decoding of an object gives them (CEL tells int from double)
func integers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = integers(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = integers(x)
		}
		return out
	case float64:
		if t == float64(int64(t)) {
			return int64(t)
		}
	}
	return v
}

// errors: the API server's schema and CEL errors for obj (already defaulted)
func (k *crdCheck) errors(in map[string]any) []string {
	var out []string
	obj := integers(in).(map[string]any)
	for _, e := range apivalidation.ValidateCustomResource(nil, obj, k.v) {
		out = append(out, e.Error())
	}
	if len(out) > 0 {
		return out // CEL runs on a well-typed object only
	}
	errs, _ := k.cel.Validate(context.Background(), nil, k.s, obj, nil, celconfig.RuntimeCELCostBudget)
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// runtimeWebhookErrors: Trainer's (Cluster)TrainingRuntime webhook on r, unless the runtime
// opts out with the label its webhook configuration selects on
func runtimeWebhookErrors(r any, labels map[string]string) []string {
	if labels["trainer.kubeflow.org/webhook-validation"] == "disabled" {
		return nil
	}
	var err error
	switch rt := r.(type) {
	case *trainer.TrainingRuntime:
		_, err = (&webhooks.TrainingRuntimeValidator{}).ValidateCreate(context.Background(), rt)
	case *trainer.ClusterTrainingRuntime:
		_, err = (&webhooks.ClusterTrainingRuntimeValidator{}).ValidateCreate(context.Background(), rt)
	}
	if err == nil {
		return nil
	}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		var out []string
		for _, e := range agg.Errors() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}
