package chart

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

const configImport = "github.com/linkmesh/linkmesh/pkg/config"

// callGraph reads who calls whom from the code: every env.Peer(<config>.<Service>, ...) call in
// services/<svc>/internal/app/*.go (tests excluded), with the constant resolved through
// pkg/config. The result maps a service to the sorted services it calls.
func callGraph(t testing.TB) map[string][]string {
	t.Helper()
	root := repoRoot(t)
	consts := serviceConstants(t, filepath.Join(root, "pkg", "config"))
	graph := map[string][]string{}
	for _, svc := range services {
		files, err := filepath.Glob(filepath.Join(root, "services", svc, "internal", "app", "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			alias := importName(file, configImport)
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				fun, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || fun.Sel.Name != "Peer" {
					return true
				}
				arg, ok := call.Args[0].(*ast.SelectorExpr)
				if !ok {
					t.Errorf("%s: Peer called with %s, not a pkg/config constant", fset.Position(call.Pos()), nodeText(call.Args[0]))
					return true
				}
				pkg, ok := arg.X.(*ast.Ident)
				if !ok || alias == "" || pkg.Name != alias {
					t.Errorf("%s: Peer's first argument is not from %s", fset.Position(call.Pos()), configImport)
					return true
				}
				peer, ok := consts[arg.Sel.Name]
				if !ok {
					t.Errorf("%s: %s.%s is not a service constant of pkg/config", fset.Position(call.Pos()), pkg.Name, arg.Sel.Name)
					return true
				}
				seen[peer] = true
				return true
			})
		}
		calls := []string{}
		for p := range seen {
			calls = append(calls, p)
		}
		sort.Strings(calls)
		graph[svc] = calls
	}
	return graph
}

// importName is the name file uses for the import path, "" if it does not import it.
func importName(file *ast.File, path string) string {
	for _, imp := range file.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if p != path {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name
		}
		return filepath.Base(path)
	}
	return ""
}

func nodeText(n ast.Node) string {
	return strings.TrimSpace(strings.ReplaceAll(sprintNode(n), "\n", " "))
}

func sprintNode(n ast.Node) string {
	switch v := n.(type) {
	case *ast.Ident:
		return v.Name
	case *ast.BasicLit:
		return v.Value
	case *ast.SelectorExpr:
		return sprintNode(v.X) + "." + v.Sel.Name
	}
	return "an expression"
}

// serviceConstants are the string constants of pkg/config whose value names a service
// (Gateway = "gateway", ...).
func serviceConstants(t testing.TB, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					if slices.Contains(services, v) {
						out[name.Name] = v
					}
				}
			}
		}
	}
	if len(out) != len(services) {
		t.Fatalf("pkg/config names %d of the %d services as constants: %v", len(out), len(services), out)
	}
	return out
}

// callers inverts the call graph: who calls svc.
func callers(graph map[string][]string, svc string) []string {
	var out []string
	for _, s := range services {
		if slices.Contains(graph[s], svc) {
			out = append(out, s)
		}
	}
	return out
}

// setting is one variable of the README's settings table and the services that read it.
type setting struct {
	Name    string
	Readers []string
}

var (
	backticked = regexp.MustCompile("`([A-Z0-9_]+)`")
	peerGroup  = regexp.MustCompile(`([a-z]+) \(([^)]*)\)`)
)

