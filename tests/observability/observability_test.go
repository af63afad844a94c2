package observability

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// root is the repository root, two folders up from this package.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// exposed are the metric families the services expose (pkg/metrics), with their types: the
// only names the dashboards and rules may use.
var exposed = map[string]string{
	"linkmesh_http_requests_total":                    "counter",
	"linkmesh_http_request_duration_seconds":          "histogram",
	"linkmesh_http_requests_in_flight":                "gauge",
	"linkmesh_ready":                                  "gauge",
	"linkmesh_dependency_up":                          "gauge",
	"linkmesh_redirect_cache_hits_total":              "counter",
	"linkmesh_redirect_cache_misses_total":            "counter",
	"linkmesh_redirect_cache_fills_total":             "counter",
	"linkmesh_redirect_cache_entries":                 "gauge",
	"linkmesh_click_queue_depth":                      "gauge",
	"linkmesh_click_queue_capacity":                   "gauge",
	"linkmesh_click_spool_bytes":                      "gauge",
	"linkmesh_click_spool_capacity_bytes":             "gauge",
	"linkmesh_clicks_enqueued_total":                  "counter",
	"linkmesh_clicks_dropped_total":                   "counter",
	"linkmesh_clicks_published_total":                 "counter",
	"linkmesh_stream_lag_entries":                     "gauge",
	"linkmesh_stream_pending_entries":                 "gauge",
	"linkmesh_stream_entries_processed_total":         "counter",
	"linkmesh_stream_handler_errors_total":            "counter",
	"linkmesh_clicks_counted_until_timestamp_seconds": "gauge",
	"linkmesh_clicks_over_budget_total":               "counter",
	"linkmesh_quota_decisions_total":                  "counter",
	"linkmesh_login_attempts_total":                   "counter",
	"go_goroutines":                                   "gauge",
	"go_memstats_heap_inuse_bytes":                    "gauge",
	"go_gc_duration_seconds":                          "summary",
	"process_resident_memory_bytes":                   "gauge",
	"process_cpu_seconds_total":                       "counter",
	"process_open_fds":                                "gauge",
}

func TestReferencedNamesAreExposed(t *testing.T) {
	refs, err := Referenced(root(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) < 20 {
		t.Fatalf("only %d metric names referenced: %v", len(refs), refs)
	}
	for _, name := range Missing(refs, exposed) {
		t.Errorf("%s is not exposed by any service; used at %v", name, refs[name])
	}
	// Every exposed family is shown or alerted on somewhere.
	for fam, typ := range exposed {
		used := false
		for name := range refs {
			if name == fam || (typ == "histogram" || typ == "summary") && strings.HasPrefix(name, fam+"_") {
				used = true
			}
		}
		if !used {
			t.Errorf("%s (%s) is used by no dashboard and no rule", fam, typ)
		}
	}
	if len(refs["up"]) == 0 {
		t.Error("no rule watches up")
	}
}

func TestMissing(t *testing.T) {
	fams := map[string]string{"h": "histogram", "s": "summary", "c_total": "counter", "om": "counter", "g": "gauge"}
	refs := map[string][]string{}
	for _, n := range []string{"h_bucket", "h_sum", "h_count", "h", "s", "s_sum", "s_count", "s_bucket", "c_total", "om_total", "g", "g_total", "x", "up", "ALERTS"} {
		refs[n] = []string{"here"}
	}
	got := Missing(refs, fams)
	want := []string{"g_total", "h", "s_bucket", "x"}
	if !slices.Equal(got, want) {
		t.Errorf("Missing = %v, want %v", got, want)
	}
}

func TestExposedFamilies(t *testing.T) {
	text := `# HELP linkmesh_http_request_duration_seconds Duration.
# TYPE linkmesh_http_request_duration_seconds histogram
linkmesh_http_request_duration_seconds_bucket{service="gateway",method="GET",route="/:code",le="0.025"} 3
linkmesh_http_request_duration_seconds_bucket{service="gateway",method="GET",route="/:code",le="+Inf"} 4
linkmesh_http_request_duration_seconds_sum{service="gateway",method="GET",route="/:code"} 0.2
linkmesh_http_request_duration_seconds_count{service="gateway",method="GET",route="/:code"} 4
# TYPE linkmesh_ready gauge
linkmesh_ready{service="gateway"} 1
# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{service="gateway",quantile="0.5"} 0.0001
go_gc_duration_seconds_sum{service="gateway"} 0.01
go_gc_duration_seconds_count{service="gateway"} 9
`
	fams, err := ExposedFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"linkmesh_http_request_duration_seconds": "histogram", "linkmesh_ready": "gauge", "go_gc_duration_seconds": "summary"}
	if len(fams) != len(want) {
		t.Fatalf("families %v, want %v", fams, want)
	}
	for k, v := range want {
		if fams[k] != v {
			t.Errorf("family %s: %q, want %q", k, fams[k], v)
		}
	}
	refs := map[string][]string{"linkmesh_http_request_duration_seconds_bucket": {"a"}, "go_gc_duration_seconds_sum": {"b"}, "linkmesh_ready": {"c"}}
	if m := Missing(refs, fams); len(m) != 0 {
		t.Errorf("Missing = %v", m)
	}
}

