// Command schemagen writes strict JSON schemas for kubeconform, one file per kind and API
// version, from the Kubernetes OpenAPI v2 document (api/openapi-spec/swagger.json of the
// k8s.io/kubernetes module) and from CustomResourceDefinition YAML files. It does offline what
// kubeconform's scripts/openapi2jsonschema.py and the generator of its default schema
// repository (yannh/kubernetes-json-schema, "standalone-strict") do:
//
//   - strict: every object schema that lists properties refuses others
//     (additionalProperties: false), as kubectl's validation did, unless it says otherwise
//     or keeps unknown fields (x-kubernetes-preserve-unknown-fields);
//   - int-or-string (format int-or-string, x-kubernetes-int-or-string) becomes a oneOf of
//     string and integer, a resource.Quantity a oneOf of string and number;
//   - a property the object does not require may be null (swagger has no nullable), a CRD
//     property marked nullable too;
//   - standalone: every $ref is resolved inside the file (the definitions it reaches are
//     copied under "definitions", so recursive ones stay finite);
//   - apiVersion and kind accept only the file's own.
//
// Files are named <kind>-<group>-<version>.json in lower case, with group the first label of the
// API group and no group for the core API: kubeconform's -schema-location template
// "{{ .ResourceKind }}{{ .KindSuffix }}.json".
//
// Usage: schemagen -out DIR [-swagger swagger.json] [-crd crd.yaml]...
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	out := flag.String("out", "", "folder the schemas are written into")
	swagger := flag.String("swagger", "", "Kubernetes OpenAPI v2 document (swagger.json)")
	var crds listFlag
	flag.Var(&crds, "crd", "CustomResourceDefinition YAML file (repeatable)")
	flag.Parse()
	if *out == "" || (*swagger == "" && len(crds) == 0) {
		flag.Usage()
		os.Exit(2)
	}
	n, err := run(*out, *swagger, crds)
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
	fmt.Printf("schemagen: %d schemas in %s\n", n, *out)
}

func run(out, swagger string, crds []string) (int, error) {
	files := map[string]any{}
	if swagger != "" {
		if err := fromSwagger(swagger, files); err != nil {
			return 0, err
		}
	}
	for _, c := range crds {
		if err := fromCRDs(c, files); err != nil {
			return 0, err
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 0, err
	}
	for name, schema := range files {
		b, err := json.MarshalIndent(schema, "", "  ")
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(out, name), append(b, '\n'), 0o644); err != nil {
			return 0, err
		}
	}
	return len(files), nil
}

// FileName is where kubeconform looks for the schema of kind in group/version.
func FileName(group, version, kind string) string {
	suffix := "-" + version
	if group != "" {
		suffix = "-" + strings.Split(group, ".")[0] + suffix
	}
	return strings.ToLower(kind+suffix) + ".json"
}

func apiVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

const (
	refPrefix   = "#/definitions/"
	quantityDef = "io.k8s.apimachinery.pkg.api.resource.Quantity"
)

func fromSwagger(path string, files map[string]any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Definitions) == 0 {
		return fmt.Errorf("%s: no definitions", path)
	}
	// Every definition made strict, nullable and int-or-string aware once.
	defs := map[string]any{}
	for name, d := range doc.Definitions {
		if name == quantityDef {
			defs[name] = map[string]any{"description": d["description"], "oneOf": []any{
				map[string]any{"type": "string"}, map[string]any{"type": "number"}}}
			continue
		}
		defs[name] = convert(d, swaggerRules)
	}
	owner := map[string]string{}
	for _, name := range sortedKeys(doc.Definitions) {
		gvks, _ := doc.Definitions[name]["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			gvk, _ := g.(map[string]any)
			group, _ := gvk["group"].(string)
			version, _ := gvk["version"].(string)
			kind, _ := gvk["kind"].(string)
			if version == "" || kind == "" {
				return fmt.Errorf("%s: incomplete x-kubernetes-group-version-kind %v", name, gvk)
			}
			file := FileName(group, version, kind)
			if prev, ok := owner[file]; ok {
				return fmt.Errorf("%s: both %s and %s", file, prev, name)
			}
			owner[file] = name
			root := deepCopy(defs[name]).(map[string]any)
			pinKind(root, apiVersion(group, version), kind)
			if reached := reachable(root, defs); len(reached) > 0 {
				root["definitions"] = reached
			}
			files[file] = root
		}
	}
	return nil
}

