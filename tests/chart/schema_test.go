package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every object of values.schema.json says what else it accepts: nothing (additionalProperties
// false) when it lists its properties, or values of one schema (string maps such as labels).
func TestSchemaIsClosed(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir(t), "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	objects := 0
	var walk func(path string, n any)
	walk = func(path string, n any) {
		switch v := n.(type) {
		case map[string]any:
			if v["type"] == "object" {
				objects++
				ap, ok := v["additionalProperties"]
				switch {
				case !ok:
					t.Errorf("%s: object without additionalProperties", path)
				case ap == true:
					t.Errorf("%s: additionalProperties true", path)
				case v["properties"] != nil && ap != false:
					t.Errorf("%s: lists properties but accepts others", path)
				}
			}
			for k, c := range v {
				walk(path+"/"+k, c)
			}
		case []any:
			for _, c := range v {
				walk(path+"/[]", c)
			}
		}
	}
	walk("#", schema)
	if objects < 30 {
		t.Errorf("only %d object schemas: is the schema complete?", objects)
	}
}

// Unknown keys, wrong types and values out of range are refused by the schema; settings that
// would render but not run are refused by the templates.
func TestBadValuesRefused(t *testing.T) {
	const schemaError = "values don't meet the specifications of the schema"
	for _, c := range []struct {
		name string
		set  []string
		want string // in helm's error output
	}{
		{"unknown top-level key", []string{"replicas=3"}, schemaError},
		{"unknown service", []string{"services.shortener.replicaCount=1"}, schemaError},
		{"unknown service key", []string{"services.gateway.replicas=2"}, schemaError},
		{"unknown setting", []string{"config.anonymousQuota=5"}, schemaError},
		{"unknown secret", []string{"secrets.jwtSecret=x"}, schemaError},
		{"service type of a backend", []string{"services.auth.service.type=LoadBalancer"}, schemaError},
		{"string for an integer", []string{"services.gateway.replicaCount=two"}, schemaError},
		{"string for a boolean", []string{"networkPolicy.enabled=yes"}, schemaError},
		{"integer for a string", []string{"config.sessionTTL=168"}, schemaError},
		{"log level", []string{"config.logLevel=verbose"}, schemaError},
		{"drain over a minute", []string{"config.shutdownDrainSeconds=61"}, schemaError},
		{"port 0", []string{"metrics.port=0"}, schemaError},
		{"port too high", []string{"containerPort=70000"}, schemaError},
		{"pull policy", []string{"image.pullPolicy=Sometimes"}, schemaError},
		{"service type", []string{"services.gateway.service.type=ExternalName"}, schemaError},
		{"the shared internal secret, gone", []string{"secrets.internalSecret=" + strings.Repeat("x", 32)}, schemaError},
		{"short identity secret", []string{"secrets.identitySecret=too-short"}, schemaError},
		{"internal key not PEM", []string{"secrets.internalKeys.gateway=not-a-key"}, schemaError},
		{"internal key of no service", []string{"secrets.internalKeys.shortener=x"}, schemaError},
		{"internal keys not by service", []string{"secrets.internalKeys=x"}, schemaError},
		{"internal certificates not PEM", []string{"secrets.internalCerts=not-a-certificate"}, schemaError},
		{"bad digest", []string{"services.link.image.digest=latest"}, schemaError},
		{"duration", []string{"config.anonWindow=a day"}, schemaError},
		{"sampler", []string{"otel.sampler=sometimes"}, schemaError},
		{"root user", []string{"runAsUser=0"}, schemaError},
		{"mongodb scheme", []string{"secrets.mongodbURI=postgres://db"}, schemaError},
		{"redis scheme", []string{"secrets.redisURL=memcached://cache:11211"}, schemaError},
		{"whenUnsatisfiable", []string{"topologySpreadConstraints[0].whenUnsatisfiable=Never"}, schemaError},
		{"grace period shorter than drain and shutdown", []string{"terminationGracePeriodSeconds=20"}, "terminationGracePeriodSeconds (20) must be greater than"},
		{"both meshes", []string{"mesh.istio.enabled=true", "mesh.linkerd.enabled=true"}, "choose one service mesh"},
		{"captcha secret without its URL", []string{"secrets.captchaSecret=x"}, "must be set together"},
		{"service monitor without metrics", []string{"serviceMonitor.enabled=true", "metrics.enabled=false"}, "serviceMonitor.enabled needs metrics.enabled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := helmTemplate(t, nil, c.set...)
			if err == nil {
				t.Fatalf("helm template --set %v rendered", c.set)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("helm template --set %v failed, but not with %q:\n%v", c.set, c.want, err)
			}
		})
	}
	// The limits themselves render.
	for _, set := range [][]string{
		{"config.shutdownDrainSeconds=60", "terminationGracePeriodSeconds=76"},
		{"secrets.identitySecret=" + strings.Repeat("x", 32)},
		{"services.gateway.podDisruptionBudget.maxUnavailable=50%"},
		{"secrets.redisURL=redis+sentinel://sentinel:26379?addr=sentinel-2:26379&master_name=main"},
		{"secrets.redisURL=rediss+cluster://redis-0:6379?addr=redis-1:6379"},
	} {
		if _, err := helmTemplate(t, nil, set...); err != nil {
			t.Errorf("--set %v: %v", set, err)
		}
	}
}
