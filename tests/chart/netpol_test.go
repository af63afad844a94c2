package chart

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
)

// The NetworkPolicies are evaluated the way Kubernetes does (a connection passes when an
// egress rule of every... any policy selecting the source allows it, or none selects it, and
// likewise for ingress at the destination) over the release's pods and a few pods and
// addresses outside it. What passes must be exactly the call graph of the code, plus the
// gateway from outside, Prometheus on the metrics ports, DNS, the datastores, the OTLP collector
// and the extra egress the values ask for.

type npPeer struct {
	PodSelector       *labelSelector `yaml:"podSelector"`
	NamespaceSelector *labelSelector `yaml:"namespaceSelector"`
	IPBlock           *struct {
		CIDR   string   `yaml:"cidr"`
		Except []string `yaml:"except"`
	} `yaml:"ipBlock"`
}

type npPort struct {
	Port     any    `yaml:"port"`
	EndPort  int    `yaml:"endPort"`
	Protocol string `yaml:"protocol"`
}

type npRule struct {
	From  []npPeer `yaml:"from"`
	To    []npPeer `yaml:"to"`
	Ports []npPort `yaml:"ports"`
}

type networkPolicy struct {
	name string
	Spec struct {
		PodSelector labelSelector `yaml:"podSelector"`
		PolicyTypes []string      `yaml:"policyTypes"`
		Ingress     []npRule      `yaml:"ingress"`
		Egress      []npRule      `yaml:"egress"`
	} `yaml:"spec"`
}

// endpoint is a pod (namespace set) or an address outside the cluster.
type endpoint struct {
	name      string
	namespace string
	labels    map[string]string
	ip        netip.Addr
	ports     map[string]int // named container ports
}

func selectorMatches(t testing.TB, s labelSelector, labels map[string]string) bool {
	t.Helper()
	if len(s.MatchExpressions) > 0 {
		t.Fatalf("matchExpressions are not evaluated by this test")
	}
	for k, v := range s.MatchLabels {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func peerMatches(t testing.TB, p npPeer, policyNamespace string, e endpoint) bool {
	t.Helper()
	if p.IPBlock != nil {
		prefix, err := netip.ParsePrefix(p.IPBlock.CIDR)
		if err != nil {
			t.Fatalf("ipBlock %q: %v", p.IPBlock.CIDR, err)
		}
		if !prefix.Contains(e.ip) {
			return false
		}
		for _, ex := range p.IPBlock.Except {
			if netip.MustParsePrefix(ex).Contains(e.ip) {
				return false
			}
		}
		return true
	}
	if e.namespace == "" {
		return false // selectors pick pods, never outside addresses
	}
	if p.NamespaceSelector != nil {
		if !selectorMatches(t, *p.NamespaceSelector, map[string]string{"kubernetes.io/metadata.name": e.namespace}) {
			return false
		}
	} else if e.namespace != policyNamespace {
		return false
	}
	return p.PodSelector == nil || selectorMatches(t, *p.PodSelector, e.labels)
}

func portMatches(ports []npPort, e endpoint, port int, protocol string) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		proto := p.Protocol
		if proto == "" {
			proto = "TCP"
		}
		if proto != protocol {
			continue
		}
		switch v := p.Port.(type) {
		case nil:
			return true
		case int:
			if v == port || (p.EndPort != 0 && port >= v && port <= p.EndPort) {
				return true
			}
		case string:
			if n, ok := e.ports[v]; ok && n == port {
				return true
			}
		}
	}
	return false
}

func selects(t testing.TB, np networkPolicy, e endpoint, policyType string) bool {
	t.Helper()
	return e.namespace == namespace && slices.Contains(np.Spec.PolicyTypes, policyType) && selectorMatches(t, np.Spec.PodSelector, e.labels)
}

// allowed tells whether src may open a connection to port/protocol of dst: src's policies let
// it out and dst's let it in.
func allowed(t testing.TB, nps []networkPolicy, src, dst endpoint, port int, protocol string) bool {
	t.Helper()
	return allowedSide(t, nps, "Egress", src, dst, port, protocol) && allowedSide(t, nps, "Ingress", src, dst, port, protocol)
}

// allowedSide tells whether the policies of one side (Egress: src's, Ingress: dst's) let the
// connection pass.
func allowedSide(t testing.TB, nps []networkPolicy, policyType string, src, dst endpoint, port int, protocol string) bool {
	t.Helper()
	subject, other := src, dst
	if policyType == "Ingress" {
		subject, other = dst, src
	}
	{
		selected := false
		for _, np := range nps {
			if !selects(t, np, subject, policyType) {
				continue
			}
			selected = true
			rules := np.Spec.Ingress
			if policyType == "Egress" {
				rules = np.Spec.Egress
			}
			for _, r := range rules {
				peers := r.From
				if policyType == "Egress" {
					peers = r.To
				}
				match := len(peers) == 0
				for _, p := range peers {
					if peerMatches(t, p, namespace, other) {
						match = true
					}
				}
				if match && portMatches(r.Ports, dst, port, protocol) {
					return true
				}
			}
		}
		return !selected
	}
}