// reachable returns the definitions root refers to, directly or through each other.
func reachable(root any, defs map[string]any) map[string]any {
	out := map[string]any{}
	var walk func(any)
	walk = func(n any) {
		switch v := n.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok && strings.HasPrefix(ref, refPrefix) {
				name := strings.TrimPrefix(ref, refPrefix)
				if _, seen := out[name]; !seen {
					if d, ok := defs[name]; ok {
						out[name] = d
						walk(d)
					}
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(root)
	return out
}

// pinKind lets apiVersion and kind hold only the schema's own.
func pinKind(root map[string]any, apiVersion, kind string) {
	props, _ := root["properties"].(map[string]any)
	for name, value := range map[string]string{"apiVersion": apiVersion, "kind": kind} {
		if p, ok := props[name].(map[string]any); ok {
			p["enum"] = []any{value}
		}
	}
}

func fromCRDs(path string, files map[string]any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	found := 0
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("%s: %w", path, err)
		}
		if doc["kind"] != "CustomResourceDefinition" {
			continue
		}
		spec, _ := doc["spec"].(map[string]any)
		group, _ := spec["group"].(string)
		names, _ := spec["names"].(map[string]any)
		kind, _ := names["kind"].(string)
		versions, _ := spec["versions"].([]any)
		for _, v := range versions {
			ver, _ := v.(map[string]any)
			name, _ := ver["name"].(string)
			schema, _ := ver["schema"].(map[string]any)
			open, ok := schema["openAPIV3Schema"].(map[string]any)
			if !ok || group == "" || kind == "" || name == "" {
				continue
			}
			root := convert(open, crdRules).(map[string]any)
			pinKind(root, apiVersion(group, name), kind)
			file := FileName(group, name, kind)
			if _, dup := files[file]; dup {
				return fmt.Errorf("%s: %s defined twice", path, file)
			}
			files[file] = root
			found++
		}
	}
	if found == 0 {
		return fmt.Errorf("%s: no CustomResourceDefinition with a schema", path)
	}
	return nil
}

type rules struct {
	// nullableOptional: properties an object does not require may be null (swagger).
	nullableOptional bool
}

var (
	swaggerRules = rules{nullableOptional: true}
	crdRules     = rules{}
)

var intOrString = []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}

// convert returns a copy of the schema node n made strict, with int-or-string and nullable
// spelled in JSON schema.
func convert(n any, r rules) any {
	switch v := n.(type) {
	case map[string]any:
		if v["format"] == "int-or-string" || v["x-kubernetes-int-or-string"] == true {
			out := map[string]any{"oneOf": deepCopy(intOrString)}
			if d, ok := v["description"]; ok {
				out["description"] = d
			}
			return out
		}
		out := make(map[string]any, len(v)+1)
		for k, c := range v {
			switch k {
			case "properties", "patternProperties", "definitions":
				// Maps of names to schemas: convert the schemas, never the names.
				props, _ := c.(map[string]any)
				m := make(map[string]any, len(props))
				for name, p := range props {
					m[name] = convert(p, r)
				}
				out[k] = m
			case "enum", "required", "example", "default", "x-kubernetes-list-map-keys":
				out[k] = deepCopy(c)
			default:
				out[k] = convert(c, r)
			}
		}
		if v["nullable"] == true {
			out["type"] = withNull(out["type"])
		}
		if props, ok := out["properties"].(map[string]any); ok {
			if _, set := out["additionalProperties"]; !set && v["x-kubernetes-preserve-unknown-fields"] != true {
				out["additionalProperties"] = false
			}
			if r.nullableOptional {
				required := map[string]bool{}
				req, _ := v["required"].([]any)
				for _, q := range req {
					if s, ok := q.(string); ok {
						required[s] = true
					}
				}
				for name, p := range props {
					if pm, ok := p.(map[string]any); ok && !required[name] {
						if _, typed := pm["type"]; typed {
							pm["type"] = withNull(pm["type"])
						}
					}
				}
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, c := range v {
			out[i] = convert(c, r)
		}
		return out
	default:
		return v
	}
}

// withNull adds "null" to a schema's type.
func withNull(t any) any {
	switch v := t.(type) {
	case string:
		if v == "null" {
			return v
		}
		return []any{v, "null"}
	case []any:
		for _, x := range v {
			if x == "null" {
				return v
			}
		}
		return append(append([]any{}, v...), "null")
	}
	return t
}

func deepCopy(n any) any {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(n); err != nil {
		panic(err)
	}
	var out any
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		panic(err)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
