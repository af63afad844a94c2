// Package observability reads the Grafana dashboards and Prometheus rules shipped with the
// Helm chart (charts/linkmesh/files/dashboards/*.json and charts/linkmesh/files/alerts.yaml),
// parses every PromQL expression in them with Prometheus' own parser, and tells which metric
// names they use, so that a test can hold them against what the services expose.
//
//	refs, err := observability.Referenced(root)             // metric name → where it is used
//	fams, err := observability.ExposedFamilies(resp.Body)   // one /metrics answer
//	missing := observability.Missing(refs, fams)            // names no service exposes
package observability

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	texttemplate "text/template"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// Where the chart keeps them, relative to the repository root.
const (
	DashboardsDir = "charts/linkmesh/files/dashboards"
	AlertsFile    = "charts/linkmesh/files/alerts.yaml"
)

// Query is one PromQL expression of a dashboard or a rule file.
type Query struct {
	File  string // relative to the repository root
	Where string // the panel and target, the template variable, or the rule
	Expr  string // as written
	// Grafana variables replaced by values the parser accepts (for rules: Expr).
	Parsable string
	// Recorded is the series a recording rule writes, empty for everything else.
	Recorded string
}

// Place is "file: where" of q.
func (q Query) Place() string { return q.File + ": " + q.Where }

// NewParser is the PromQL parser Prometheus uses by default (no experimental features).
func NewParser() parser.Parser { return parser.NewParser(parser.Options{}) }

// Queries returns every PromQL expression of the dashboards and of the rule file under root.
func Queries(root string) ([]Query, error) {
	files, err := filepath.Glob(filepath.Join(root, DashboardsDir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no dashboard in %s", filepath.Join(root, DashboardsDir))
	}
	sort.Strings(files)
	var out []Query
	for _, f := range files {
		qs, err := DashboardQueries(root, f)
		if err != nil {
			return nil, err
		}
		out = append(out, qs...)
	}
	qs, err := RuleQueries(root, filepath.Join(root, AlertsFile))
	if err != nil {
		return nil, err
	}
	return append(out, qs...), nil
}

// RuleGroup is one group of the rule file, as Prometheus reads it.
type RuleGroup struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval,omitempty"`
	Rules    []Rule `yaml:"rules"`
}

// Rule is a recording or an alerting rule.
type Rule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// ReadRules reads the rule file: a YAML list of rule groups (the PrometheusRule's
// spec.groups), refusing fields Prometheus does not know.
func ReadRules(path string) ([]RuleGroup, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var groups []RuleGroup
	if err := dec.Decode(&groups); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return groups, nil
}

// RuleQueries returns the expression of every rule in the rule file at path.
func RuleQueries(root, path string) ([]Query, error) {
	groups, err := ReadRules(path)
	if err != nil {
		return nil, err
	}
	rel := relPath(root, path)
	var out []Query
	for _, g := range groups {
		for i, r := range g.Rules {
			where := fmt.Sprintf("group %s rule %d", g.Name, i+1)
			switch {
			case r.Alert != "":
				where = fmt.Sprintf("group %s alert %s", g.Name, r.Alert)
			case r.Record != "":
				where = fmt.Sprintf("group %s record %s", g.Name, r.Record)
			}
			out = append(out, Query{File: rel, Where: where, Expr: r.Expr, Parsable: r.Expr, Recorded: r.Record})
		}
	}
	return out, nil
}

// templateFuncs are the names of Prometheus' alert template functions (prometheus/template),
// for parsing annotations as Prometheus does; they are never called here.
var templateFuncs = func() texttemplate.FuncMap {
	m := texttemplate.FuncMap{}
	for _, name := range []string{"query", "first", "label", "value", "strvalue", "args", "reReplaceAll",
		"safeHtml", "match", "title", "toUpper", "toLower", "graphLink", "tableLink", "sortByLabel",
		"stripPort", "stripDomain", "humanize", "humanize1024", "humanizeDuration", "humanizePercentage",
		"humanizeTimestamp", "toTime", "toDuration", "now", "pathPrefix", "externalURL", "parseDuration",
		"urlQueryEscape"} {
		m[name] = func(...any) any { return nil }
	}
	return m
}()

var (
	labelNameRe  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	metricNameRe = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
)