// readmeSettings parses the rows of the README's settings table that start with
// "| `LINKMESH_": the variables of the first column, read by the services of the second ("all",
// "same" as the row above, a list of services, or for the peer URLs "svc (peer, ...), ...").
func readmeSettings(t testing.TB) []setting {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []setting
	var previous []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `LINKMESH_") {
			continue
		}
		cols := strings.Split(line, "|")
		if len(cols) < 4 {
			t.Fatalf("README settings row with fewer than three columns: %q", line)
		}
		var names []string
		for _, m := range backticked.FindAllStringSubmatch(cols[1], -1) {
			names = append(names, m[1])
		}
		usedBy := strings.TrimSpace(cols[2])
		if groups := peerGroup.FindAllStringSubmatch(usedBy, -1); len(groups) > 0 {
			// The peer URLs: LINKMESH_<PEER>_URL is read by every service listing <peer>.
			readersOf := map[string][]string{}
			var all []string
			for _, g := range groups {
				reader := knownService(t, g[1], line)
				all = append(all, reader)
				for _, p := range splitList(g[2]) {
					peer := knownService(t, p, line)
					readersOf[peer] = append(readersOf[peer], reader)
				}
			}
			for _, n := range names {
				peer := strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(n, "LINKMESH_"), "_URL"))
				knownService(t, peer, line)
				out = append(out, setting{Name: n, Readers: readersOf[peer]})
			}
			previous = all
			continue
		}
		var readers []string
		switch usedBy {
		case "all":
			readers = slices.Clone(services)
		case "same":
			if previous == nil {
				t.Fatalf("README settings row says \"same\" with no row above: %q", line)
			}
			readers = previous
		default:
			for _, s := range splitList(usedBy) {
				readers = append(readers, knownService(t, s, line))
			}
		}
		for _, n := range names {
			out = append(out, setting{Name: n, Readers: readers})
		}
		previous = readers
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("found only %d LINKMESH_ variables in the README's settings table", len(out))
	}
	return out
}

// peerOf tells whether name is LINKMESH_<SERVICE>_URL, and of which service.
func peerOf(name string) (string, bool) {
	if !strings.HasPrefix(name, "LINKMESH_") || !strings.HasSuffix(name, "_URL") {
		return "", false
	}
	svc := strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(name, "LINKMESH_"), "_URL"))
	return svc, slices.Contains(services, svc)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func knownService(t testing.TB, s, line string) string {
	t.Helper()
	if !slices.Contains(services, s) {
		t.Fatalf("README settings table names %q, not a service, in %q", s, line)
	}
	return s
}

// readBy maps a service to the LINKMESH_ variables the README says it reads.
func readBy(settings []setting) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, s := range services {
		out[s] = map[string]bool{}
	}
	for _, st := range settings {
		for _, r := range st.Readers {
			out[r][st.Name] = true
		}
	}
	return out
}

func TestCallGraphFromCode(t *testing.T) {
	graph := callGraph(t)
	total := 0
	for svc, calls := range graph {
		if slices.Contains(calls, svc) {
			t.Errorf("%s calls itself", svc)
		}
		total += len(calls)
	}
	if total == 0 {
		t.Fatal("no env.Peer calls found in services/*/internal/app: the parser no longer matches the code")
	}
	t.Logf("call graph from the code: %v", graph)
	// Internal tokens are accepted only along the call graph identity knows: it must be the
	// code's, or a call the code makes would be refused (or one it never makes let through).
	for _, svc := range services {
		want := slices.Sorted(slices.Values(identity.Calls[svc]))
		if got := graph[svc]; !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Errorf("%s calls %v in the code, identity.Calls says %v", svc, got, want)
		}
	}
}

// The README's peer row says the same as the code.
func TestReadmePeersMatchCode(t *testing.T) {
	graph := callGraph(t)
	for _, st := range readmeSettings(t) {
		peer, ok := peerOf(st.Name)
		if !ok {
			continue
		}
		want := callers(graph, peer)
		got := slices.Clone(st.Readers)
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("README: %s read by %v; the code's env.Peer calls say %v", st.Name, got, want)
		}
	}
}

// deploy/redis/users.acl has a user for exactly the services that read LINKMESH_REDIS_URL (the
// README's settings table, which the chart's contract follows): a service using Redis without
// a user would run as whatever user its URL names, one with a user but no Redis holds a
// password for nothing.
func TestRedisUsersMatchReaders(t *testing.T) {
	rules, err := stack.RedisUserRules()
	if err != nil {
		t.Fatal(err)
	}
	users := slices.Collect(maps.Keys(rules))
	var want []string
	for _, svc := range services {
		if readBy(readmeSettings(t))[svc]["LINKMESH_REDIS_URL"] {
			want = append(want, svc)
		}
	}
	slices.Sort(users)
	slices.Sort(want)
	if !slices.Equal(users, want) {
		t.Errorf("users.acl has users for %v; the services reading LINKMESH_REDIS_URL are %v", users, want)
	}
}