func TestReplaceVariables(t *testing.T) {
	for in, want := range map[string]string{
		`rate(x{namespace=~"$namespace", service="${service}"}[$__rate_interval])`: `rate(x{namespace=~"value", service="value"}[5m])`,
		`increase(x[$__range])`:        `increase(x[6h])`,
		`x{a="${a:regex}", b="[[b]]"}`: `x{a="value", b="value"}`,
		`x / $__range_s`:               `x / 21600`,
	} {
		got, err := replaceVariables(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got != want {
			t.Errorf("replaceVariables(%s) = %s, want %s", in, got, want)
		}
	}
	if _, err := replaceVariables(`x[$__unknown]`); err == nil {
		t.Error("an unknown built-in variable passed")
	}
}

func TestVariableQuery(t *testing.T) {
	for in, want := range map[string]string{
		`label_values(linkmesh_ready, namespace)`:                             `linkmesh_ready`,
		`label_values(linkmesh_ready{namespace=~"$namespace"}, service)`:      `linkmesh_ready{namespace=~"$namespace"}`,
		`query_result(sum by (pod) (linkmesh_ready))`:                         `sum by (pod) (linkmesh_ready)`,
		`label_values(namespace)`:                                             ``,
		`metrics(linkmesh_.*)`:                                                ``,
		` label_values( go_goroutines{service="gateway"} , pod ) `:            `go_goroutines{service="gateway"}`,
		`label_values(sum by (pod) (rate(x_total[5m])), pod)`:                 `sum by (pod) (rate(x_total[5m]))`,
		`label_values(linkmesh_http_requests_total{code=~"5.."}, route)`:      `linkmesh_http_requests_total{code=~"5.."}`,
		`label_values(linkmesh_http_requests_total{route="/a,b"}, namespace)`: `linkmesh_http_requests_total{route="/a,b"}`,
	} {
		got, err := variableQuery(in)
		if err != nil || got != want {
			t.Errorf("variableQuery(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := variableQuery(`something(else)`); err == nil {
		t.Error("an unknown variable query passed")
	}
}

// dashboard is what the tests read of a dashboard.
type dashboard struct {
	UID           string          `json:"uid"`
	Title         string          `json:"title"`
	SchemaVersion int             `json:"schemaVersion"`
	Panels        []dashPanel     `json:"panels"`
	Templating    json.RawMessage `json:"templating"`
}

type dashPanel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	Targets    []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Links []struct {
				Title string `json:"title"`
				URL   string `json:"url"`
			} `json:"links"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Panels []dashPanel `json:"panels"`
	Repeat string      `json:"repeat"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type variable struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Query any    `json:"query"`
}

// The dashboards and the service whose traces each panel links to; "" means the panel's
// series each link to their own service's traces (${__field.labels.service}) or to the
// repeated row's (${service}).
var dashboards = map[string]struct {
	uid      string
	services []string
}{
	"golden-signals.json": {"linkmesh-golden-signals", []string{"${__field.labels.service}", "${service}"}},
	"redirects.json":      {"linkmesh-redirects", []string{"gateway"}},
	"click-pipeline.json": {"linkmesh-click-pipeline", []string{"gateway", "analytics"}},
	"quotas-logins.json":  {"linkmesh-quotas-logins", []string{"quota", "auth"}},
}

func TestDashboards(t *testing.T) {
	dir := filepath.Join(root(t), DashboardsDir)
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(dashboards) {
		t.Errorf("dashboards %v, want the %d known ones", files, len(dashboards))
	}
	p := NewParser()
	uids := map[string]bool{}
	for _, f := range files {
		base := filepath.Base(f)
		t.Run(base, func(t *testing.T) {
			want, ok := dashboards[base]
			if !ok {
				t.Fatalf("unknown dashboard %s", base)
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var d dashboard
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			if d.UID != want.uid || len(d.UID) > 40 || uids[d.UID] {
				t.Errorf("uid %q, want %q (stable, unique, at most 40 characters)", d.UID, want.uid)
			}
			uids[d.UID] = true
			if d.SchemaVersion < 39 {
				t.Errorf("schemaVersion %d, want >= 39", d.SchemaVersion)
			}
			checkVariables(t, d.Templating)
			var panels int
			var walk func([]dashPanel)
			walk = func(ps []dashPanel) {
				for _, pn := range ps {
					walk(pn.Panels)
					if pn.Type == "row" {
						continue
					}
					panels++
					checkPanel(t, p, pn, want.services)
				}
			}
			walk(d.Panels)
			if panels < 4 {
				t.Errorf("%d panels", panels)
			}
		})
	}
}

func checkVariables(t *testing.T, raw json.RawMessage) {
	t.Helper()
	var tm struct {
		List []variable `json:"list"`
	}
	if err := json.Unmarshal(raw, &tm); err != nil {
		t.Fatal(err)
	}
	vars := map[string]variable{}
	for _, v := range tm.List {
		vars[v.Name] = v
	}
	for name, want := range map[string][2]string{"datasource": {"datasource", "prometheus"}, "traces": {"datasource", "tempo"}} {
		if v := vars[name]; v.Type != want[0] || v.Query != want[1] {
			t.Errorf("variable %s: type %q query %v, want a %s variable of %s", name, v.Type, v.Query, want[0], want[1])
		}
	}
	if v := vars["namespace"]; v.Type != "query" {
		t.Errorf("variable namespace: type %q, want query", v.Type)
	}
}

var (
	namespaceMatcher = regexp.MustCompile(`namespace=~"\$namespace"`)
	tracesQuery      = regexp.MustCompile(`resource\.service\.name%3D%5C%22(.+?)%5C%22`)
)

func checkPanel(t *testing.T, p parser.Parser, pn dashPanel, services []string) {
	t.Helper()
	if pn.Datasource == nil || pn.Datasource.Type != "prometheus" || pn.Datasource.UID != "${datasource}" {
		t.Errorf("panel %q: datasource %+v, want prometheus ${datasource}", pn.Title, pn.Datasource)
	}
	if len(pn.Targets) == 0 {
		t.Errorf("panel %q has no query", pn.Title)
	}
	for _, tg := range pn.Targets {
		if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q target %s: datasource %+v", pn.Title, tg.RefID, tg.Datasource)
		}
		expr, err := replaceVariables(tg.Expr)
		if err != nil {
			t.Errorf("panel %q target %s: %v", pn.Title, tg.RefID, err)
			continue
		}
		e, err := p.ParseExpr(expr)
		if err != nil {
			t.Errorf("panel %q target %s: %v\n%s", pn.Title, tg.RefID, err, tg.Expr)
			continue
		}
		// Every selector keeps to the chosen namespace.
		for _, sel := range parser.ExtractSelectors(e) {
			found := false
			for _, m := range sel {
				found = found || m.Name == "namespace"
			}
			if !found {
				t.Errorf("panel %q target %s: a selector ignores $namespace: %s", pn.Title, tg.RefID, tg.Expr)
			}
		}
		if !namespaceMatcher.MatchString(tg.Expr) {
			t.Errorf("panel %q target %s: no namespace=~\"$namespace\"", pn.Title, tg.RefID)
		}
	}
	links := pn.FieldConfig.Defaults.Links
	if len(links) != 1 {
		t.Errorf("panel %q: %d data links, want one to its service's traces", pn.Title, len(links))
		return
	}
	u := links[0].URL
	m := tracesQuery.FindStringSubmatch(u)
	if !strings.HasPrefix(u, "/explore?") || !strings.Contains(u, "${traces}") || m == nil {
		t.Errorf("panel %q: data link %q is not an Explore query of ${traces} by resource.service.name", pn.Title, u)
		return
	}
	if !slices.Contains(services, m[1]) {
		t.Errorf("panel %q: links to the traces of %q, want one of %v", pn.Title, m[1], services)
	}
}

func TestRules(t *testing.T) {
	path := filepath.Join(root(t), AlertsFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range ValidateRules(raw) {
		t.Errorf("rules: %v", err)
	}
	groups, err := ReadRules(path)
	if err != nil {
		t.Fatal(err)
	}
	alerts := map[string]Rule{}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				if !regexp.MustCompile(`^[a-z_]+:[a-z_]+:[a-z0-9_]+$`).MatchString(r.Record) {
					t.Errorf("record %s does not follow level:metric:operations", r.Record)
				}
				continue
			}
			alerts[r.Alert] = r
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, s)
			}
			for _, a := range []string{"summary", "description", "runbook"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("alert %s has no %s annotation", r.Alert, a)
				}
			}
			if r.For == "" && r.Alert != "LinkmeshClicksDropped" {
				t.Errorf("alert %s fires on one evaluation; give it a for:", r.Alert)
			}
			// Each alert is explained by the comment right above it.
			if !regexp.MustCompile(`(?m)^\s*#.*\n\s*- alert: ` + r.Alert + `\n`).Match(raw) {
				t.Errorf("alert %s has no comment explaining its threshold", r.Alert)
			}
		}
	}
	for _, want := range []string{
		"LinkmeshRedirectErrorBudgetBurnFast", "LinkmeshRedirectErrorBudgetBurnSlow",
		"LinkmeshRedirectLatencyBudgetBurnFast", "LinkmeshRedirectLatencyBudgetBurnSlow",
		"LinkmeshClickStreamLagGrowing", "LinkmeshClicksDropped", "LinkmeshPodNotReady",
		"LinkmeshServiceNotReady", "LinkmeshTargetDown", "LinkmeshDependencyDown",
	} {
		if _, ok := alerts[want]; !ok {
			t.Errorf("no alert %s", want)
		}
	}
	// The latency SLO counts the 25 ms bucket of the redirect histogram.
	qs, err := RuleQueries(root(t), path)
	if err != nil {
		t.Fatal(err)
	}
	var le025 bool
	for _, q := range qs {
		e, err := NewParser().ParseExpr(q.Expr)
		if err != nil {
			t.Fatal(err)
		}
		for _, sel := range parser.ExtractSelectors(e) {
			var bucket, le bool
			for _, m := range sel {
				bucket = bucket || m.Value == "linkmesh_http_request_duration_seconds_bucket"
				le = le || (m.Name == "le" && m.Value == "0.025")
			}
			le025 = le025 || bucket && le
		}
	}
	if !le025 {
		t.Error(`no rule counts linkmesh_http_request_duration_seconds_bucket{le="0.025"}`)
	}
}

