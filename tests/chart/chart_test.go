package chart

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

func releaseLabels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": "linkmesh", "app.kubernetes.io/instance": release}
}

// Every value set renders the six services, each with its own ServiceAccount, ConfigMap,
// Service and Deployment, and every object carries the standard labels.
func TestEveryValueSetRenders(t *testing.T) {
	for _, name := range sortedNames(valueSets(t)) {
		t.Run(name, func(t *testing.T) {
			m := renderSet(t, name)
			for _, svc := range services {
				n := fullname + "-" + svc
				for _, kind := range []string{"ServiceAccount", "ConfigMap", "Service", "Deployment"} {
					o := m.must(t, kind, n)
					if o.Metadata.Labels["app.kubernetes.io/component"] != svc {
						t.Errorf("%s %s: component label %q", kind, n, o.Metadata.Labels["app.kubernetes.io/component"])
					}
				}
			}
			for _, o := range m.objects {
				for _, l := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
					"app.kubernetes.io/managed-by", "app.kubernetes.io/part-of", "helm.sh/chart"} {
					if o.Metadata.Labels[l] == "" {
						t.Errorf("%s %s: no %s label", o.Kind, o.Metadata.Name, l)
					}
				}
				if o.Metadata.Namespace != namespace {
					t.Errorf("%s %s: namespace %q, want the release's", o.Kind, o.Metadata.Name, o.Metadata.Namespace)
				}
			}
		})
	}
}

// openshiftSets are the value sets that leave the UID and GID to the platform.
var openshiftSets = map[string]bool{"openshift": true}