func TestNetworkPolicies(t *testing.T) {
	graph := callGraph(t)
	reads := readBy(readmeSettings(t))
	enabled := 0
	for _, name := range sortedNames(valueSets(t)) {
		m := renderSet(t, name)
		if value(m.values, "networkPolicy.enabled") != true {
			if len(m.all("NetworkPolicy")) != 0 {
				t.Errorf("%s: NetworkPolicies rendered while networkPolicy.enabled is false", name)
			}
			continue
		}
		enabled++
		t.Run(name, func(t *testing.T) { checkNetworkPolicies(t, m, graph, reads) })
	}
	if enabled < 2 {
		t.Errorf("only %d value sets enable NetworkPolicies; want the production set and one with the defaults", enabled)
	}
}

func checkNetworkPolicies(t *testing.T, m manifests, graph map[string][]string, reads map[string]map[string]bool) {
	var nps []networkPolicy
	for _, o := range m.all("NetworkPolicy") {
		var np networkPolicy
		o.decode(t, &np)
		np.name = o.Metadata.Name
		nps = append(nps, np)
	}
	// One policy denies everything for every pod of the release.
	deny := false
	for _, np := range nps {
		if selectorMatches(t, np.Spec.PodSelector, releaseLabels()) && len(np.Spec.PodSelector.MatchLabels) > 0 &&
			slices.Contains(np.Spec.PolicyTypes, "Ingress") && slices.Contains(np.Spec.PolicyTypes, "Egress") &&
			len(np.Spec.Ingress) == 0 && len(np.Spec.Egress) == 0 && len(np.Spec.PodSelector.MatchLabels) == 2 {
			deny = true
		}
	}
	if !deny {
		t.Error("no default-deny policy over every pod of the release")
	}

	podIP := netip.MustParseAddr("10.244.1.7")
	pods := map[string]endpoint{}
	for svc, d := range m.deployments(t) {
		ports := map[string]int{}
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
			}
		}
		pods[svc] = endpoint{name: svc, namespace: namespace, labels: d.Spec.Template.Metadata.Labels, ip: podIP, ports: ports}
	}
	var testPod pod
	m.must(t, "Pod", fullname+"-test-health").decode(t, &testPod)
	tester := endpoint{name: "helm test", namespace: namespace, labels: testPod.Metadata.Labels, ip: podIP}
	stranger := endpoint{name: "a pod of another release", namespace: namespace, labels: map[string]string{"app.kubernetes.io/name": "other"}, ip: podIP}
	elsewhere := endpoint{name: "a pod in namespace default", namespace: "default", labels: map[string]string{"app": "x"}, ip: podIP}
	ingressController := endpoint{name: "ingress controller", namespace: "ingress-nginx", labels: map[string]string{"app.kubernetes.io/name": "ingress-nginx"}, ip: podIP}
	prometheus := endpoint{name: "prometheus", namespace: "monitoring", labels: map[string]string{"app.kubernetes.io/name": "prometheus"}, ip: podIP}
	dns := endpoint{name: "kube-dns", namespace: "kube-system", labels: map[string]string{"k8s-app": "kube-dns"}, ip: podIP}
	internet := endpoint{name: "an internet address", ip: netip.MustParseAddr("203.0.113.10")}
	metricsOn := value(m.values, "metrics.enabled") == true

	gatewayFrom, _ := value(m.values, "networkPolicy.gateway.from").([]any)
	// Between the release's services: exactly the call graph, on http only.
	for _, src := range services {
		for _, dst := range services {
			want := slices.Contains(graph[src], dst)
			// Each side on its own, so that neither allows more than the other (but the
			// gateway's ingress is open to anyone unless networkPolicy.gateway.from says).
			sides := []string{"Egress", "Ingress"}
			if dst == "gateway" && len(gatewayFrom) == 0 {
				sides = sides[:1]
			}
			for _, side := range sides {
				if got := allowedSide(t, nps, side, pods[src], pods[dst], 8080, "TCP"); got != want {
					t.Errorf("%s -> %s:http allowed by %s=%v; the code calls=%v", src, dst, side, got, want)
				}
			}
			if metricsOn && allowed(t, nps, pods[src], pods[dst], 9090, "TCP") {
				t.Errorf("%s -> %s:metrics allowed", src, dst)
			}
		}
	}
	// From outside the release.
	for _, svc := range services {
		for _, e := range []endpoint{tester, stranger, elsewhere, ingressController, prometheus} {
			want := false
			if svc == "gateway" {
				switch e.name {
				case "helm test":
					want = true
				case "ingress controller":
					want = true // the production set lets in only the ingress controller's namespace
				default:
					want = len(gatewayFrom) == 0
				}
			}
			if got := allowed(t, nps, e, pods[svc], 8080, "TCP"); got != want {
				t.Errorf("%s -> %s:http allowed=%v, want %v", e.name, svc, got, want)
			}
			if metricsOn {
				if got := allowed(t, nps, e, pods[svc], 9090, "TCP"); got != (e.name == "prometheus") {
					t.Errorf("%s -> %s:metrics allowed=%v", e.name, svc, got)
				}
			}
		}
		if allowed(t, nps, tester, pods[svc], 8080, "TCP") != (svc == "gateway") {
			t.Errorf("the test pod reaches %s: %v", svc, !(svc == "gateway"))
		}
	}

	// Out of the release: DNS, the datastores, the OTLP collector, the values' extra egress.
	datastore := func(key string) (endpoint, int) {
		port := 0
		if ports, _ := value(m.values, "networkPolicy."+key+".ports").([]any); len(ports) > 0 {
			port, _ = ports[0].(map[string]any)["port"].(int)
		}
		if to, _ := value(m.values, "networkPolicy."+key+".to").([]any); len(to) > 0 {
			// The set names where it runs: a pod matching its first peer.
			peer := to[0].(map[string]any)
			ns, _ := value(peer, "namespaceSelector.matchLabels").(map[string]any)
			labels, _ := value(peer, "podSelector.matchLabels").(map[string]any)
			e := endpoint{name: key, namespace: namespace, labels: map[string]string{}, ip: podIP}
			if n, ok := ns["kubernetes.io/metadata.name"].(string); ok {
				e.namespace = n
			}
			for k, v := range labels {
				e.labels[k] = fmt.Sprint(v)
			}
			return e, port
		}
		return internet, port
	}
	mongo, mongoPort := datastore("mongodb")
	redis, redisPort := datastore("redis")
	otlp, otlpPort := datastore("otlp")
	otelOn := value(m.values, "otel.endpoint") != ""
	for _, svc := range services {
		src := pods[svc]
		for _, proto := range []string{"UDP", "TCP"} {
			if !allowed(t, nps, src, dns, 53, proto) {
				t.Errorf("%s cannot reach DNS on 53/%s", svc, proto)
			}
		}
		if got, want := allowed(t, nps, src, mongo, mongoPort, "TCP"), reads[svc]["LINKMESH_MONGODB_URI"]; got != want {
			t.Errorf("%s -> MongoDB:%d allowed=%v, reads MongoDB=%v", svc, mongoPort, got, want)
		}
		if got, want := allowed(t, nps, src, redis, redisPort, "TCP"), reads[svc]["LINKMESH_REDIS_URL"]; got != want {
			t.Errorf("%s -> Redis:%d allowed=%v, reads Redis=%v", svc, redisPort, got, want)
		}
		if got := allowed(t, nps, src, otlp, otlpPort, "TCP"); got != otelOn {
			t.Errorf("%s -> OTLP:%d allowed=%v, tracing on=%v", svc, otlpPort, got, otelOn)
		}
		// Nothing else: not the services' own port elsewhere, not the internet, except for
		// the extra egress the values give.
		extra, _ := value(m.values, "services."+svc+".extraEgress").([]any)
		for _, port := range []int{80, 443, 8080} {
			want := false
			for _, r := range extra {
				for _, p := range r.(map[string]any)["ports"].([]any) {
					if p.(map[string]any)["port"] == port {
						want = true
					}
				}
			}
			if got := allowed(t, nps, src, internet, port, "TCP"); got != want {
				t.Errorf("%s -> the internet:%d allowed=%v, want %v", svc, port, got, want)
			}
			if allowed(t, nps, src, elsewhere, port, "TCP") {
				t.Errorf("%s -> %s:%d allowed", svc, elsewhere.name, port)
			}
		}
	}
	// The mesh's control plane, only with that mesh.
	istiod := endpoint{name: "istiod", namespace: "istio-system", labels: map[string]string{"app": "istiod"}, ip: podIP}
	linkerd := endpoint{name: "linkerd-destination", namespace: "linkerd", labels: map[string]string{"linkerd.io/control-plane-component": "destination"}, ip: podIP}
	for _, svc := range services {
		if got, want := allowed(t, nps, pods[svc], istiod, 15012, "TCP"), value(m.values, "mesh.istio.enabled") == true; got != want {
			t.Errorf("%s -> istiod:15012 allowed=%v, Istio on=%v", svc, got, want)
		}
		if got, want := allowed(t, nps, pods[svc], linkerd, 8086, "TCP"), value(m.values, "mesh.linkerd.enabled") == true; got != want {
			t.Errorf("%s -> linkerd-destination:8086 allowed=%v, Linkerd on=%v", svc, got, want)
		}
	}
	if allowed(t, nps, tester, internet, 443, "TCP") || allowed(t, nps, tester, pods["auth"], 8080, "TCP") {
		t.Error("the test pod reaches more than the gateway")
	}
}
