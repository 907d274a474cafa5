"""Offline validation of kvrouter's Kubernetes manifests, run by router-interop's DeploymentSchemasTest.

Every document of the YAML files named on the command line is validated:

* built-in kinds (Deployment, Service, Namespace, RBAC, ...) against Kubernetes' own OpenAPI schemas as the
  kubernetes-validate package ships them, strict (unknown fields are errors), for Kubernetes KUBERNETES_VERSION;
* InferencePool against the openAPIV3Schema of the CRD file given with --crd (GIE's published CRD), with
  jsonschema, unknown fields refused (kubectl's strict field validation), plus the CRD's two CEL rules
  (x-kubernetes-validations), which JSON Schema cannot express, written out;
* Kustomization files (kustomize's, not Kubernetes objects) are skipped.

Prints one JSON line per document: {"file", "kind", "name", "ok", "errors"}; exits 1 when any document fails.
With --expect-invalid, every document must fail instead (the checks' own test: broken copies must be refused).
"""
import argparse
import json
import sys

import jsonschema
import kubernetes_validate
import yaml

KUBERNETES_VERSION = "1.37.0"


def strict(schema):
    """Unknown fields are errors, as kubectl's strict field validation makes them (a structural schema prunes them)."""
    if isinstance(schema, dict):
        if ("properties" in schema and "additionalProperties" not in schema
                and not schema.get("x-kubernetes-preserve-unknown-fields")):
            schema["additionalProperties"] = False
        for value in schema.values():
            strict(value)
    elif isinstance(schema, list):
        for value in schema:
            strict(value)
    return schema


def crd_schema(path, kind, version):
    with open(path) as f:
        crd = yaml.safe_load(f)
    assert crd["kind"] == "CustomResourceDefinition" and crd["spec"]["names"]["kind"] == kind, path
    for served in crd["spec"]["versions"]:
        if served["name"] == version:
            return crd["spec"]["group"], strict(served["schema"]["openAPIV3Schema"])
    raise SystemExit(f"{path} has no version {version} of {kind}")


def cel_rules(pool):
    """The InferencePool CRD's x-kubernetes-validations, as its CEL expresses them."""
    errors = []
    spec = pool.get("spec", {})
    ref = spec.get("endpointPickerRef")
    if isinstance(ref, dict) and ref.get("kind", "Service") == "Service" and "port" not in ref:
        errors.append("spec.endpointPickerRef: port is required when kind is 'Service' or unspecified")
    ports = [p.get("number") for p in spec.get("targetPorts", []) if isinstance(p, dict)]
    if len(ports) != len(set(ports)):
        errors.append("spec.targetPorts: port number must be unique")
    return errors


def validate(document, pool_schema, group):
    kind = document.get("kind")
    if kind == "InferencePool":
        errors = []
        if document.get("apiVersion") != f"{group}/v1":
            errors.append(f"apiVersion {document.get('apiVersion')!r} is not {group}/v1")
        validator = jsonschema.Draft7Validator(pool_schema)
        errors += [f"{'.'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
                   for e in validator.iter_errors(document)]
        errors += cel_rules(document)
        return errors
    try:
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
        return []
    except kubernetes_validate.ValidationError as e:
        return [f"{'.'.join(str(p) for p in e.path) or '(root)'}: {e.message}"]
    except kubernetes_validate.SchemaNotFoundError as e:
        return [f"no Kubernetes {KUBERNETES_VERSION} schema for {document.get('apiVersion')} {kind}: {e}"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--crd", required=True)
    parser.add_argument("--expect-invalid", action="store_true")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    group, pool_schema = crd_schema(args.crd, "InferencePool", "v1")
    failed = False
    for path in args.files:
        with open(path) as f:
            documents = [d for d in yaml.safe_load_all(f) if d]
        for document in documents:
            if document.get("kind") == "Kustomization":
                continue
            errors = validate(document, pool_schema, group)
            print(json.dumps({"file": path, "kind": document.get("kind"),
                              "name": document.get("metadata", {}).get("name"), "ok": not errors,
                              "errors": errors}))
            failed |= bool(errors) != args.expect_invalid
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