func checkSecurityContext(t *testing.T, where string, sc *securityContext, container bool, platformUID bool) {
	t.Helper()
	if sc == nil {
		t.Errorf("%s: no securityContext", where)
		return
	}
	isTrue := func(b *bool) bool { return b != nil && *b }
	isFalse := func(b *bool) bool { return b != nil && !*b }
	if !isTrue(sc.RunAsNonRoot) {
		t.Errorf("%s: runAsNonRoot is not true", where)
	}
	switch {
	case platformUID:
		if sc.RunAsUser != nil || sc.RunAsGroup != nil || sc.FSGroup != nil {
			t.Errorf("%s: runAsUser, runAsGroup or fsGroup set where the platform assigns them", where)
		}
	case sc.RunAsUser == nil || *sc.RunAsUser != 65532 || sc.RunAsGroup == nil || *sc.RunAsGroup != 65532:
		t.Errorf("%s: runAsUser/runAsGroup not 65532", where)
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != "RuntimeDefault" {
		t.Errorf("%s: seccompProfile is not RuntimeDefault", where)
	}
	if !container {
		return
	}
	if !isTrue(sc.ReadOnlyRootFilesystem) {
		t.Errorf("%s: readOnlyRootFilesystem is not true", where)
	}
	if !isFalse(sc.AllowPrivilegeEscalation) {
		t.Errorf("%s: allowPrivilegeEscalation is not false", where)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("%s: privileged", where)
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
		t.Errorf("%s: capabilities do not drop ALL (or add some)", where)
	}
}

func checkResources(t *testing.T, where string, c container) {
	t.Helper()
	for _, r := range []string{"cpu", "memory"} {
		if c.Resources.Requests[r] == nil || c.Resources.Limits[r] == nil {
			t.Errorf("%s: no %s request and limit", where, r)
		}
	}
}

// Every pod (the services' and the helm test's) is hardened, and every service container has
// its probes, resources, a writable /tmp and a grace period longer than its drain.
func TestPodsHardened(t *testing.T) {
	for _, name := range sortedNames(valueSets(t)) {
		t.Run(name, func(t *testing.T) {
			m := renderSet(t, name)
			for _, o := range m.all("ServiceAccount") {
				if v, ok := o.raw["automountServiceAccountToken"].(bool); !ok || v {
					t.Errorf("ServiceAccount %s: automountServiceAccountToken is not false", o.Metadata.Name)
				}
			}
			pods := 0
			for svc, d := range m.deployments(t) {
				pods++
				ps := d.Spec.Template.Spec
				where := "Deployment " + svc
				if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
					t.Errorf("%s: automountServiceAccountToken is not false", where)
				}
				if ps.ServiceAccountName != fullname+"-"+svc {
					t.Errorf("%s: serviceAccountName %q", where, ps.ServiceAccountName)
				}
				m.must(t, "ServiceAccount", ps.ServiceAccountName)
				checkSecurityContext(t, where+" pod", ps.SecurityContext, false, openshiftSets[name])
				if len(ps.Containers) != 1 || len(ps.InitContainers) != 0 {
					t.Errorf("%s: want one container and no init containers", where)
				}
				env := m.env(t, svc)
				drain, err := time.ParseDuration(env["LINKMESH_SHUTDOWN_DRAIN"])
				if err != nil {
					t.Errorf("%s: LINKMESH_SHUTDOWN_DRAIN %q: %v", where, env["LINKMESH_SHUTDOWN_DRAIN"], err)
				}
				// The server closes within 10 s of the drain's end (pkg/server).
				if ps.TerminationGracePeriodSeconds == nil || time.Duration(*ps.TerminationGracePeriodSeconds)*time.Second <= drain+10*time.Second {
					t.Errorf("%s: terminationGracePeriodSeconds %v not above the drain %s + 10 s", where, ps.TerminationGracePeriodSeconds, drain)
				}
				tmp := map[string]bool{}
				for _, v := range ps.Volumes {
					if v.EmptyDir != nil {
						tmp[v.Name] = true
					}
				}
				for _, c := range ps.Containers {
					where := where + " container " + c.Name
					checkSecurityContext(t, where, c.SecurityContext, true, openshiftSets[name])
					checkResources(t, where, c)
					ports := map[string]int{}
					for _, p := range c.Ports {
						ports[p.Name] = p.ContainerPort
					}
					if ports["http"] != 8080 {
						t.Errorf("%s: no port http 8080: %v", where, ports)
					}
					if env["LINKMESH_LISTEN_ADDR"] != "0.0.0.0:8080" {
						t.Errorf("%s: LINKMESH_LISTEN_ADDR %q", where, env["LINKMESH_LISTEN_ADDR"])
					}
					metricsOn := value(m.values, "metrics.enabled") == true
					if metricsOn && (ports["metrics"] != 9090 || env["LINKMESH_METRICS_ADDR"] != "0.0.0.0:9090") {
						t.Errorf("%s: metrics on, but port %d and LINKMESH_METRICS_ADDR %q", where, ports["metrics"], env["LINKMESH_METRICS_ADDR"])
					}
					if !metricsOn && (ports["metrics"] != 0 || env["LINKMESH_METRICS_ADDR"] != "") {
						t.Errorf("%s: metrics off, but a metrics port or LINKMESH_METRICS_ADDR", where)
					}
					for _, pr := range []struct {
						name string
						p    *probe
						path string
					}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
						if pr.p == nil || pr.p.HTTPGet == nil || pr.p.HTTPGet.Path != pr.path || pr.p.HTTPGet.Port != "http" {
							t.Errorf("%s: %s probe is not GET %s on port http", where, pr.name, pr.path)
						}
					}
					mountedTmp := false
					for _, vm := range c.VolumeMounts {
						if vm.MountPath == "/tmp" && tmp[vm.Name] {
							mountedTmp = true
						}
					}
					if !mountedTmp {
						t.Errorf("%s: no emptyDir at /tmp", where)
					}
					if svc == "gateway" {
						checkClickSpool(t, where, env, c, ps, value(m.values, "config.clickSpoolMB"))
					}
				}
				spread := map[string]string{}
				for _, c := range ps.TopologySpreadConstraints {
					spread[c.TopologyKey] = c.WhenUnsatisfiable
					if !subset(c.LabelSelector.MatchLabels, d.Spec.Template.Metadata.Labels) {
						t.Errorf("%s: topology spread selector %v does not select its own pods", where, c.LabelSelector.MatchLabels)
					}
				}
				if name == "default" {
					for _, k := range []string{"kubernetes.io/hostname", "topology.kubernetes.io/zone"} {
						if spread[k] != "ScheduleAnyway" {
							t.Errorf("%s: no ScheduleAnyway spread over %s: %v", where, k, spread)
						}
					}
				}
			}
			if pods != len(services) {
				t.Errorf("%d Deployments, want %d", pods, len(services))
			}
			tests := 0
			for _, o := range m.all("Pod") {
				tests++
				var p pod
				o.decode(t, &p)
				where := "Pod " + o.Metadata.Name
				if o.Metadata.Annotations["helm.sh/hook"] != "test" {
					t.Errorf("%s: not a helm test hook", where)
				}
				if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
					t.Errorf("%s: automountServiceAccountToken is not false", where)
				}
				checkSecurityContext(t, where, p.Spec.SecurityContext, false, openshiftSets[name])
				for _, c := range p.Spec.Containers {
					checkSecurityContext(t, where+" container "+c.Name, c.SecurityContext, true, openshiftSets[name])
					checkResources(t, where+" container "+c.Name, c)
				}
			}
			if tests != 1 {
				t.Errorf("%d helm test pods, want 1", tests)
			}
		})
	}
}

