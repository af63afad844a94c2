package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// podOf is the raw pod template spec of a service's Deployment.
func podOf(t *testing.T, m manifests, svc string) map[string]any {
	t.Helper()
	d := m.must(t, "Deployment", fullname+"-"+svc)
	spec, _ := value(d.raw, "spec.template.spec").(map[string]any)
	if spec == nil {
		t.Fatalf("Deployment %s: no pod spec", svc)
	}
	return spec
}

// mainContainer is the service's own container of a pod spec.
func mainContainer(t *testing.T, spec map[string]any, svc string) map[string]any {
	t.Helper()
	for _, c := range spec["containers"].([]any) {
		if c.(map[string]any)["name"] == svc {
			return c.(map[string]any)
		}
	}
	t.Fatalf("no container %s", svc)
	return nil
}

// names lists the "name" of each entry of a list.
func names(list any) []string {
	var out []string
	l, _ := list.([]any)
	for _, e := range l {
		if n, ok := e.(map[string]any)["name"].(string); ok {
			out = append(out, n)
		}
	}
	return out
}

func asJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// Every extension point an operator needs, global and per service, lands where it belongs:
// the global entries first, the service's after them; the service's affinity, node selector,
// tolerations, priority class and lifecycle replace the global ones; security contexts merge.
func TestExtensionPoints(t *testing.T) {
	values := `
extraEnv: [{name: GLOBAL_ENV, value: "1"}]
extraEnvFrom: [{configMapRef: {name: shared-env}}]
initContainers: [{name: wait-for-vault, image: "busybox:1.37.0", command: [sh, -c, "true"]}]
extraContainers: [{name: log-shipper, image: "fluent/fluent-bit:4.0.3"}]
extraVolumes: [{name: geoip, csi: {driver: secrets-store.csi.k8s.io, readOnly: true, volumeAttributes: {secretProviderClass: geoip}}}]
extraVolumeMounts: [{name: geoip, mountPath: /geoip, readOnly: true}]
lifecycle: {preStop: {sleep: {seconds: 2}}}
nodeSelector: {pool: general}
tolerations: [{key: dedicated, operator: Equal, value: general, effect: NoSchedule}]
priorityClassName: linkmesh
podSecurityContext: {supplementalGroups: [4000]}
containerSecurityContext: {readOnlyRootFilesystem: true}
services:
  gateway:
    extraEnv: [{name: GATEWAY_ENV, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}]
    extraEnvFrom: [{secretRef: {name: gateway-extra}}]
    initContainers: [{name: fetch-geoip, image: "busybox:1.37.0"}]
    extraContainers: [{name: envoy, image: "envoyproxy/envoy:v1.36.0"}]
    nodeSelector: {pool: edge}
    tolerations: [{key: edge, operator: Exists, effect: NoSchedule}]
    priorityClassName: linkmesh-edge
    lifecycle: {preStop: {sleep: {seconds: 5}}}
    affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}}
    podSecurityContext: {fsGroupChangePolicy: OnRootMismatch}
    containerSecurityContext: {capabilities: {drop: [ALL], add: []}}
    resources: {requests: {cpu: 200m, memory: 224Mi}, limits: {memory: 512Mi, cpu: null}}
    autoscaling:
      enabled: true
      behavior: {scaleDown: {stabilizationWindowSeconds: 600, policies: [{type: Pods, value: 1, periodSeconds: 120}]}}
`
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	m := render(t, []string{f})
	gw, link := podOf(t, m, "gateway"), podOf(t, m, "link")
	for _, c := range []struct {
		what      string
		got, want string
	}{
		{"gateway init containers", strings.Join(names(gw["initContainers"]), ","), "wait-for-vault,fetch-geoip"},
		{"link init containers", strings.Join(names(link["initContainers"]), ","), "wait-for-vault"},
		{"gateway containers", strings.Join(names(gw["containers"]), ","), "gateway,log-shipper,envoy"},
		{"link containers", strings.Join(names(link["containers"]), ","), "link,log-shipper"},
		{"gateway node selector", asJSON(gw["nodeSelector"]), `{"pool":"edge"}`},
		{"link node selector", asJSON(link["nodeSelector"]), `{"pool":"general"}`},
		{"gateway tolerations", asJSON(gw["tolerations"]), `[{"effect":"NoSchedule","key":"edge","operator":"Exists"}]`},
		{"link priority class", asJSON(link["priorityClassName"]), `"linkmesh"`},
		{"gateway priority class", asJSON(gw["priorityClassName"]), `"linkmesh-edge"`},
		{"gateway affinity", asJSON(gw["affinity"]), `{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}}`},
		{"gateway lifecycle", asJSON(mainContainer(t, gw, "gateway")["lifecycle"]), `{"preStop":{"sleep":{"seconds":5}}}`},
		{"link lifecycle", asJSON(mainContainer(t, link, "link")["lifecycle"]), `{"preStop":{"sleep":{"seconds":2}}}`},
		{"gateway volumes", strings.Join(names(gw["volumes"]), ","), "tmp,click-spool,geoip"},
		{"link CSI volume", asJSON(value(link["volumes"].([]any)[1].(map[string]any), "csi.driver")), `"secrets-store.csi.k8s.io"`},
		{"link mounts", strings.Join(names(mainContainer(t, link, "link")["volumeMounts"]), ","), "tmp,geoip"},
		{"gateway envFrom", asJSON(mainContainer(t, gw, "gateway")["envFrom"].([]any)[1:]), `[{"configMapRef":{"name":"shared-env"}},{"secretRef":{"name":"gateway-extra"}}]`},
		{"gateway CPU limit", asJSON(value(mainContainer(t, gw, "gateway"), "resources.limits")), `{"memory":"512Mi"}`},
		{"gateway pod security context", asJSON(gw["securityContext"]), `{"fsGroup":65532,"fsGroupChangePolicy":"OnRootMismatch","runAsGroup":65532,"runAsNonRoot":true,"runAsUser":65532,"seccompProfile":{"type":"RuntimeDefault"},"supplementalGroups":[4000]}`},
	} {
		if c.got != c.want {
			t.Errorf("%s: %s, want %s", c.what, c.got, c.want)
		}
	}
	env := names(mainContainer(t, gw, "gateway")["env"])
	if n := len(env); n < 2 || env[n-2] != "GLOBAL_ENV" || env[n-1] != "GATEWAY_ENV" {
		t.Errorf("gateway env ends %v, want the global extraEnv then the service's", env)
	}
	hpa := m.must(t, "HorizontalPodAutoscaler", fullname+"-gateway")
	if got := asJSON(value(hpa.raw, "spec.behavior.scaleDown.stabilizationWindowSeconds")); got != "600" {
		t.Errorf("HPA behavior: %s", asJSON(value(hpa.raw, "spec.behavior")))
	}
}

