#!/usr/bin/env python3
"""Writes kubeconform's JSON schemas (one standalone file per kind, strict) from the
Kubernetes OpenAPI v3 documents and from CustomResourceDefinitions in JSON.

    openapi2jsonschema.py OUT_DIR [--openapi-v3 DIR] [--crd FILE.json]...

A file is named <kind><suffix>.json as kubeconform looks it up ({{.ResourceKind}}{{.KindSuffix}}:
"-v1" for the core group, "-<first label of the group>-<version>" otherwise). "Standalone":
every $ref is inlined, so kubeconform needs nothing else. "Strict": an object that lists its
properties admits no others, so a misspelt field fails validation instead of being ignored,
as the API server's strict field validation does.
"""
import argparse
import copy
import json
import os
import sys

DROP = ("description", "example", "x-kubernetes-list-map-keys", "x-kubernetes-list-type",
        "x-kubernetes-map-type", "x-kubernetes-patch-merge-key", "x-kubernetes-patch-strategy",
        "x-kubernetes-group-version-kind", "x-kubernetes-unions", "x-kubernetes-validations")


def file_name(group, version, kind):
    suffix = "-" + version if not group else "-%s-%s" % (group.split(".")[0], version)
    return (kind + suffix).lower() + ".json"


def strict(node):
    """Closes every object that lists its properties, recursively, in place."""
    if isinstance(node, list):
        for x in node:
            strict(x)
        return
    if not isinstance(node, dict):
        return
    if "properties" in node and "additionalProperties" not in node and \
            not node.get("x-kubernetes-preserve-unknown-fields"):
        node["additionalProperties"] = False
    for v in node.values():
        strict(v)


def inline(node, defs, stack):
    """node with every #/components/schemas/ reference replaced by its definition. A
    reference back into itself (none among the built-in kinds) becomes an open schema."""
    if isinstance(node, list):
        return [inline(x, defs, stack) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name not in defs:
            sys.exit("unresolved reference %s" % node["$ref"])
        if name in stack:
            return {}
        return inline(defs[name], defs, stack | {name})
    out = {}
    for k, v in node.items():
        if k in DROP:
            continue
        if k == "properties":
            out[k] = {p: inline(s, defs, stack) for p, s in v.items()}
        else:
            out[k] = inline(v, defs, stack)
    # A reference wrapped for its default ({"allOf": [ref], "default": {}}) is the reference.
    if list(out) in (["allOf"], ["allOf", "default"]) and len(out["allOf"]) == 1:
        return out["allOf"][0]
    if out.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    out.pop("nullable", None)
    return out


def write(out_dir, name, schema):
    schema = copy.deepcopy(schema)
    strict(schema)
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    with open(os.path.join(out_dir, name), "w") as f:
        json.dump(schema, f, sort_keys=True, separators=(",", ":"))


def from_openapi(out_dir, spec_dir):
    n = 0
    for fn in sorted(os.listdir(spec_dir)):
        if not fn.endswith(".json"):
            continue
        with open(os.path.join(spec_dir, fn)) as f:
            defs = json.load(f).get("components", {}).get("schemas", {})
        for name, schema in defs.items():
            for gvk in schema.get("x-kubernetes-group-version-kind", []):
                # List kinds and the shared meta types carry several; only real kinds here.
                if len(schema.get("x-kubernetes-group-version-kind")) != 1:
                    continue
                write(out_dir, file_name(gvk["group"], gvk["version"], gvk["kind"]),
                      inline(schema, defs, {name}))
                n += 1
    return n


def from_crd(out_dir, path):
    with open(path) as f:
        crd = json.load(f)
    spec = crd["spec"]
    n = 0
    for v in spec["versions"]:
        schema = inline(v["schema"]["openAPIV3Schema"], {}, set())
        write(out_dir, file_name(spec["group"], v["name"], spec["names"]["kind"]), schema)
        n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--openapi-v3", help="a directory of OpenAPI v3 documents (api/openapi-spec/v3)")
    ap.add_argument("--crd", action="append", default=[], help="a CustomResourceDefinition (JSON)")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    n = from_openapi(a.out_dir, a.openapi_v3) if a.openapi_v3 else 0
    for c in a.crd:
        n += from_crd(a.out_dir, c)
    if n == 0:
        sys.exit("no schema written")
    print("%d schemas in %s" % (n, a.out_dir))


if __name__ == "__main__":
    main()