// The helm test pod asks the gateway Service for /api/health and passes only on a 200.
func TestHelmTestChecksGatewayHealth(t *testing.T) {
	m := renderSet(t, "default")
	var p pod
	m.must(t, "Pod", fullname+"-test-health").decode(t, &p)
	c := p.Spec.Containers[0]
	url := ""
	for _, e := range c.Env {
		if e.Name == "URL" {
			url = e.Value
		}
	}
	if url != "http://"+fullname+"-gateway:80/api/health" {
		t.Errorf("test pod asks %q", url)
	}
	script := fmt.Sprint(m.must(t, "Pod", fullname+"-test-health").raw["spec"])
	if !strings.Contains(script, `test "$status" = 200`) {
		t.Errorf("test pod does not require a 200: %s", script)
	}
}

// Every Service selects the pods of a Deployment, on ports those pods have; every HPA and PDB
// targets an existing Deployment; a Deployment under an HPA has no replicas.
func TestSelectorsAndTargets(t *testing.T) {
	for _, name := range sortedNames(valueSets(t)) {
		t.Run(name, func(t *testing.T) {
			m := renderSet(t, name)
			deps := map[string]deployment{}
			for _, o := range m.all("Deployment") {
				var d deployment
				o.decode(t, &d)
				deps[o.Metadata.Name] = d
				if !subset(d.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels) {
					t.Errorf("Deployment %s: selector %v does not select its template", o.Metadata.Name, d.Spec.Selector.MatchLabels)
				}
			}
			for _, o := range m.all("Service") {
				var s service
				o.decode(t, &s)
				matched := false
				for _, d := range deps {
					if !subset(s.Spec.Selector, d.Spec.Template.Metadata.Labels) {
						continue
					}
					matched = true
					for _, p := range s.Spec.Ports {
						found := false
						for _, c := range d.Spec.Template.Spec.Containers {
							for _, cp := range c.Ports {
								if cp.Name == p.TargetPort || cp.ContainerPort == p.TargetPort {
									found = true
								}
							}
						}
						if !found {
							t.Errorf("Service %s: target port %v is no port of its pods", o.Metadata.Name, p.TargetPort)
						}
					}
				}
				if !matched {
					t.Errorf("Service %s: selector %v selects no Deployment's pods", o.Metadata.Name, s.Spec.Selector)
				}
			}
			hpa := map[string]bool{}
			for _, o := range m.all("HorizontalPodAutoscaler") {
				ref, _ := o.raw["spec"].(map[string]any)["scaleTargetRef"].(map[string]any)
				target, _ := ref["name"].(string)
				if ref["kind"] != "Deployment" || ref["apiVersion"] != "apps/v1" {
					t.Errorf("HPA %s: targets %v", o.Metadata.Name, ref)
				}
				if _, ok := deps[target]; !ok {
					t.Errorf("HPA %s: targets Deployment %q, not rendered", o.Metadata.Name, target)
				}
				hpa[target] = true
			}
			for n, d := range deps {
				if hpa[n] && d.Spec.Replicas != nil {
					t.Errorf("Deployment %s: replicas set under an HPA", n)
				}
				if !hpa[n] && d.Spec.Replicas == nil {
					t.Errorf("Deployment %s: no replicas and no HPA", n)
				}
			}
			for _, o := range m.all("PodDisruptionBudget") {
				var sel struct {
					Spec struct {
						Selector labelSelector `yaml:"selector"`
					} `yaml:"spec"`
				}
				o.decode(t, &sel)
				n := 0
				for _, d := range deps {
					if subset(sel.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels) {
						n++
					}
				}
				if n != 1 {
					t.Errorf("PDB %s: selects the pods of %d Deployments, want 1", o.Metadata.Name, n)
				}
			}
		})
	}
	// The production set scales with HPAs, the default one does not.
	if len(renderSet(t, "production").all("HorizontalPodAutoscaler")) == 0 {
		t.Error("production-values renders no HPA")
	}
	if len(renderSet(t, "default").all("HorizontalPodAutoscaler")) != 0 {
		t.Error("default values render an HPA")
	}
}

