package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/stream"
)

// modulePrefix is where the import paths of the repository's own packages start.
const modulePrefix = "github.com/linkmesh/linkmesh/"

// collectionPassThrough are the .Collection( arguments that are not a name but hand on one
// their caller chose (file relative to the repository root, then the expression).
var collectionPassThrough = map[string]bool{
	"pkg/mongodb/mongodb.go: ix.Collection": true,
	// Migration steps dropping what a service no longer uses.
	"pkg/mongodb/migrate.go: n":          true,
	"pkg/mongodb/migrate.go: collection": true,
	// The analytics migration reads the collections of schema 0 once, then drops them.
	"services/analytics/internal/store/migrate.go: c.name":    true,
	"services/analytics/internal/store/migrate.go: foldState": true,
}

var (
	// redisKeyStart is how the Redis keys and channels of the code begin: a namespace, a
	// colon, then a name or a hash tag ("linkmesh:link:{", "quota:{"). Addresses such as
	// "quota:8085" and URL schemes do not match.
	redisKeyStart = regexp.MustCompile(`^[a-z]+:(\{|[a-z][a-z_-]*)[a-z0-9:_{}*|-]*$`)
	placeholder   = regexp.MustCompile(`<[^<>]*>`)
	backticked    = regexp.MustCompile("^`([^`]+)`$")
	separator     = regexp.MustCompile(`^\|(\s*:?-+:?\s*\|)+$`)
)

// goPackage is one directory of non-test Go source.
type goPackage struct {
	dir    string // relative to the repository root, slash-separated
	files  []*ast.File
	names  []string          // the files' base names, in the order of files
	consts map[string]string // string constants declared in the package
}

// TestScalingDocMatchesTheCode: every MongoDB collection a service opens is a row of
// deploy/SCALING.md's MongoDB table (under the service and database that own it) and every
// row names a collection some code opens; every Redis key or channel the code builds is a
// row of its Redis table and every row is a key the code builds.
func TestScalingDocMatchesTheCode(t *testing.T) {
	root := filepath.Join("..", "..")
	pkgs := parseSource(t, root, "services", "pkg")
	doc, err := os.ReadFile(filepath.Join(root, "deploy", "SCALING.md"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("mongodb", func(t *testing.T) {
		inCode := collectionsInCode(t, pkgs)
		rows := tableRows(section(t, string(doc), "## MongoDB"), 7)
		inDoc := map[string]bool{}
		for _, row := range rows {
			name := unquote(row[2])
			if name == "" {
				t.Errorf("MongoDB row without a backticked collection: %q", strings.Join(row, " | "))
				continue
			}
			if inDoc[name] {
				t.Errorf("collection %s has two rows", name)
			}
			inDoc[name] = true
			svc, ok := inCode[name]
			if !ok {
				continue // reported below
			}
			if svc != "" && (row[0] != svc || unquote(row[1]) != "linkmesh_"+svc) {
				t.Errorf("collection %s belongs to %s (database linkmesh_%s), the table says %s / %s", name, svc, svc, row[0], row[1])
			}
			if strings.TrimSpace(row[5]) == "" {
				t.Errorf("collection %s has no shard key recommendation", name)
			}
		}
		if len(inCode) < 10 || len(inDoc) < 10 {
			t.Fatalf("found %d collections in the code and %d in the table; the scan is broken", len(inCode), len(inDoc))
		}
		if missing := diff(setOf(inCode), inDoc); len(missing) > 0 {
			t.Errorf("collections the code opens but SCALING.md's MongoDB table lacks: %v", missing)
		}
		if stale := diff(inDoc, setOf(inCode)); len(stale) > 0 {
			t.Errorf("SCALING.md's MongoDB table names collections no code opens: %v", stale)
		}
	})

	t.Run("redis", func(t *testing.T) {
		prefixes := redisKeysInCode(pkgs)
		// API token scopes read like keys ("links:read") and are none.
		for _, scope := range auth.TokenScopes() {
			delete(prefixes, scope)
		}
		// The clicks stream and its dead-letter stream are named through constants of other
		// packages; take them from the code itself.
		exact := map[string]bool{analytics.Stream: true, stream.DeadStream(analytics.Stream): true,
			link.EventStream: true, stream.DeadStream(link.EventStream): true}
		if len(prefixes) < 6 {
			t.Fatalf("found %d Redis key patterns in the code (%v); the scan is broken", len(prefixes), sorted(prefixes))
		}
		var keys []string
		for _, row := range tableRows(section(t, string(doc), "## Redis"), 4) {
			key := unquote(row[0])
			if key == "" {
				t.Errorf("Redis row without a backticked key: %q", strings.Join(row, " | "))
				continue
			}
			keys = append(keys, placeholder.ReplaceAllString(key, "*"))
		}
		if len(keys) < 8 {
			t.Fatalf("found %d keys in SCALING.md's Redis table; the scan is broken", len(keys))
		}
		for p := range prefixes {
			if !anyKey(keys, func(k string) bool { return extends(k, p) }) {
				t.Errorf("the code builds Redis keys %q… but SCALING.md's Redis table has none", p)
			}
		}
		for name := range exact {
			if !anyKey(keys, func(k string) bool { return k == name }) {
				t.Errorf("the code uses the stream %q but SCALING.md's Redis table lacks it", name)
			}
		}
		for _, k := range keys {
			known := exact[k]
			for p := range prefixes {
				known = known || extends(k, p)
			}
			if !known {
				t.Errorf("SCALING.md's Redis table names %q, which no code builds", k)
			}
		}
	})

	t.Run("redis urls", func(t *testing.T) {
		kinds := redisURLKinds(t, pkgs)
		if len(kinds) < 3 {
			t.Fatalf("found the Redis URL kinds %v in pkg/redisdb's open; the scan is broken", kinds)
		}
		// The TLS variants (rediss://, rediss+cluster://, …) follow the same kinds.
		schemes := []string{"rediss://"}
		for _, kind := range kinds {
			if kind == "" {
				schemes = append(schemes, "redis://")
			} else {
				schemes = append(schemes, "redis+"+kind+"://")
			}
		}
		for _, scheme := range schemes {
			if !strings.Contains(string(doc), scheme) {
				t.Errorf("LINKMESH_REDIS_URL accepts %s (pkg/redisdb/redisdb.go, open) but SCALING.md does not say so", scheme)
			}
		}
	})
}

// parseSource parses the non-test Go files under root's dirs, by package directory.
func parseSource(t *testing.T, root string, dirs ...string) map[string]*goPackage {
	t.Helper()
	fset := token.NewFileSet()
	pkgs := map[string]*goPackage{}
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() && (e.Name() == "testdata" || strings.HasPrefix(e.Name(), ".")) {
				return filepath.SkipDir
			}
			if e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			p := pkgs[rel]
			if p == nil {
				p = &goPackage{dir: rel, consts: map[string]string{}}
				pkgs[rel] = p
			}
			p.files, p.names = append(p.files, f), append(p.names, e.Name())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pkgs {
		for _, f := range p.files {
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i < len(vs.Values) {
							if s, ok := stringLit(vs.Values[i]); ok {
								p.consts[name.Name] = s
							}
						}
					}
				}
			}
		}
	}
	if len(pkgs) < 20 {
		t.Fatalf("parsed %d packages under %v; the scan is broken", len(pkgs), dirs)
	}
	return pkgs
}