// ValidateRules checks a rule file (a YAML list of rule groups) the way Prometheus checks
// one when it loads it (model/rulefmt): known fields only, named and unique groups, valid
// intervals and durations, exactly one of record and alert, an expression the PromQL parser
// accepts, valid recording-rule and label names, no for or annotations on recording rules,
// and label and annotation templates that parse with Prometheus' template functions.
func ValidateRules(content []byte) []error {
	dec := yaml.NewDecoder(bytes.NewReader(content))
	dec.KnownFields(true)
	var groups []RuleGroup
	if err := dec.Decode(&groups); err != nil {
		return []error{err}
	}
	p := NewParser()
	var errs []error
	seen := map[string]bool{}
	for gi, g := range groups {
		gname := g.Name
		if gname == "" {
			errs = append(errs, fmt.Errorf("group %d: no name", gi+1))
			gname = fmt.Sprintf("#%d", gi+1)
		}
		if seen[g.Name] {
			errs = append(errs, fmt.Errorf("group %s: name used twice", gname))
		}
		seen[g.Name] = true
		if g.Interval != "" {
			if _, err := model.ParseDuration(g.Interval); err != nil {
				errs = append(errs, fmt.Errorf("group %s: interval: %w", gname, err))
			}
		}
		if len(g.Rules) == 0 {
			errs = append(errs, fmt.Errorf("group %s: no rules", gname))
		}
		for ri, r := range g.Rules {
			where := fmt.Sprintf("group %s rule %d (%s%s)", gname, ri+1, r.Alert, r.Record)
			bad := func(format string, args ...any) {
				errs = append(errs, fmt.Errorf(where+": "+format, args...))
			}
			if (r.Record == "") == (r.Alert == "") {
				bad("exactly one of record and alert must be set")
			}
			if strings.TrimSpace(r.Expr) == "" {
				bad("no expr")
			} else if _, err := p.ParseExpr(r.Expr); err != nil {
				bad("could not parse expression: %v", err)
			}
			if r.For != "" {
				if _, err := model.ParseDuration(r.For); err != nil {
					bad("for: %v", err)
				}
			}
			if r.Record != "" {
				if !metricNameRe.MatchString(r.Record) {
					bad("invalid recording rule name %q", r.Record)
				}
				if r.For != "" || len(r.Annotations) > 0 {
					bad("a recording rule has no for and no annotations")
				}
			}
			for k, v := range r.Labels {
				if !labelNameRe.MatchString(k) || k == model.MetricNameLabel {
					bad("invalid label name %q", k)
				}
				if !model.LabelValue(v).IsValid() {
					bad("invalid label value %q", v)
				}
			}
			for k := range r.Annotations {
				if !labelNameRe.MatchString(k) {
					bad("invalid annotation name %q", k)
				}
			}
			if r.Alert == "" {
				continue
			}
			defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
			for kind, m := range map[string]map[string]string{"label": r.Labels, "annotation": r.Annotations} {
				for k, v := range m {
					if _, err := texttemplate.New(k).Funcs(templateFuncs).Option("missingkey=zero").Parse(defs + v); err != nil {
						bad("%s %s: %v", kind, k, err)
					}
				}
			}
		}
	}
	return errs
}

// DashboardQueries returns the expressions of one dashboard: every panel target's expr (rows'
// panels included) and the queries of its template variables.
func DashboardQueries(root, path string) ([]Query, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rel := relPath(root, path)
	var out []Query
	var walk func(ps []panel) error
	walk = func(ps []panel) error {
		for _, p := range ps {
			for _, t := range p.Targets {
				if strings.TrimSpace(t.Expr) == "" {
					continue
				}
				parsable, err := replaceVariables(t.Expr)
				if err != nil {
					return fmt.Errorf("%s: panel %q target %s: %w", rel, p.Title, t.RefID, err)
				}
				out = append(out, Query{File: rel, Where: fmt.Sprintf("panel %q (id %d) target %s", p.Title, p.ID, t.RefID), Expr: t.Expr, Parsable: parsable})
			}
			if err := walk(p.Panels); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(d.Panels); err != nil {
		return nil, err
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q string
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var obj struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &obj); err != nil {
				return nil, fmt.Errorf("%s: variable %s: query is neither a string nor an object: %w", rel, v.Name, err)
			}
			q = obj.Query
		}
		expr, err := variableQuery(q)
		if err != nil {
			return nil, fmt.Errorf("%s: variable %s: %w", rel, v.Name, err)
		}
		if expr == "" {
			continue
		}
		parsable, err := replaceVariables(expr)
		if err != nil {
			return nil, fmt.Errorf("%s: variable %s: %w", rel, v.Name, err)
		}
		out = append(out, Query{File: rel, Where: "variable " + v.Name, Expr: q, Parsable: parsable})
	}
	return out, nil
}