// Each service gets the URL of exactly the peers it calls in the code, pointing at their
// Services.
func TestPeerURLsFollowTheCode(t *testing.T) {
	graph := callGraph(t)
	for _, name := range sortedNames(valueSets(t)) {
		t.Run(name, func(t *testing.T) {
			m := renderSet(t, name)
			for _, svc := range services {
				env := m.env(t, svc)
				var got []string
				for k, v := range env {
					peer, ok := peerOf(k)
					if !ok {
						continue
					}
					got = append(got, peer)
					var s service
					m.must(t, "Service", fullname+"-"+peer).decode(t, &s)
					if want := fmt.Sprintf("http://%s-%s:%d", fullname, peer, s.Spec.Ports[0].Port); v != want {
						t.Errorf("%s: %s=%q, want %q", svc, k, v, want)
					}
				}
				sort.Strings(got)
				if !slices.Equal(got, graph[svc]) {
					t.Errorf("%s: peer URLs of %v; the code calls %v", svc, got, graph[svc])
				}
			}
		})
	}
}

// Every LINKMESH_ variable a service sees is one the README says it reads; every variable of the
// README a service reads can be set through values (some value set renders it).
func TestSettingsMatchTheReadme(t *testing.T) {
	settings := readmeSettings(t)
	reads := readBy(settings)
	seen := map[string]map[string]bool{}
	for _, s := range services {
		seen[s] = map[string]bool{}
	}
	for _, name := range sortedNames(valueSets(t)) {
		m := renderSet(t, name)
		for _, svc := range services {
			for k := range m.env(t, svc) {
				if !strings.HasPrefix(k, "LINKMESH_") {
					continue
				}
				seen[svc][k] = true
				if !reads[svc][k] {
					t.Errorf("%s: %s is set, but the README's settings table does not list %s as reading it", name, k, svc)
				}
			}
		}
	}
	for _, st := range settings {
		for _, svc := range st.Readers {
			if !seen[svc][st.Name] {
				t.Errorf("%s reads %s (README), but no value set renders it for %s", svc, st.Name, svc)
			}
		}
	}
	// The database is the service's own.
	m := renderSet(t, "default")
	for _, svc := range services {
		db, ok := m.env(t, svc)["LINKMESH_MONGODB_DATABASE"]
		if reads[svc]["LINKMESH_MONGODB_DATABASE"] && db != "linkmesh_"+svc {
			t.Errorf("%s: LINKMESH_MONGODB_DATABASE=%q, want linkmesh_%s", svc, db, svc)
		}
		if !reads[svc]["LINKMESH_MONGODB_DATABASE"] && ok {
			t.Errorf("%s: has a MongoDB database but reads none", svc)
		}
	}
	// Defaults the chart promises.
	gw := m.env(t, "gateway")
	if gw["LINKMESH_COOKIE_SECURE"] != "true" {
		t.Errorf("gateway: LINKMESH_COOKIE_SECURE=%q by default, want true", gw["LINKMESH_COOKIE_SECURE"])
	}
	for _, svc := range services {
		env := m.env(t, svc)
		if env["LINKMESH_SHUTDOWN_DRAIN"] != "5s" || env["OTEL_TRACES_SAMPLER"] != "parentbased_traceidratio" || env["OTEL_TRACES_SAMPLER_ARG"] != "0.01" {
			t.Errorf("%s: drain %q, sampler %q %q", svc, env["LINKMESH_SHUTDOWN_DRAIN"], env["OTEL_TRACES_SAMPLER"], env["OTEL_TRACES_SAMPLER_ARG"])
		}
		if _, ok := env["OTEL_SERVICE_NAME"]; ok {
			t.Errorf("%s: OTEL_SERVICE_NAME set; the service names itself", svc)
		}
	}
	for _, svc := range services {
		if got := renderSet(t, "production").env(t, svc)["OTEL_EXPORTER_OTLP_ENDPOINT"]; got != "http://otel-collector.observability:4318" {
			t.Errorf("production: %s OTEL_EXPORTER_OTLP_ENDPOINT=%q", svc, got)
		}
	}
}

