#!/usr/bin/env python3
"""Checks docs/spec.schema.json: every spec the project ships or generates validates, every file in
tests/data/specs/bad/ is rejected, and the files in tests/data/specs/bad_loader/ validate (their
errors are ones only hetune's loader can see: the C source, launch dimensions). test_spec feeds the
same files to the loader.

usage: spec_schema.py SOURCE_DIR [GENERATED_DIR]   (exit 77: python3-jsonschema is not installed)
"""
import glob
import json
import os
import sys

try:
    from jsonschema import Draft202012Validator
except ImportError:
    print("skipped: python3-jsonschema is not installed (scripts/install-deps.sh installs it)")
    sys.exit(77)


def specs(root, *patterns):
    found = []
    for pattern in patterns:
        found += sorted(glob.glob(os.path.join(root, pattern), recursive=True))
    return found


def main():
    src = sys.argv[1]
    generated = sys.argv[2] if len(sys.argv) > 2 else None
    with open(os.path.join(src, "docs", "spec.schema.json")) as f:
        schema = json.load(f)
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    valid = specs(src, "examples/*/*.json", "tests/data/misbehave/*.json", "bench/data/*.json",
                  "tests/data/specs/good/*.json", "tests/data/specs/bad_loader/*.json")
    invalid = specs(src, "tests/data/specs/bad/*.json")
    if generated:
        made = specs(generated, "**/*.json")
        if len(made) < 21:
            print(f"{generated}: {len(made)} generated specs, expected at least 21 (test_spec writes them)")
            return 1
        valid += made
    failures = 0
    for path in valid + invalid:
        with open(path) as f:
            errors = sorted(validator.iter_errors(json.load(f)), key=lambda e: list(e.absolute_path))
        want_valid = path in valid
        if want_valid and errors:
            failures += 1
            e = errors[0]
            print(f"{path}: rejected at /{'/'.join(map(str, e.absolute_path))}: {e.message}")
        elif not want_valid and not errors:
            failures += 1
            print(f"{path}: accepted, but the loader rejects it")
    print(f"{len(valid)} specs valid, {len(invalid)} rejected as expected, {failures} wrong")
    return 1 if failures or len(valid) < 30 or len(invalid) < 16 else 0


if __name__ == "__main__":
    sys.exit(main())