type panel struct {
	ID      int    `json:"id"`
	Title   string `json:"title"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

var (
	labelValuesRe = regexp.MustCompile(`^\s*label_values\(\s*(.*?)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)
	labelOnlyRe   = regexp.MustCompile(`^\s*label_values\(\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)
	queryResultRe = regexp.MustCompile(`^\s*query_result\((.*)\)\s*$`)
	noMetricRe    = regexp.MustCompile(`^\s*(label_names|metrics)\(.*\)\s*$`)
)

// variableQuery returns the PromQL inside a Grafana Prometheus variable query:
// label_values(<selector>, label), query_result(<expr>); "" for the forms that name no
// metric (label_values(label), label_names(), metrics(regex)).
func variableQuery(q string) (string, error) {
	if m := labelValuesRe.FindStringSubmatch(q); m != nil {
		return m[1], nil
	}
	if m := queryResultRe.FindStringSubmatch(q); m != nil {
		return m[1], nil
	}
	if labelOnlyRe.MatchString(q) || noMetricRe.MatchString(q) {
		return "", nil
	}
	return "", fmt.Errorf("unknown variable query %q", q)
}

// Grafana's variables: $name, ${name}, ${name:format} and [[name]].
var variableRe = regexp.MustCompile(`\$\{([a-zA-Z0-9_.]+)(?::[a-zA-Z]+)?\}|\$([a-zA-Z0-9_]+)|\[\[([a-zA-Z0-9_.]+)(?::[a-zA-Z]+)?\]\]`)

// builtins are Grafana's global variables with a value of the right kind for the parser.
var builtins = map[string]string{
	"__rate_interval": "5m", "__interval": "1m", "__range": "6h",
	"__interval_ms": "60000", "__range_s": "21600", "__range_ms": "21600000",
}

// replaceVariables gives every Grafana variable in expr a value the parser accepts: the
// interval and range variables a duration (or a number for their _s and _ms forms), the
// dashboard's own variables a plain word (they are used inside label matchers' strings).
func replaceVariables(expr string) (string, error) {
	var err error
	out := variableRe.ReplaceAllStringFunc(expr, func(m string) string {
		sub := variableRe.FindStringSubmatch(m)
		name := sub[1] + sub[2] + sub[3]
		if strings.HasPrefix(name, "__") {
			v, ok := builtins[name]
			if !ok {
				err = fmt.Errorf("unknown Grafana variable %s", m)
			}
			return v
		}
		return "value"
	})
	return out, err
}

// Metrics returns the metric names an expression selects, sorted. A selector without a
// fixed name (a regular expression on __name__) is an error: it cannot be checked.
func Metrics(p parser.Parser, expr string) ([]string, error) {
	e, err := p.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	var bad error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		if name == "" {
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
		}
		if name == "" {
			bad = fmt.Errorf("selector %s names no single metric", vs)
			return nil
		}
		names[name] = true
		return nil
	})
	if bad != nil {
		return nil, bad
	}
	return slices.Sorted(maps.Keys(names)), nil
}

// Referenced parses every expression of the dashboards and the rule file under root and
// returns each metric name they use with the places using it ("file: where"). The series a
// recording rule of the rule file writes are left out when the rule file uses them (Prometheus
// makes them); a dashboard using one keeps it, as no service exposes it.
func Referenced(root string) (map[string][]string, error) {
	qs, err := Queries(root)
	if err != nil {
		return nil, err
	}
	recorded := map[string]bool{}
	for _, q := range qs {
		if q.Recorded != "" {
			recorded[q.Recorded] = true
		}
	}
	p := NewParser()
	refs := map[string][]string{}
	var errs []error
	for _, q := range qs {
		names, err := Metrics(p, q.Parsable)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", q.Place(), err))
			continue
		}
		for _, n := range names {
			if recorded[n] && q.File == AlertsFile {
				continue
			}
			refs[n] = append(refs[n], q.Place())
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return refs, nil
}

// Generated are series Prometheus (or kube-state-metrics) makes, which no service exposes.
var Generated = map[string]bool{
	"up": true, "scrape_duration_seconds": true, "scrape_samples_scraped": true,
	"scrape_samples_post_metric_relabeling": true, "scrape_series_added": true,
	"ALERTS": true, "ALERTS_FOR_STATE": true,
	// kube-state-metrics, which the readiness alerts read: a pod that never became ready
	// never served its own metrics.
	"kube_pod_status_ready": true, "kube_pod_status_phase": true, "kube_deployment_status_replicas_available": true,
}

// ExposedFamilies reads one answer of a /metrics endpoint in the Prometheus text format and
// returns its metric families' names with their types ("counter", "gauge", "histogram",
// "summary", "untyped", …).
func ExposedFamilies(r io.Reader) (map[string]string, error) {
	tp := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := tp.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(fams))
	for name, f := range fams {
		out[name] = strings.ToLower(f.GetType().String())
	}
	return out, nil
}

// Missing returns, sorted, the referenced names that none of the exposed families
// (name → type, merged over every service) provides. A classic histogram's family X provides
// X_bucket, X_sum and X_count (not X itself), a summary X provides X, X_sum and X_count, and a
// counter family named without its _total suffix (OpenMetrics) provides X_total. Names
// Prometheus makes itself (Generated) are never missing.
func Missing(refs map[string][]string, exposed map[string]string) []string {
	var out []string
	for name := range refs {
		if Generated[name] || provides(exposed, name) {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func provides(exposed map[string]string, name string) bool {
	if t, ok := exposed[name]; ok {
		return t != "histogram" && t != "gauge_histogram"
	}
	for suffix, types := range map[string][]string{
		"_bucket": {"histogram", "gauge_histogram"},
		"_sum":    {"histogram", "gauge_histogram", "summary"},
		"_count":  {"histogram", "gauge_histogram", "summary"},
		"_total":  {"counter"},
	} {
		if base, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(types, exposed[base]) {
			return true
		}
	}
	return false
}

func relPath(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil {
		return filepath.ToSlash(rel)
	}
	return path
}