// Secrets reach a service only by secretKeyRef, only the keys it reads (of the private keys, its
// own: secretKeyOf); the required ones are always there, from the chart's Secret or the existing
// one.
func TestSecretKeysPerService(t *testing.T) {
	reads := readBy(readmeSettings(t))
	secretKeys := map[string]bool{
		varInternalKey: true, varInternalCerts: true, "LINKMESH_IDENTITY_SECRET": true, "LINKMESH_MONGODB_URI": true, "LINKMESH_REDIS_URL": true,
		"LINKMESH_BOOTSTRAP_ADMIN_EMAIL": true, "LINKMESH_BOOTSTRAP_ADMIN_PASSWORD": true, "LINKMESH_CAPTCHA_SECRET": true,
		"LINKMESH_CAPTCHA_VERIFY_URL": true, "LINKMESH_OIDC_ISSUER": true, "LINKMESH_OIDC_CLIENT_ID": true,
	}
	for _, k := range internalMaterial() {
		secretKeys[k] = true
	}
	required := []string{varInternalKey, varInternalCerts, "LINKMESH_IDENTITY_SECRET", "LINKMESH_MONGODB_URI", "LINKMESH_REDIS_URL"}
	for _, name := range sortedNames(valueSets(t)) {
		t.Run(name, func(t *testing.T) {
			m := renderSet(t, name)
			secretName := m.secretName()
			if secretName != fullname {
				if _, ok := m.find("Secret", fullname); ok {
					t.Errorf("existingSecret set, but the chart still makes its own Secret")
				}
			}
			for _, o := range m.all("ConfigMap") {
				var cm configMap
				o.decode(t, &cm)
				for k := range cm.Data {
					if secretKeys[k] {
						t.Errorf("ConfigMap %s holds the secret %s", o.Metadata.Name, k)
					}
				}
			}
			for _, svc := range services {
				d := m.deployments(t)[svc]
				got := map[string]bool{}
				for _, c := range d.Spec.Template.Spec.Containers {
					for _, e := range c.Env {
						if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
							if secretKeys[e.Name] {
								t.Errorf("%s: %s given as a plain value", svc, e.Name)
							}
							continue
						}
						ref := e.ValueFrom.SecretKeyRef
						if want := secretKeyOf(svc, e.Name); ref.Name != secretName || ref.Key != want {
							t.Errorf("%s: %s from %s/%s, want %s/%s", svc, e.Name, ref.Name, ref.Key, secretName, want)
						}
						if !reads[svc][e.Name] {
							t.Errorf("%s: gets the secret %s, which it does not read", svc, e.Name)
						}
						got[e.Name] = true
					}
				}
				for _, k := range required {
					if reads[svc][k] && !got[k] {
						t.Errorf("%s: reads %s but does not get it", svc, k)
					}
				}
			}
		})
	}
	// With every optional key set in the chart's Secret, each reader gets it.
	m := renderSet(t, "generated-secrets")
	for _, svc := range services {
		env := m.env(t, svc)
		for k := range secretKeys {
			if reads[svc][k] && env[k] != "secret:"+secretKeyOf(svc, k) {
				t.Errorf("generated-secrets: %s reads %s but does not get it", svc, k)
			}
		}
	}
}