// Without an affinity, the preset spreads a service's pods over nodes: preferred (soft, the
// default), required (hard) or not at all (none).
func TestAntiAffinityPreset(t *testing.T) {
	for preset, want := range map[string]string{
		"soft": `{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"podAffinityTerm":{"labelSelector":{"matchLabels":{"app.kubernetes.io/component":"link","app.kubernetes.io/instance":"demo","app.kubernetes.io/name":"linkmesh"}},"topologyKey":"kubernetes.io/hostname"},"weight":100}]}}`,
		"hard": `{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app.kubernetes.io/component":"link","app.kubernetes.io/instance":"demo","app.kubernetes.io/name":"linkmesh"}},"topologyKey":"kubernetes.io/hostname"}]}}`,
		"none": `null`,
	} {
		if got := asJSON(podOf(t, render(t, nil, "podAntiAffinityPreset="+preset), "link")["affinity"]); got != want {
			t.Errorf("%s: %s, want %s", preset, got, want)
		}
	}
}

// Behind an Ingress or an HTTPRoute every client arrives from the proxy: without its ranges in
// trustedProxies all clients would share one identity, so the chart refuses to render.
func TestTrustedProxiesRequiredBehindAProxy(t *testing.T) {
	for _, on := range []string{"ingress.enabled=true", "httpRoute.enabled=true"} {
		_, err := helmTemplate(t, nil, on)
		if err == nil || !strings.Contains(err.Error(), "config.trustedProxies is required") {
			t.Errorf("%s without trustedProxies: %v", on, err)
		}
		if _, err := helmTemplate(t, nil, on, "config.trustedProxies={10.0.0.0/8}"); err != nil {
			t.Errorf("%s with trustedProxies: %v", on, err)
		}
	}
}