// collectionsInCode resolves the argument of every .Collection( call to a collection name
// (a string literal, a constant of the package or of an imported package of the
// repository) and returns each with the service that opens it ("" under pkg/). An argument
// it cannot resolve fails the test unless it is a known pass-through.
func collectionsInCode(t *testing.T, pkgs map[string]*goPackage) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range pkgs {
		svc := ""
		if parts := strings.Split(p.dir, "/"); parts[0] == "services" && len(parts) > 1 {
			svc = parts[1]
		}
		for i, f := range p.files {
			imports := importedDirs(f)
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 1 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Collection" {
					return true
				}
				name, ok := resolve(pkgs, p, imports, call.Args[0])
				if !ok {
					where := p.dir + "/" + p.names[i] + ": " + types.ExprString(call.Args[0])
					if !collectionPassThrough[where] {
						t.Errorf("cannot tell which collection %s opens; name it with a string constant", where)
					}
					return true
				}
				if prev, ok := out[name]; ok && prev != svc {
					t.Errorf("collection %s is opened by %q and by %q", name, prev, svc)
				}
				out[name] = svc
				return true
			})
		}
	}
	return out
}

// redisKeysInCode returns the patterns of the Redis keys and channels the code builds: a
// string that starts like a key, or a concatenation whose first part does, with every part
// that is not a constant as "*" ("linkmesh:link:{*}:resolved").
func redisKeysInCode(pkgs map[string]*goPackage) map[string]bool {
	out := map[string]bool{}
	for _, p := range pkgs {
		for _, f := range p.files {
			inConcat := map[ast.Node]bool{}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.BinaryExpr:
					if n.Op != token.ADD || inConcat[n] {
						return true
					}
					var b strings.Builder
					for _, part := range flatten(n, inConcat) {
						if s, ok := constString(p, part); ok {
							b.WriteString(s)
						} else {
							b.WriteString("*")
						}
					}
					if s := b.String(); redisKeyStart.MatchString(s) {
						out[s] = true
					}
				case *ast.BasicLit:
					if s, ok := stringLit(n); ok && !inConcat[n] && redisKeyStart.MatchString(s) {
						out[s] = true
					}
				}
				return true
			})
		}
	}
	// A pattern that another one extends is covered by it ("quota:{" by "quota:{*:*}").
	for a := range out {
		for b := range out {
			if a != b && strings.HasPrefix(b, a) {
				delete(out, a)
				break
			}
		}
	}
	return out
}