// A change of a setting rolls exactly the services that read it (checksum/config).
func TestConfigChecksums(t *testing.T) {
	base := renderSet(t, "default").deployments(t)
	changed := render(t, nil, "config.anonQuota=3").deployments(t)
	for _, svc := range services {
		a := base[svc].Spec.Template.Metadata.Annotations["checksum/config"]
		b := changed[svc].Spec.Template.Metadata.Annotations["checksum/config"]
		if a == "" || len(a) != 2*sha256.Size {
			t.Errorf("%s: checksum/config %q", svc, a)
		}
		if (a != b) != (svc == "quota") {
			t.Errorf("%s: checksum/config changed=%v after config.anonQuota changed", svc, a != b)
		}
		if base[svc].Spec.Template.Metadata.Annotations["checksum/secret"] == "" {
			t.Errorf("%s: no checksum/secret", svc)
		}
	}
}

// Images: <registry>/<repository>/<service>:<tag>[@digest], the tag defaulting to appVersion.
func TestImages(t *testing.T) {
	var chart struct {
		AppVersion string `yaml:"appVersion"`
	}
	readYAML(t, filepath.Join(chartDir(t), "Chart.yaml"), &chart)
	for svc, d := range renderSet(t, "default").deployments(t) {
		if got, want := d.Spec.Template.Spec.Containers[0].Image, "registry.example.com/linkmesh/"+svc+":"+chart.AppVersion; got != want {
			t.Errorf("default: %s image %q, want %q", svc, got, want)
		}
	}
	prod := renderSet(t, "production").deployments(t)
	if got, want := prod["gateway"].Spec.Template.Spec.Containers[0].Image,
		"registry.example.com/linkmesh/gateway:1.2.3@sha256:0000000000000000000000000000000000000000000000000000000000000001"; got != want {
		t.Errorf("production: gateway image %q, want %q", got, want)
	}
	if got := prod["auth"].Spec.Template.Spec.Containers[0].Image; got != "registry.example.com/linkmesh/auth:1.2.3" {
		t.Errorf("production: auth image %q", got)
	}
}

// With a mesh, pods ask for injection and the probes keep working (Istio rewrites them to the
// sidecar; the metrics port bypasses the proxy); the test pod stays out of the mesh.
func TestMeshes(t *testing.T) {
	for set, want := range map[string]map[string]string{
		"production":        {"sidecar.istio.io/inject": "true", "sidecar.istio.io/rewriteAppHTTPProbers": "true", "traffic.sidecar.istio.io/excludeInboundPorts": "9090"},
		"generated-secrets": {"linkerd.io/inject": "enabled", "config.linkerd.io/skip-inbound-ports": "9090"},
	} {
		m := renderSet(t, set)
		for svc, d := range m.deployments(t) {
			for k, v := range want {
				if got := d.Spec.Template.Metadata.Annotations[k]; got != v {
					t.Errorf("%s: %s pod annotation %s=%q, want %q", set, svc, k, got, v)
				}
			}
			if c := d.Spec.Template.Spec.Containers[0]; c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil {
				t.Errorf("%s: %s lost its HTTP readiness probe", set, svc)
			}
		}
		test := m.must(t, "Pod", fullname+"-test-health")
		if test.Metadata.Annotations["sidecar.istio.io/inject"] != "false" || test.Metadata.Annotations["linkerd.io/inject"] != "disabled" {
			t.Errorf("%s: the test pod may get a sidecar", set)
		}
	}
	for _, d := range renderSet(t, "default").deployments(t) {
		for k := range d.Spec.Template.Metadata.Annotations {
			if strings.Contains(k, "istio.io") || strings.Contains(k, "linkerd.io") {
				t.Errorf("default: mesh annotation %s", k)
			}
		}
	}
	if _, err := helmTemplate(t, nil, "mesh.istio.enabled=true", "mesh.linkerd.enabled=true"); err == nil {
		t.Error("both meshes at once rendered")
	}
}