// Traces carry the pod, namespace, node, Deployment and version (downward API), and the OTLP
// headers and TLS material come from Secrets.
func TestOpenTelemetryResourceAndTransport(t *testing.T) {
	m := render(t, nil, "otel.endpoint=https://otel.example:4318", "otel.headers.secretName=otlp-auth",
		"otel.tls.secretName=otlp-tls", "otel.tls.clientCertificate=true", "services.link.image.tag=1.2.3")
	link := mainContainer(t, podOf(t, m, "link"), "link")
	env := map[string]any{}
	order := names(link["env"])
	for _, e := range link["env"].([]any) {
		env[e.(map[string]any)["name"].(string)] = e
	}
	attrs, _ := value(env["OTEL_RESOURCE_ATTRIBUTES"].(map[string]any), "value").(string)
	for _, want := range []string{"k8s.pod.name=$(K8S_POD_NAME)", "k8s.namespace.name=$(K8S_NAMESPACE_NAME)", "k8s.node.name=$(K8S_NODE_NAME)",
		"k8s.deployment.name=" + fullname + "-link", "service.version=1.2.3", "helm.chart=linkmesh-"} {
		if !strings.Contains(attrs, want) {
			t.Errorf("OTEL_RESOURCE_ATTRIBUTES %q has no %s", attrs, want)
		}
	}
	// $(VAR) expands only variables defined before it.
	pos := map[string]int{}
	for i, n := range order {
		pos[n] = i
	}
	for _, v := range []string{"K8S_POD_NAME", "K8S_POD_UID", "K8S_NAMESPACE_NAME", "K8S_NODE_NAME"} {
		if _, ok := pos[v]; !ok || pos[v] > pos["OTEL_RESOURCE_ATTRIBUTES"] {
			t.Errorf("%s is not defined before OTEL_RESOURCE_ATTRIBUTES: %v", v, order)
		}
	}
	if got := asJSON(value(env["OTEL_EXPORTER_OTLP_HEADERS"].(map[string]any), "valueFrom.secretKeyRef")); got != `{"key":"headers","name":"otlp-auth"}` {
		t.Errorf("OTLP headers: %s", got)
	}
	for v, file := range map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "ca.crt", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "tls.crt", "OTEL_EXPORTER_OTLP_CLIENT_KEY": "tls.key"} {
		if got, _ := value(env[v].(map[string]any), "value").(string); got != "/etc/linkmesh/otlp-tls/"+file {
			t.Errorf("%s = %q", v, got)
		}
	}
	if !strings.Contains(strings.Join(names(link["volumeMounts"]), ","), "otlp-tls") {
		t.Error("the OTLP TLS Secret is not mounted")
	}
}

// With Linkerd the proxy outlives the service: a native sidecar by default, and otherwise a
// wait before exit covering the drain and the close (the gateway's last click flush).
func TestLinkerdProxyOutlivesTheService(t *testing.T) {
	m := render(t, nil, "mesh.linkerd.enabled=true")
	a := m.must(t, "Deployment", fullname+"-gateway")
	ann, _ := value(a.raw, "spec.template.metadata.annotations").(map[string]any)
	if ann["config.beta.linkerd.io/proxy-enable-native-sidecar"] != "true" || ann["config.alpha.linkerd.io/proxy-wait-before-exit-seconds"] != nil {
		t.Errorf("linkerd annotations: %v", ann)
	}
	m = render(t, nil, "mesh.linkerd.enabled=true", "mesh.linkerd.nativeSidecar=false")
	ann, _ = value(m.must(t, "Deployment", fullname+"-gateway").raw, "spec.template.metadata.annotations").(map[string]any)
	if _, ok := ann["config.beta.linkerd.io/proxy-enable-native-sidecar"]; ok || ann["config.alpha.linkerd.io/proxy-wait-before-exit-seconds"] != "20" {
		t.Errorf("nativeSidecar=false: %v, want no native sidecar and a 20 s wait before exit", ann)
	}
}

// Nothing installs by default that cannot run: the images' repository, both datastores and a
// source of keys are required, each refusal saying what to give.
func TestRequiredValues(t *testing.T) {
	full := []string{"image.repository=r.example/linkmesh", "secrets.generate=true",
		"secrets.mongodbURI=mongodb://m:27017/?replicaSet=rs0", "secrets.redisURL=redis://r:6379/0"}
	if _, err := helmTemplateArgs(t, true, nil, nil, full...); err != nil {
		t.Fatalf("with every required value: %v", err)
	}
	for i, want := range []string{"image.repository is required", "the chart's keys need a source", "secrets.mongodbURI is required", "secrets.redisURL is required"} {
		sets := append(append([]string{}, full[:i]...), full[i+1:]...)
		_, err := helmTemplateArgs(t, true, nil, nil, sets...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("without %s: %v, want %q", full[i], err, want)
		}
	}
	// An existing Secret is a source of everything, datastores included; every service's own
	// repository stands for the global one.
	sets := []string{"secrets.existingSecret=mine"}
	for _, svc := range services {
		sets = append(sets, "services."+svc+".image.repository=r.example/"+svc)
	}
	if _, err := helmTemplateArgs(t, true, nil, nil, sets...); err != nil {
		t.Errorf("existingSecret and per-service repositories: %v", err)
	}
}

// An existing Secret changed where the chart cannot read it (GitOps): secrets.revision rolls
// the pods.
func TestSecretRevisionRollsPods(t *testing.T) {
	ann := func(sets ...string) string {
		m := render(t, nil, append([]string{"secrets.existingSecret=mine"}, sets...)...)
		return m.deployments(t)["link"].Spec.Template.Metadata.Annotations["checksum/secret"]
	}
	a, b := ann(), ann("secrets.revision=2026-11-27")
	if a == "" || a == b {
		t.Errorf("checksum/secret %q, then %q with a new revision", a, b)
	}
	if c := ann("secrets.revision=2026-11-27"); c != b {
		t.Error("the same revision gives another checksum")
	}
}