// TestPromtool runs promtool check rules on the rule file when a promtool is at hand
// (LINKMESH_PROMTOOL or PATH); the test above already runs the same validation in process.
func TestPromtool(t *testing.T) {
	tool := os.Getenv("LINKMESH_PROMTOOL")
	if tool == "" {
		var err error
		if tool, err = exec.LookPath("promtool"); err != nil {
			t.Skip("no promtool (LINKMESH_PROMTOOL or PATH)")
		}
	}
	raw, err := os.ReadFile(filepath.Join(root(t), AlertsFile))
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(f, wrapGroups(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "check", "rules", f).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// wrapGroups makes a rule file of the list of groups.
func wrapGroups(list []byte) []byte {
	var b strings.Builder
	b.WriteString("groups:\n")
	for _, line := range strings.SplitAfter(string(list), "\n") {
		if line != "" {
			b.WriteString("  " + line)
		}
	}
	return []byte(b.String())
}

// Every latency panel over the request histograms shows its exemplars: a slow bucket links to
// the trace of one of its requests (the services serve them in the OpenMetrics exposition).
func TestLatencyPanelsShowExemplars(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root(t), DashboardsDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string  `json:"title"`
		Panels  []panel `json:"panels"`
		Targets []struct {
			Expr     string `json:"expr"`
			Exemplar bool   `json:"exemplar"`
		} `json:"targets"`
	}
	latency := 0
	var walk func(file string, ps []panel)
	walk = func(file string, ps []panel) {
		for _, p := range ps {
			walk(file, p.Panels)
			for _, tg := range p.Targets {
				if !strings.Contains(tg.Expr, "histogram_quantile") || !strings.Contains(tg.Expr, "linkmesh_http_request_duration_seconds_bucket") {
					continue
				}
				latency++
				if !tg.Exemplar {
					t.Errorf("%s: panel %q does not show exemplars", filepath.Base(file), p.Title)
				}
			}
		}
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels []panel `json:"panels"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		walk(f, d.Panels)
	}
	if latency == 0 {
		t.Fatal("no latency panel found")
	}
}