// The metrics port is published only by the headless metrics Services, which nothing routes
// to from outside: not by the gateway's Service, Ingress or HTTPRoute.
func TestMetricsNotPublic(t *testing.T) {
	for _, name := range sortedNames(valueSets(t)) {
		t.Run(name, func(t *testing.T) {
			m := renderSet(t, name)
			metricsServices := map[string]bool{}
			for _, o := range m.all("Service") {
				var s service
				o.decode(t, &s)
				hasMetrics := false
				for _, p := range s.Spec.Ports {
					if p.Name == "metrics" || p.TargetPort == "metrics" || p.TargetPort == 9090 || p.Port == 9090 {
						hasMetrics = true
					}
				}
				if !hasMetrics {
					continue
				}
				metricsServices[o.Metadata.Name] = true
				if !strings.HasSuffix(o.Metadata.Name, "-metrics") || s.Spec.ClusterIP != "None" || len(s.Spec.Ports) != 1 {
					t.Errorf("Service %s publishes metrics but is not a headless metrics-only Service", o.Metadata.Name)
				}
			}
			gwName := fullname + "-gateway"
			if metricsServices[gwName] {
				t.Errorf("the gateway's public Service publishes the metrics port")
			}
			for _, o := range m.all("Ingress") {
				for _, backend := range findAll(o.raw, "service") {
					bm, _ := backend.(map[string]any)
					if bm["name"] != gwName {
						t.Errorf("Ingress %s routes to %v, not the gateway Service", o.Metadata.Name, bm["name"])
					}
					port, _ := bm["port"].(map[string]any)
					if port["name"] != "http" && port["number"] != 80 {
						t.Errorf("Ingress %s routes to port %v", o.Metadata.Name, port)
					}
				}
			}
			for _, o := range m.all("HTTPRoute") {
				for _, refs := range findAll(o.raw, "backendRefs") {
					for _, r := range refs.([]any) {
						rm := r.(map[string]any)
						if rm["name"] != gwName || rm["port"] != 80 {
							t.Errorf("HTTPRoute %s routes to %v:%v", o.Metadata.Name, rm["name"], rm["port"])
						}
					}
				}
			}
			for _, o := range m.all("ServiceMonitor") {
				sel := findAll(o.raw, "matchLabels")[0].(map[string]any)
				if sel["linkmesh.io/metrics"] != "true" {
					t.Errorf("ServiceMonitor %s selects more than the metrics Services: %v", o.Metadata.Name, sel)
				}
				for _, o2 := range m.all("Service") {
					match := true
					for k, v := range sel {
						if o2.Metadata.Labels[k] != v {
							match = false
						}
					}
					if match != metricsServices[o2.Metadata.Name] {
						t.Errorf("ServiceMonitor %s: selects Service %s = %v", o.Metadata.Name, o2.Metadata.Name, match)
					}
				}
			}
		})
	}
	if len(renderSet(t, "production").all("Ingress")) != 1 || len(renderSet(t, "production").all("HTTPRoute")) != 1 {
		t.Error("production-values renders no Ingress or HTTPRoute")
	}
}

