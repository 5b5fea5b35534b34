package main

// TorchTune cases: a TrainJob with command [tune, run] on one of the built-in TorchTune
// runtimes, with the inputs Trainer's recipe choice and checks read (trainer.md, "TorchTune
// mode"): node count, numProcPerNode, GPUs or none in resourcesPerNode, and LoRA, QLoRA, DoRA
// and runtime-managed args.

import "math/rand"

var tuneBases = []string{"torchtune-llama3.2-1b", "torchtune-llama3.2-3b", "torchtune-qwen2.5-1.5b"}

func tuneCase(r *rand.Rand, trainer map[string]any) {
	trainer["command"] = []any{"tune", "run"}
	// mostly one node: more nodes are refused for these models whatever else is set
	if r.Intn(4) != 0 {
		trainer["numNodes"] = 1
	}
	if r.Intn(3) == 0 {
		trainer["numProcPerNode"] = 1 + r.Intn(2)
	}
	switch r.Intn(4) {
	case 0: // the runtime's resources (2 GPUs in the built-in runtimes, unless replaced)
		delete(trainer, "resourcesPerNode")
	case 1: // CPUs only (the case where Trainer's check reads numProcPerNode "auto")
		trainer["resourcesPerNode"] = map[string]any{"limits": map[string]any{"cpu": 1 + r.Intn(4)}}
	default:
		trainer["resourcesPerNode"] = map[string]any{"limits": map[string]any{
			"nvidia.com/gpu": 1 + r.Intn(2)}}
	}
	var args []any
	for _, a := range []string{"model.lora_attn_modules=[q_proj,v_proj]", "model.quantize_base=True",
		"model.quantize_base=False", "model.quantize_base = TRUE", "model.use_dora=True", "dtype=bf16", "output_dir=/x"} {
		// the runtime-managed output_dir rarely: it is refused whatever else is set
		if (a == "output_dir=/x" && r.Intn(8) == 0) || (a != "output_dir=/x" && r.Intn(3) == 0) {
			args = append(args, a)
		}
	}
	if len(args) > 0 {
		trainer["args"] = args
	}
}
