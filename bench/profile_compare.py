#!/usr/bin/env python3
"""Layer profiles side by side (bench_train_step --profile-layers --out FILE), one column per file:
forward, loss, backward and optimizer seconds, then each layer's backward (and, where the profile
has it, forward) in milliseconds and its ratio to the first file's. For scripts/gpu_check.sh section 4: per layer, where BF16 gains over
TF32 and where it does not (issue 14). Standard library only: the GPU machine's python3 has no
numpy guarantee. Prints a Markdown table.

    bench/profile_compare.py TF32.json BF16.json [...]
"""
import json
import sys


def main(paths):
    if not paths:
        print("usage: profile_compare.py PROFILE.json [PROFILE.json ...]", file=sys.stderr)
        return 2
    profiles = []
    for path in paths:
        try:
            with open(path) as f:
                profiles.append(json.load(f))
        except (OSError, ValueError) as e:
            print(f"profile_compare.py: {path}: {e}", file=sys.stderr)
            return 3
    # Columns by precision; where two files have the same one (bf16, and bf16 with switches),
    # by what follows "_profile_" in the file's name (gpu_check's bf16_tf32p_gemm).
    names = [p.get("precision", "?") for p in profiles]
    for i, path in enumerate(paths):
        stem = path.rsplit("/", 1)[-1]
        stem = stem[:-5] if stem.endswith(".json") else stem
        if names.count(names[i]) > 1 and "_profile_" in stem:
            names[i] = stem.rsplit("_profile_", 1)[1]
    base = profiles[0]
    head = "| | " + " | ".join(names) + " | " + " | ".join(f"{n}/{names[0]}" for n in names[1:]) + " |"
    print(head)
    print("|" + " --- |" * (1 + 2 * len(names) - 1))

    def row(label, values):
        ratios = [f"{v / values[0]:.2f}" if values[0] > 0 else "-" for v in values[1:]]
        print(f"| {label} | " + " | ".join(f"{v * 1e3:.3f}" for v in values) + " | " + " | ".join(ratios) + " |")

    for key in ("forward_s", "loss_s", "backward_s", "optimizer_s"):
        row(key[:-2] + " (ms)", [float(p.get(key, 0.0)) for p in profiles])
    # Layers in the first profile's order (the backward's order); a layer missing elsewhere is 0.
    by_name = [{layer["name"]: float(layer["backward_s"]) for layer in p.get("layers", [])} for p in profiles]
    for layer in base.get("layers", []):
        row(f"backward {layer['name']} (ms)", [b.get(layer["name"], 0.0) for b in by_name])
    # Forward per layer, where the profiles have it (written since 2026-11-23), in forward order.
    fwd_by_name = [{layer["name"]: float(layer.get("forward_s", 0.0)) for layer in p.get("layers", [])}
                   for p in profiles]
    for layer in reversed(base.get("layers", [])):
        values = [f.get(layer["name"], 0.0) for f in fwd_by_name]
        if any(v > 0 for v in values):
            row(f"forward {layer['name']} (ms)", values)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