// findAll returns every value under key anywhere in n.
func findAll(n any, key string) []any {
	var out []any
	switch v := n.(type) {
	case map[string]any:
		for k, c := range v {
			if k == key {
				out = append(out, c)
			}
			out = append(out, findAll(c, key)...)
		}
	case []any:
		for _, c := range v {
			out = append(out, findAll(c, key)...)
		}
	}
	return out
}

// The PrometheusRule carries the groups of files/alerts.yaml; the dashboards are one ConfigMap
// each, with the label Grafana's sidecar looks for.
func TestMonitoringObjects(t *testing.T) {
	m := renderSet(t, "production")
	var rule struct {
		Spec struct {
			Groups []struct {
				Name  string           `yaml:"name"`
				Rules []map[string]any `yaml:"rules"`
			} `yaml:"groups"`
		} `yaml:"spec"`
	}
	m.must(t, "PrometheusRule", fullname).decode(t, &rule)
	if len(rule.Spec.Groups) == 0 || len(rule.Spec.Groups[0].Rules) == 0 {
		t.Error("PrometheusRule without groups or rules")
	}
	if strings.Contains(fmt.Sprint(rule.Spec.Groups), "LINKMESH_JOB_REGEX") {
		t.Error("PrometheusRule still holds the LINKMESH_JOB_REGEX placeholder")
	}
	files, err := filepath.Glob(filepath.Join(chartDir(t), "files", "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in files/dashboards: %v", err)
	}
	got := 0
	for _, o := range m.all("ConfigMap") {
		if o.Metadata.Labels["grafana_dashboard"] != "1" {
			continue
		}
		got++
		var cm configMap
		o.decode(t, &cm)
		if len(cm.Data) != 1 {
			t.Errorf("dashboard ConfigMap %s holds %d files", o.Metadata.Name, len(cm.Data))
		}
		for k, v := range cm.Data {
			want, err := os.ReadFile(filepath.Join(chartDir(t), "files", "dashboards", k))
			if err != nil || strings.TrimSpace(string(want)) != strings.TrimSpace(v) {
				t.Errorf("dashboard ConfigMap %s: %s is not files/dashboards/%s", o.Metadata.Name, k, k)
			}
		}
	}
	if got != len(files) {
		t.Errorf("%d dashboard ConfigMaps for %d files", got, len(files))
	}
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule", "NetworkPolicy", "Ingress", "HTTPRoute", "HorizontalPodAutoscaler"} {
		if len(renderSet(t, "default").all(kind)) != 0 {
			t.Errorf("default values render a %s; it should be off by default", kind)
		}
	}
}

// checkClickSpool: the gateway keeps its click spool, which holds client addresses, in a
// memory-backed emptyDir (kept across a restart of the container, gone with the pod) large
// enough for LINKMESH_CLICK_SPOOL_MB.
func checkClickSpool(t *testing.T, where string, env map[string]string, c container, ps podSpec, sizeMB any) {
	t.Helper()
	path := env["LINKMESH_CLICK_SPOOL"]
	if env["LINKMESH_CLICK_SPOOL_MB"] != fmt.Sprint(sizeMB) {
		t.Errorf("%s: LINKMESH_CLICK_SPOOL_MB %q, values say %v", where, env["LINKMESH_CLICK_SPOOL_MB"], sizeMB)
	}
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == "" || !strings.HasPrefix(path, strings.TrimSuffix(vm.MountPath, "/")+"/") {
			continue
		}
		for _, v := range ps.Volumes {
			if v.Name != vm.Name {
				continue
			}
			limit, _ := v.EmptyDir["sizeLimit"].(string)
			mb, err := strconv.Atoi(strings.TrimSuffix(limit, "Mi"))
			if v.EmptyDir["medium"] != "Memory" || err != nil || fmt.Sprint(mb-1) != fmt.Sprint(sizeMB) {
				t.Errorf("%s: the click spool %s is on %v, want an emptyDir of medium Memory and sizeLimit %vMi + 1Mi", where, path, v.EmptyDir, sizeMB)
			}
			return
		}
	}
	t.Errorf("%s: LINKMESH_CLICK_SPOOL %q is on no mounted volume", where, path)
}