// redisURLKinds are the cases of the switch over the URL's kind in pkg/redisdb's open: ""
// for redis://, "cluster" for redis+cluster://, and so on.
func redisURLKinds(t *testing.T, pkgs map[string]*goPackage) []string {
	t.Helper()
	p := pkgs["pkg/redisdb"]
	if p == nil {
		t.Fatal("pkg/redisdb not found")
	}
	var kinds []string
	for _, f := range p.files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Name.Name != "open" || fn.Recv != nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				sw, ok := n.(*ast.SwitchStmt)
				if !ok || sw.Tag == nil || types.ExprString(sw.Tag) != "kind" {
					return true
				}
				for _, stmt := range sw.Body.List {
					for _, e := range stmt.(*ast.CaseClause).List {
						if s, ok := stringLit(e); ok {
							kinds = append(kinds, s)
						}
					}
				}
				return false
			})
		}
	}
	return kinds
}

// flatten lists the operands of a chain of + in order, marking the inner nodes as seen.
func flatten(e ast.Expr, seen map[ast.Node]bool) []ast.Expr {
	seen[e] = true
	if pe, ok := e.(*ast.ParenExpr); ok {
		return flatten(pe.X, seen)
	}
	if be, ok := e.(*ast.BinaryExpr); ok && be.Op == token.ADD {
		return append(flatten(be.X, seen), flatten(be.Y, seen)...)
	}
	return []ast.Expr{e}
}

// resolve is the string e names: a literal, a constant of p, or a constant of a package of
// the repository that the file imports (imports maps its names to directories).
func resolve(pkgs map[string]*goPackage, p *goPackage, imports map[string]string, e ast.Expr) (string, bool) {
	if s, ok := constString(p, e); ok {
		return s, true
	}
	if sel, ok := e.(*ast.SelectorExpr); ok {
		if x, ok := sel.X.(*ast.Ident); ok {
			if other := pkgs[imports[x.Name]]; other != nil {
				s, ok := other.consts[sel.Sel.Name]
				return s, ok
			}
		}
	}
	return "", false
}

func constString(p *goPackage, e ast.Expr) (string, bool) {
	if s, ok := stringLit(e); ok {
		return s, true
	}
	if id, ok := e.(*ast.Ident); ok {
		s, ok := p.consts[id.Name]
		return s, ok
	}
	return "", false
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// importedDirs maps the names f imports the repository's packages under to their
// directories ("link" → "pkg/clients/link").
func importedDirs(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		dir, ok := strings.CutPrefix(path, modulePrefix)
		if !ok {
			continue
		}
		name := dir[strings.LastIndex(dir, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out[name] = dir
	}
	return out
}

// section is the part of doc from the heading up to the next heading of its level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	start := strings.Index(doc, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("SCALING.md has no %q section", heading)
	}
	rest := doc[start+len(heading)+2:]
	if end := strings.Index(rest, "\n"+strings.SplitN(heading, " ", 2)[0]+" "); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// tableRows are the cells of the body rows of the markdown tables in s with at least
// columns cells (a header, the row above a |---| line, is not one); a cell may hold an escaped
// bar (\|).
func tableRows(s string, columns int) [][]string {
	lines := strings.Split(s, "\n")
	var rows [][]string
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") || separator.MatchString(line) {
			continue
		}
		if i+1 < len(lines) && separator.MatchString(strings.TrimSpace(lines[i+1])) {
			continue // a header
		}
		if cells := splitRow(line); len(cells) >= columns {
			rows = append(rows, cells)
		}
	}
	return rows
}

// splitRow is the cells of a table row, an escaped bar (\|) kept as a bar within its cell.
func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cell.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// unquote is the text of a cell that is one backticked name, or "".
func unquote(cell string) string {
	if m := backticked.FindStringSubmatch(strings.TrimSpace(cell)); m != nil {
		return m[1]
	}
	return ""
}

// extends reports whether the documented key k is one the code's pattern p builds: p
// itself, or p continued after a separator (":units" after "quota:{*:*}") or where p ends
// open (":" or "*"). ":versions" does not continue ":version".
func extends(k, p string) bool {
	if !strings.HasPrefix(k, p) {
		return false
	}
	return k == p || strings.HasSuffix(p, ":") || strings.HasSuffix(p, "*") || k[len(p)] == ':'
}

func anyKey(keys []string, f func(string) bool) bool {
	for _, k := range keys {
		if f(k) {
			return true
		}
	}
	return false
}

func setOf[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
